#include "train/model_step.hpp"

#include "core/error.hpp"

namespace zm {

namespace {

template <typename Real>
class GPTStep : public ModelStep {
 public:
  GPTStep(const ParamLayout& layout, ZeroEngineT<Real>& engine, int64_t B, int64_t T)
      : engine_(&engine), model_(layout, B, T) {}
  Batch upload(const int* inputs, const int* targets) override {
    return model_.upload(inputs, targets);
  }
  double forward(const Batch& batch) override { return model_.forward(*engine_, batch); }
  void backward(const Batch& batch) override { model_.backward(*engine_, batch); }

 private:
  ZeroEngineT<Real>* engine_;
  GPT<Real> model_;
};

template <typename Real>
std::unique_ptr<ModelStep> make_typed(const ParamLayout& layout, ZeroEngine& engine,
                                      const Deck& deck) {
  auto* typed = dynamic_cast<ZeroEngineT<Real>*>(&engine);
  ZM_ASSERT(typed != nullptr, "the engine's compute type is not the deck's ({})",
            deck.train.precision);
  return std::make_unique<GPTStep<Real>>(layout, *typed, deck.train.micro_batch,
                                         deck.model.seq_len);
}

}  // namespace

std::unique_ptr<ModelStep> make_model_step(const ParamLayout& layout, ZeroEngine& engine,
                                           const Deck& deck) {
  if (compute_element_bytes(deck) == 4) return make_typed<float>(layout, engine, deck);
#if ZEROMINI_HAVE_BF16
  return make_typed<bf16>(layout, engine, deck);
#else
  fail("train.precision = \"{}\": this build has no bfloat16 type (it needs Kokkos >= 4)",
       deck.train.precision);
#endif
}

std::vector<BufferSpec> model_step_buffer_plan(const Deck& deck) {
  return gpt_buffer_plan(deck.model, deck.train.micro_batch, deck.model.seq_len,
                         compute_element_bytes(deck));
}

}  // namespace zm
