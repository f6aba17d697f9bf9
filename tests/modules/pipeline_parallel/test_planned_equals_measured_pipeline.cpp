// What `zeromini plan` prices for each pipeline stage is what the stage's rank allocates and sends,
// alone and beside tensor parallelism
// (common/planned_equals_measured.hpp): memory by category, held and at the peak of the steps;
// bytes by level and collective, the transfers between stages and the tied embedding's sum among
// them; and the calls of each per step. The activations a stage holds at its peak are those of
// min(pp - s, m) micro-batches (1F1B's bound, one_f_one_b.hpp), measured by the run's ledger.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <tuple>

#include "common/planned_equals_measured.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "model/gpt.hpp"
#include "plan/planner.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"

namespace {

// The activations of one model of `part` (one micro-batch in flight).
double one_model_activations(const zm::Deck& deck, int stage, int part) {
  const zm::ParamLayout layout = zm::run_layout(deck, stage, part);
  double bytes = 0;
  for (const zm::BufferSpec& spec :
       zm::gpt_buffers(layout, zm::attention_kernels(zm::run_extensions(deck, stage)),
                       deck.train.micro_batch, deck.model.seq_len, 4))
    if (spec.category == zm::MemCategory::Activations) bytes += spec.bytes();
  return bytes;
}

// (ZeRO stage, micro-batches per step).
class PlannedEqualsMeasuredPipeline : public ::testing::TestWithParam<std::tuple<int, int64_t>> {};

TEST_P(PlannedEqualsMeasuredPipeline, EachStagesMemoryTransfersAndCalls) {
  const auto [stage, micro_batches] = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  // pp 2 (equal stages, and uneven: parallel.pp_layers) and 4, and at 4 ranks pp 2 x tp 2 (where
  // the module tensor_parallel is built).
  const bool tp = N == 4 && zm::testing::key_built("parallel.tp");
  const std::tuple<int, int, const char*> layouts[] = {
      {2, 1, ""}, {2, 1, "1,3"}, {4, 1, ""}, {2, tp ? 2 : 0, ""}};
  for (const auto& [pp, tp_size, blocks] : layouts) {
    if (tp_size == 0 || N % (pp * tp_size) != 0) continue;
    SCOPED_TRACE(fmt::format("pp {} x tp {} x dp {}{}, stage {}, {} micro-batches", pp, tp_size,
                             N / pp / tp_size, *blocks ? fmt::format(" (blocks {})", blocks) : "",
                             stage, micro_batches));
    std::vector<std::string> settings = {"model.layers=4", "train.steps=2",
                                         fmt::format("parallel.pp={}", pp)};
    if (tp_size > 1) settings.push_back(fmt::format("parallel.tp={}", tp_size));
    if (*blocks) settings.push_back(fmt::format("parallel.pp_layers=\"{}\"", blocks));
    const zm::Deck deck = zm::testing::test_deck(stage, 2, micro_batches, settings);
    const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, stage, N, nullptr);
    const int part = mesh.mesh.coordinate(comm->rank(), "pp");

    // The peak's activations: one model's per micro-batch in flight, at most pp - part.
    const int in_flight = std::min<int>(pp - part, static_cast<int>(micro_batches));
    const zm::MemoryPlan planned = zm::plan_memory(deck, stage, mesh, part);
    EXPECT_EQ(planned.bytes[static_cast<size_t>(zm::MemCategory::Activations)],
              in_flight * one_model_activations(deck, stage, part));
    // The models beyond the first share its scratch (GPT::scratch): each adds to the workspace of
    // one micro-batch in flight only its residual's gradient, B x T x C (fp32; the last stage,
    // which would keep its head input's gradient too, holds one).
    zm::Deck one_in_flight = deck;
    one_in_flight.train.grad_accum = 1;
    const double own_gradients =
        static_cast<double>(deck.train.micro_batch * deck.model.seq_len * deck.model.dim) * 4;
    EXPECT_EQ(planned.bytes[static_cast<size_t>(zm::MemCategory::Workspace)],
              zm::plan_memory(one_in_flight, stage, mesh, part)
                      .bytes[static_cast<size_t>(zm::MemCategory::Workspace)] +
                  (in_flight - 1) * own_gradients);

    // The transfers: per boundary the stage has, an activation and a gradient per micro-batch
    // (broadcasts on the boundary's two ranks); at the ends, the tied embedding's sum before each
    // reduction of its gradients (once a step at stages 0-1, every micro-batch at 2-3), and at
    // stages 0-1 with several micro-batches its token rows sent from the first stage to the last.
    const int boundaries = (part > 0) + (part + 1 < pp);
    const bool tied = part == 0 || part == pp - 1;
    const uint64_t tied_sums = !tied ? 0 : stage >= 2 ? micro_batches : 1;
    const uint64_t tied_sends = tied && stage <= 1 && micro_batches > 1 ? 1 : 0;
    zm::CommStats before;
    zm::testing::check_planned_equals_measured(
        deck, stage, *comm, [&](zm::Trainer& trainer, bool after) {
          const zm::CommStats now = trainer.comms().stats(zm::CommLevel::ModelParallel);
          if (!after) {
            before = now;
            return;
          }
          const zm::CommStats step = now - before;
          EXPECT_EQ(step.ops[static_cast<int>(zm::CommOp::Broadcast)].calls,
                    static_cast<uint64_t>(2 * boundaries * micro_batches) + tied_sends);
          // (tp's own all-reduces share the level.)
          if (tp_size == 1) {
            EXPECT_EQ(step.ops[static_cast<int>(zm::CommOp::AllReduce)].calls, tied_sums);
          }
        });
  }
}

