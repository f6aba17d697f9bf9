// Activation recomputation (model.recompute = "blocks"): backward recomputes each block's forward
// from the block's saved input with the same kernels, so training is bitwise the same as without
// it, at every stage and rank count, with gradient accumulation too; and the activation memory
// the model allocates is the planner's and below what it keeps without recomputation. A home that
// keeps the blocks' outputs elsewhere (model/checkpoint_home.hpp) changes nothing either, its
// copies made as late as a copy stream may make them.
#include <gtest/gtest.h>

#include <cstring>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "model/gpt.hpp"
#include "plan/run_extensions.hpp"

namespace {

using zm::testing::kGlobalBatch;

class Recompute : public ::testing::TestWithParam<int> {};

TEST_P(Recompute, BlocksTrainBitwiseAsWithout) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  for (int64_t accum : {1, 2}) {
    const auto kept = zm::testing::train(
        zm::testing::test_deck(stage, kGlobalBatch / N / accum, accum, {"model.recompute=none"}),
        *comm);
    const auto recomputed = zm::testing::train(
        zm::testing::test_deck(stage, kGlobalBatch / N / accum, accum, {"model.recompute=blocks"}),
        *comm);
    EXPECT_EQ(kept.losses, recomputed.losses) << "grad_accum " << accum;
    EXPECT_EQ(kept.params, recomputed.params) << "grad_accum " << accum;
    for (size_t s = 0; s < kept.records.size(); ++s)
      EXPECT_EQ(kept.records[s].grad_norm, recomputed.records[s].grad_norm) << "step " << s;
  }
}

// A home whose copies happen only when waited for: the latest a copy stream may run them. A model
// that reads a copy's destination before waiting, or overwrites its source before, trains another
// model. Host memory holds the checkpoints.
class DeferredHome final : public zm::CheckpointHome {
 public:
  zm::MemCategory category() const override { return zm::MemCategory::Host; }
  void copy(bool to_home, void* to, const void* from, size_t bytes, int) override {
    queued_.push_back({to, from, bytes});
    ++(to_home ? out : back);
  }
  void wait() override {
    Kokkos::fence();
    for (const Queued& q : queued_) std::memcpy(q.to, q.from, q.bytes);
    queued_.clear();
  }
  static inline int64_t out = 0, back = 0;  // copies made, each way

 private:
  struct Queued {
    void* to;
    const void* from;
    size_t bytes;
  };
  std::vector<Queued> queued_;
};
bool use_deferred_home = false;

TEST_P(Recompute, CheckpointsKeptElsewhereTrainBitwiseAsOnTheDevice) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  static const bool added = [] {
    zm::add_run_configurer([](const zm::Deck&, int, zm::RunExtensions& extensions) {
      if (use_deferred_home) extensions.checkpoints = std::make_shared<DeferredHome>();
    });
    return true;
  }();
  (void)added;
  const int64_t layers = 5;
  for (int64_t accum : {1, 2}) {
    const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / N / accum, accum,
                                                 {"model.recompute=blocks", "model.layers=5"});
    const auto on_device = zm::testing::train(deck, *comm);
    use_deferred_home = true;
    DeferredHome::out = DeferredHome::back = 0;
    const auto elsewhere = zm::testing::train(deck, *comm);
    use_deferred_home = false;
    EXPECT_EQ(on_device.losses, elsewhere.losses) << "grad_accum " << accum;
    EXPECT_EQ(on_device.params, elsewhere.params) << "grad_accum " << accum;
    // All but the last two blocks' outputs, out and back, every micro-step.
    const auto copies = static_cast<int64_t>(elsewhere.records.size()) * accum * (layers - 2);
    EXPECT_EQ(DeferredHome::out, copies) << "grad_accum " << accum;
    EXPECT_EQ(DeferredHome::back, copies) << "grad_accum " << accum;
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, Recompute, ::testing::Values(0, 1, 2, 3));

double activation_bytes(const std::vector<zm::BufferSpec>& plan) {
  double bytes = 0;
  for (const zm::BufferSpec& spec : plan)
    if (spec.category == zm::MemCategory::Activations) bytes += static_cast<double>(spec.bytes());
  return bytes;
}

// What the model allocates is what the planner prices (the same table), and recomputation keeps
// one block's activations instead of every block's: for L blocks, the saving is (L - 1) blocks'
// activations less L block outputs.
TEST(RecomputeMemory, AllocatedEqualsPlannedAndIsSmaller) {
  for (const char* mode : {"none", "blocks"}) {
    const zm::Deck deck =
        zm::testing::test_deck(0, 4, 1, {"model.layers=4", std::string("model.recompute=") + mode});
    zm::MemoryLedger ledger;
    const auto before = ledger.figures();
    const zm::ParamLayout layout(deck.model);
    {
      zm::GPT<float> model(layout, deck.train.micro_batch, deck.model.seq_len,
                           zm::RunContext{nullptr, nullptr, &ledger});
      const auto during = ledger.figures();
      const int activations = static_cast<int>(zm::MemCategory::Activations);
      const double allocated = static_cast<double>(during.current[activations]) -
                               static_cast<double>(before.current[activations]);
      EXPECT_EQ(allocated, activation_bytes(zm::GPT<float>::declared_buffers(
                               layout, deck.train.micro_batch, deck.model.seq_len)))
          << mode;
    }
  }
  const zm::Deck none = zm::testing::test_deck(0, 4, 1, {"model.layers=4"});
  zm::Deck blocks = none;
  blocks.model.recompute = "blocks";
  const double kept =
      activation_bytes(zm::GPT<float>::declared_buffers(zm::ParamLayout(none.model), 4, 16));
  const double recomputed =
      activation_bytes(zm::GPT<float>::declared_buffers(zm::ParamLayout(blocks.model), 4, 16));
  EXPECT_LT(recomputed, kept);
  // A home holds all but the last two block outputs in its category; the device the rest.
  const auto planned = zm::GPT<float>::declared_buffers(
      zm::ParamLayout(blocks.model), 4, 16, zm::plain_attention(), zm::MemCategory::Host);
  double home = 0;
  for (const zm::BufferSpec& spec : planned)
    if (spec.category == zm::MemCategory::Host) home += spec.bytes();
  const double output = 4.0 * 16 * static_cast<double>(blocks.model.dim) * 4;
  EXPECT_EQ(home, static_cast<double>(blocks.model.layers - 2) * output);
  EXPECT_EQ(activation_bytes(planned), recomputed - home);
}

}  // namespace
