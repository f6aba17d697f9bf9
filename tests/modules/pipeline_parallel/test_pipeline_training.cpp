// Pipeline parallelism trains the model of a run without it. A pipeline of pp stages x dp
// data-parallel ranks runs against the same dp ranks without a pipeline, at ZeRO stages 0-3,
// with the same micro-batches on every data-parallel rank (pp 2, also with uneven stages, at 2
// ranks; pp 2 x dp 2, likewise, and pp 4 at 4), with a clip below every step's norm, one
// micro-batch per step and four: losses and parameters bit for bit. A pipeline changes no sum:
//   - each stage computes its blocks as the whole model does, over the micro-batches in order;
//   - the tied embedding's gradient is the head's part plus the embedding's. Where the step
//     reduces once (stages 0-1) both the whole model and the first stage hold the embedding's
//     part of every micro-batch and add it after the head's parts (model/held_token_grads.hpp);
//     where it reduces each micro-step (2-3) each micro-step's two parts are added. The two ends
//     sum theirs on each rank before the data-parallel reduction (the engine's hook);
//   - the norm that sets the clipping factor is summed per dataset of the whole model, so that
//     the ranks holding none of a dataset add zeros (trainer.cpp, sum_over_ranks).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "common/gathered_state.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "train/data.hpp"

namespace {

struct Trained {
  std::vector<double> losses;
  std::vector<float> params;  // the whole model's, on every rank
};

// Every parameter bit for bit.
void expect_equal(const std::vector<float>& run, const std::vector<float>& reference) {
  ASSERT_EQ(run.size(), reference.size());
  size_t differing = 0, at = run.size();
  for (size_t i = 0; i < run.size(); ++i)
    if (run[i] != reference[i]) {
      ++differing;
      at = std::min(at, i);
    }
  EXPECT_EQ(differing, 0u) << "first at " << at << " of " << run.size() << ": "
                           << (differing ? run[at] : 0.0f) << " vs "
                           << (differing ? reference[at] : 0.0f);
}

// The whole model's parameters from the parts of a pipeline (or a whole model): each rank places
// its units at their places in the whole model, the tied embedding from the first stage only,
// summed over the pipeline's ranks.
std::vector<float> whole_parameters(zm::Trainer& trainer) {
  const zm::ParamLayout& layout = trainer.layout();
  const std::vector<float> held = zm::testing::gathered_parameters(trainer.engine());
  std::vector<float> whole(static_cast<size_t>(layout.global_total()), 0.0f);
  for (int u = 0; u < layout.num_units(); ++u) {
    const zm::UnitInfo& unit = layout.unit(u);
    if (layout.holds_copy(u)) continue;
    for (int64_t i = 0; i < unit.size; ++i)
      whole[static_cast<size_t>(unit.global_offset + i)] =
          held[static_cast<size_t>(unit.offset + i)];
  }
  if (const zm::Communicator* pipeline = trainer.comms().along("pp"))
    MPI_Allreduce(MPI_IN_PLACE, whole.data(), static_cast<int>(whole.size()), MPI_FLOAT, MPI_SUM,
                  pipeline->mpi_comm());
  return whole;
}

Trained train(const zm::Deck& deck, zm::Communicator& comm) {
  const auto trainer = zm::make_trainer(deck, deck.zero.stage, comm);
  trainer->init_parameters();
  Trained run;
  for (int64_t s = 0; s < deck.train.steps; ++s) run.losses.push_back(trainer->step(s).loss);
  run.params = whole_parameters(*trainer);
  return run;
}

// (ZeRO stage, micro-batches per step).
class Pipeline : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(Pipeline, TrainsTheModelOfTheSameDataParallelRanks) {
  const auto [stage, micro_batches] = GetParam();
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = world->size();
  // Equal stages, uneven ones (parallel.pp_layers: 3 blocks and 1, the last with the head), and
  // recomputation (the micro-batches in flight share the block being recomputed: GPT::scratch).
  const std::tuple<int, const char*, bool> pipelines[] = {
      {2, "", false}, {2, "3,1", false}, {2, "", true}, {4, "", false}};
  for (const auto& [pp, blocks, recompute] : pipelines) {
    if (N % pp != 0) continue;
    const int dp = N / pp;
    SCOPED_TRACE(fmt::format("pp {} x dp {}{}{}, stage {}, {} micro-batches", pp, dp,
                             *blocks ? fmt::format(" (blocks {})", blocks) : "",
                             recompute ? ", recompute" : "", stage, micro_batches));
    // The reference on dp ranks (every group of dp consecutive ranks runs it: they read the
    // micro-batches of data-parallel ranks 0..dp-1, as the pipeline's stages do), then the
    // pipeline, with `settings`.
    auto both = [&](std::vector<std::string> settings) {
      if (recompute) settings.push_back("model.recompute=\"blocks\"");
      const zm::Deck plain = zm::testing::test_deck(stage, 2, micro_batches, settings);
      settings.push_back(fmt::format("parallel.pp={}", pp));
      if (*blocks) settings.push_back(fmt::format("parallel.pp_layers=\"{}\"", blocks));
      const zm::Deck piped = zm::testing::test_deck(stage, 2, micro_batches, settings);
      MPI_Comm group;
      MPI_Comm_split(MPI_COMM_WORLD, world->rank() / dp, world->rank(), &group);
      Trained reference;
      {
        auto ranks = zm::make_communicator("mpi", group, zm::testing::watchdog());
        reference = train(plain, *ranks);
      }
      MPI_Comm_free(&group);
      return std::pair<Trained, Trained>{reference, train(piped, *world)};
    };
    // A clip below every step's norm: each step is scaled by a factor the norm's last bits set.
    const auto [reference, run] = both({"model.layers=4", "train.steps=4", "train.grad_clip=0.01"});
    EXPECT_EQ(run.losses, reference.losses);
    expect_equal(run.params, reference.params);
  }
}

INSTANTIATE_TEST_SUITE_P(StagesAndMicroBatches, Pipeline,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values(1, 4)));

