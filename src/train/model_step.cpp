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

}  // namespace

std::unique_ptr<ModelStep> make_model_step(const ParamLayout& layout, ZeroEngine& engine,
                                           const Deck& deck) {
  // The model computes in the engine's type (ZeroEngine::create chose it from the deck).
  const int64_t B = deck.train.micro_batch, T = deck.model.seq_len;
  if (auto* fp32 = dynamic_cast<ZeroEngineT<float>*>(&engine))
    return std::make_unique<GPTStep<float>>(layout, *fp32, B, T);
#if ZEROMINI_HAVE_BF16
  if (auto* mixed = dynamic_cast<ZeroEngineT<bf16>*>(&engine))
    return std::make_unique<GPTStep<bf16>>(layout, *mixed, B, T);
#endif
  ZM_ASSERT(false, "no model for the engine of train.precision = \"{}\"",
            precision_name(deck.train.precision));
  return nullptr;
}

}  // namespace zm
