// model.classifier_chunk: the LM head made chunk by chunk (logits, loss and their gradient in one
// pass per chunk, the wte gradient summed over the chunks) against the whole logits at once (0).
// One micro-step's loss and every gradient at T = 64, 1024 and 1021, in chunks that do not
// divide the tokens; training at every stage with gradient accumulation, and beside tensor
// parallelism, against the reference path and against one rank; and the memory: one chunk of
// logits, allocated as planned.
//
// Tolerances. The chunked path computes each row's loss and dlogits bitwise as the reference
// does; only the wte gradient's sum over the tokens is split into chunk-sized GEMMs added in
// order, and each chunk's rows of d(lnf) are their own GEMM: fp32 results change in their last
// bits. Hence 1e-5 relative on the loss and on each gradient tensor (its largest difference
// against its largest magnitude), and the equivalence tests' bounds on training
// (common/equivalence.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "model/gpt.hpp"
#include "train/data.hpp"
#include "train/trainer_typed.hpp"

namespace {

using zm::testing::category_bytes;
using zm::testing::expect_same_training;
using zm::testing::kGlobalBatch;

struct Gradients {
  double loss = 0;
  std::vector<float> grads;  // logical layout order
};

// One micro-step of B sequences of T tokens at one rank, stage 0: its loss and gradients.
Gradients one_micro_step(int64_t T, int64_t chunk) {
  const int64_t B = 2;
  const zm::Deck deck = zm::testing::test_deck(
      0, B, 1,
      {fmt::format("model.seq_len={}", T), fmt::format("model.classifier_chunk={}", chunk)});
  auto self = zm::make_communicator("mpi", MPI_COMM_SELF, zm::testing::watchdog());
  zm::TrainerT<float> trainer(deck, 0, *self);
  trainer.init_parameters();
  auto data = zm::make_data_source(deck);
  std::vector<int> inputs(static_cast<size_t>(B * T)), targets(inputs.size());
  data->sequences(zm::first_sequence(0, 0, 1, 1, 0, B), B, inputs.data(), targets.data());
  trainer.engine().begin_micro_step(0, 1);
  const zm::Batch batch = trainer.model().upload(inputs.data(), targets.data());
  Gradients out;
  out.loss = trainer.model().forward(trainer.typed_engine(), batch);
  trainer.model().backward(trainer.typed_engine(), batch);
  trainer.engine().finish_backward();
  const zm::ParamLayout& layout = trainer.layout();
  out.grads.resize(static_cast<size_t>(layout.total()));
  for (int u = 0; u < layout.num_units(); ++u) {
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    Kokkos::View<const float*, zm::MemSpace, Unmanaged> src(trainer.typed_engine().grad_at(u, 0),
                                                            layout.unit(u).size);
    Kokkos::View<float*, zm::HostSpace, Unmanaged> dst(out.grads.data() + layout.unit(u).offset,
                                                       layout.unit(u).size);
    Kokkos::deep_copy(dst, src);
  }
  return out;
}

class ClassifierGradients : public ::testing::TestWithParam<int64_t> {};

TEST_P(ClassifierGradients, ChunkedMatchesTheWholeLogits) {
  const int64_t T = GetParam();
  const int64_t chunk = T == 64 ? 48 : 300;  // 2T tokens: chunks of 48 or 300, the last short
  ASSERT_NE((2 * T) % chunk, 0);
  const Gradients reference = one_micro_step(T, 0), chunked = one_micro_step(T, chunk);
  EXPECT_NEAR(chunked.loss, reference.loss, 1e-5 * reference.loss);
  const zm::ModelConfig model = zm::testing::test_deck(0, 1).model;
  const zm::ParamLayout layout(model);
  for (const auto& t : layout.tensors()) {
    const int64_t begin = layout.unit(t.unit).offset + t.offset;
    double diff = 0, scale = 0;
    for (int64_t i = begin; i < begin + t.size; ++i) {
      const auto k = static_cast<size_t>(i);
      diff = std::max(diff, std::fabs(double(chunked.grads[k]) - reference.grads[k]));
      scale = std::max(scale, std::fabs(double(reference.grads[k])));
    }
    EXPECT_GT(scale, 0.0) << t.name;
    EXPECT_LE(diff, 1e-5 * scale) << t.name << " at T = " << T;
  }
}

INSTANTIATE_TEST_SUITE_P(SeqLens, ClassifierGradients, ::testing::Values(64, 1024, 1021));

class ClassifierPaths : public ::testing::TestWithParam<int> {};

// 16-token sequences, two micro-steps: chunks of 37 tokens leave a short last chunk at every rank
// count (192, 96 or 48 tokens per micro-batch).
TEST_P(ClassifierPaths, ChunkedTrainsAsTheReferenceAtEveryStage) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible";
  const int64_t micro = kGlobalBatch / N;
  const auto whole = zm::testing::train(
      zm::testing::test_deck(stage, micro, 2, {"model.classifier_chunk=0"}), *comm);
  const auto chunked = zm::testing::train(
      zm::testing::test_deck(stage, micro, 2, {"model.classifier_chunk=37"}), *comm);
  {
    SCOPED_TRACE("against the whole logits, same stage and ranks");
    expect_same_training(chunked, whole);
  }
  SCOPED_TRACE("against one rank, stage 0");
  expect_same_training(chunked, zm::testing::reference(2));
}

INSTANTIATE_TEST_SUITE_P(Stages, ClassifierPaths, ::testing::Values(0, 1, 2, 3));

// The logits buffer holds one chunk: the activations drop by (N - chunk) x Vp, and the model
// allocates what the planner's table says.
TEST(ClassifierMemory, LogitsOfOneChunk) {
  const int64_t B = 3, T = 16, N = B * T, chunk = 7;
  const zm::Deck whole = zm::testing::test_deck(0, B, 1, {"model.classifier_chunk=0"});
  const zm::Deck chunked = zm::testing::test_deck(0, B, 1, {"model.classifier_chunk=7"});
  const auto planned = zm::GPT<float>::declared_buffers(zm::ParamLayout(chunked.model), B, T);
  zm::MemoryLedger ledger;
  const zm::ParamLayout layout(chunked.model);
  {
    zm::GPT<float> model(layout, B, T, zm::RunContext{nullptr, nullptr, &ledger});
    const auto during = ledger.figures();
    for (zm::MemCategory c : {zm::MemCategory::Activations, zm::MemCategory::Workspace})
      EXPECT_EQ(static_cast<double>(during.current[static_cast<int>(c)]),
                category_bytes(planned, c));
  }
  const auto kept = zm::GPT<float>::declared_buffers(zm::ParamLayout(whole.model), B, T);
  EXPECT_EQ(category_bytes(kept, zm::MemCategory::Activations) -
                category_bytes(planned, zm::MemCategory::Activations),
            4.0 * (N - chunk) * chunked.model.padded_vocab());
  EXPECT_EQ(category_bytes(kept, zm::MemCategory::Workspace),
            category_bytes(planned, zm::MemCategory::Workspace));
  // A chunk of at least the micro-batch's tokens is all of them.
  const zm::Deck large = zm::testing::test_deck(0, B, 1, {"model.classifier_chunk=1000"});
  EXPECT_EQ(category_bytes(zm::GPT<float>::declared_buffers(zm::ParamLayout(large.model), B, T),
                           zm::MemCategory::Activations),
            category_bytes(kept, zm::MemCategory::Activations));
}

}  // namespace