// An evaluation (Trainer::forward_only_loss, the module evaluation's) through the stages: each
// stage's forward-only pass, its output sent on, the loss the last stage's. After 2 training
// steps of one micro-batch, against the same data-parallel ranks without a pipeline, bit for bit.
// ZeRO stages 0 and 3 (which gathers each unit in the forward-only pass).
TEST(PipelineEvaluation, GivesTheLossOfTheModelWithoutAPipeline) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = world->size();
  for (const int stage : {0, 3})
    for (const int pp : {2, 4}) {
      if (N % pp != 0) continue;
      const int dp = N / pp;
      SCOPED_TRACE(fmt::format("pp {} x dp {}, stage {}", pp, dp, stage));
      const std::vector<std::string> settings = {"model.layers=4", "train.steps=2",
                                                 "train.grad_clip=0.01"};
      auto evaluate = [&](const zm::Deck& deck, zm::Communicator& comm) {
        const auto trainer = zm::make_trainer(deck, stage, comm);
        trainer->init_parameters();
        for (int64_t s = 0; s < deck.train.steps; ++s) trainer->step(s);
        return trainer->forward_only_loss(*zm::make_data_source(deck), 3);
      };
      const zm::Deck plain = zm::testing::test_deck(stage, 2, 1, settings);
      std::vector<std::string> piped_settings = settings;
      piped_settings.push_back(fmt::format("parallel.pp={}", pp));
      const zm::Deck piped = zm::testing::test_deck(stage, 2, 1, piped_settings);
      MPI_Comm group;
      MPI_Comm_split(MPI_COMM_WORLD, world->rank() / dp, world->rank(), &group);
      double reference = 0;
      {
        auto ranks = zm::make_communicator("mpi", group, zm::testing::watchdog());
        reference = evaluate(plain, *ranks);
      }
      MPI_Comm_free(&group);
      const double loss = evaluate(piped, *world);
      EXPECT_TRUE(std::isfinite(loss));
      EXPECT_EQ(loss, reference);
    }
}

// pp 2 x tp 2 on 4 ranks against tp 2 on 2 (each pair of consecutive ranks runs it, reading the
// same micro-batches): each stage's tensor-parallel pair computes its blocks' slices as the tp
// pair does, and the losses agree bit for bit, with one micro-batch and several.
class PipelineWithTensorParallelism : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(PipelineWithTensorParallelism, TrainsTheModelOfTheTensorParallelRanks) {
  const auto [stage, micro_batches] = GetParam();
  if (!zm::testing::key_built("parallel.tp")) GTEST_SKIP() << "built without tensor_parallel";
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "pp 2 x tp 2 runs on 4 ranks";
  std::vector<std::string> settings = {"model.layers=4", "train.steps=4", "parallel.tp=2",
                                       "train.grad_clip=0.01"};
  const zm::Deck plain = zm::testing::test_deck(stage, 2, micro_batches, settings);
  settings.push_back("parallel.pp=2");
  const zm::Deck piped = zm::testing::test_deck(stage, 2, micro_batches, settings);
  auto losses = [](const zm::Deck& deck, zm::Communicator& comm) {
    const auto trainer = zm::make_trainer(deck, deck.zero.stage, comm);
    trainer->init_parameters();
    std::vector<double> out;
    for (int64_t s = 0; s < deck.train.steps; ++s) out.push_back(trainer->step(s).loss);
    return out;
  };
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, world->rank() / 2, world->rank(), &pair);
  std::vector<double> reference;
  {
    auto ranks = zm::make_communicator("mpi", pair, zm::testing::watchdog());
    reference = losses(plain, *ranks);
  }
  MPI_Comm_free(&pair);
  EXPECT_EQ(losses(piped, *world), reference);
}

INSTANTIATE_TEST_SUITE_P(StagesAndMicroBatches, PipelineWithTensorParallelism,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values(1, 4)));

}  // namespace