INSTANTIATE_TEST_SUITE_P(StagesAndMicroBatches, PlannedEqualsMeasuredPipeline,
                         ::testing::Combine(::testing::Values(0, 1, 2, 3),
                                            ::testing::Values(1, 4)));

// The plan prices the stage whose rank needs the most memory, prices the bubble, and finds the
// deepest model of a pipeline in steps of one block per stage.
TEST(PlanPipeline, PricesTheFullestStage) {
  const zm::Deck deck = zm::testing::test_deck(1, 2, 4, {"model.layers=4", "parallel.pp=4"});
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, 1, 4, nullptr);
  double most = 0;
  int fullest = 0;
  for (int part = 0; part < 4; ++part) {
    const double bytes = zm::plan_memory(deck, 1, mesh, part).total();
    if (bytes > most) std::tie(most, fullest) = std::tuple(bytes, part);
  }
  EXPECT_EQ(zm::plan_part(deck, 1, mesh), fullest);
  EXPECT_EQ(zm::plan_memory(deck, 1, mesh).total(), most);
  const zm::PlanPoint point = zm::plan_point(deck, 1, 4, nullptr);
  EXPECT_EQ(point.part, fullest);
  EXPECT_EQ(point.memory.total(), most);

  // The bubble: at least 1F1B's for equal stages (the last stage's head makes them unequal), and
  // less with more micro-batches.
  const double bubble = point.figures.at("pipeline_bubble");
  EXPECT_GE(bubble, 3.0 / (4 + 3));
  EXPECT_LT(bubble, 1.0);
  zm::Deck longer = deck;
  longer.train.grad_accum = 16;
  EXPECT_LT(zm::plan_point(longer, 1, 4, nullptr).figures.at("pipeline_bubble"), bubble);
  // At stage 2 the last stage waits, at each micro-batch, for the tied embedding's part from the
  // first stage: a larger bubble with several micro-batches, 1F1B's with one.
  EXPECT_GT(zm::plan_point(longer, 2, 4, nullptr).figures.at("pipeline_bubble"),
            zm::plan_point(longer, 1, 4, nullptr).figures.at("pipeline_bubble"));
  zm::Deck single = deck;
  single.train.grad_accum = 1;
  EXPECT_EQ(zm::plan_point(single, 2, 4, nullptr).figures.at("pipeline_bubble"),
            zm::plan_point(single, 1, 4, nullptr).figures.at("pipeline_bubble"));

  // The pipeline's bytes (the table's "pipe GB") are the stage's transfers and tied sum: all of
  // its level's without tensor parallelism, fewer than the level's beside tp's collectives.
  EXPECT_EQ(point.figures.at("pipeline_bytes"), point.bytes_at_level(zm::CommLevel::ModelParallel));
  if (zm::testing::key_built("parallel.tp")) {
    zm::Deck with_tp = deck;
    with_tp.set_value("parallel.tp", int64_t{2});
    const zm::PlanPoint both = zm::plan_point(with_tp, 1, 8, nullptr);
    EXPECT_GT(both.figures.at("pipeline_bytes"), 0);
    EXPECT_LT(both.figures.at("pipeline_bytes"), both.bytes_at_level(zm::CommLevel::ModelParallel));
  }

  zm::MemoryLimits limits;
  zm::Deck deep = deck;
  deep.model.layers = 12;
  limits.device_bytes = zm::plan_memory(deep, 1, mesh).total();
  EXPECT_EQ(zm::largest_fitting_layers(deck, 1, mesh, limits), 12);
  limits.device_bytes -= 1;
  EXPECT_EQ(zm::largest_fitting_layers(deck, 1, mesh, limits), 8);
}

}  // namespace
