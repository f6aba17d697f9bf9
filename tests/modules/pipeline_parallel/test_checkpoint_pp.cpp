// Checkpoints across pipeline layouts. A checkpoint holds the whole model (each unit's dataset
// whole, written by the stage that holds it; the tied embedding by the first), so one written at
// pp 2 x dp 2 loads at pp 1 x dp 4, pp 4 and pp 2 x tp 2 at every ZeRO stage, and one written
// with uneven stages loads at other splits. 4 ranks.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "modules/tensor_parallel/tp_checkpoint_util.hpp"

namespace {

using zm::testing::deck_for;
using zm::testing::run_steps;
using zm::testing::shared_dir;
using zm::testing::State;
using zm::testing::whole_state;

// Sequences per optimizer step in every layout (micro-batch x micro-batches x data-parallel ranks)
// and the model's depth, which 4 stages divide.
constexpr int64_t kGlobalBatch = 4;
const char* const kDepth = "model.layers=4";

struct Layout {
  int pp = 1, tp = 1;
  int64_t micro_batches = 1;
  const char* blocks = "";  // parallel.pp_layers ("": equal stages)
  std::string name() const {
    return fmt::format("pp {} x tp {} x dp {}{}, {} micro-batches", pp, tp, 4 / (pp * tp),
                       *blocks ? fmt::format(" (blocks {})", blocks) : "", micro_batches);
  }
};

zm::Deck layout_deck(int stage, const Layout& layout, const std::string& dir) {
  const int dp = 4 / (layout.pp * layout.tp);
  std::vector<std::string> extra = {kDepth, fmt::format("parallel.pp={}", layout.pp),
                                    fmt::format("train.grad_accum={}", layout.micro_batches)};
  if (layout.tp > 1) extra.push_back(fmt::format("parallel.tp={}", layout.tp));
  if (*layout.blocks) extra.push_back(fmt::format("parallel.pp_layers=\"{}\"", layout.blocks));
  return deck_for(stage, kGlobalBatch / dp / layout.micro_batches, dir, 8, "fp32", extra);
}

// Steps 0-4 in `layout` and a checkpoint after them; its path, and the whole state it holds.
std::string write_in(const Layout& layout, int stage, const std::string& dir,
                     zm::Communicator& world, State& written) {
  const auto writer = zm::make_trainer(layout_deck(stage, layout, dir), stage, world);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
  written = whole_state(writer->engine());
  return path;
}

// The checkpoint read in `layout`: the whole state bit for bit as written, and steps 4-8's losses
// near the unsharded run's (the same data and state; only the order of the sums differs: the
// data-parallel reduction, the tied embedding's two parts, tp's all-reduces; test_checkpoint_tp
// argues the 1e-5 bound).
void expect_read_in(const Layout& layout, int stage, const std::string& dir,
                    zm::Communicator& world, const std::string& path, const State& written,
                    const std::vector<double>& unsharded) {
  SCOPED_TRACE("read at " + layout.name());
  const auto reader = zm::make_trainer(layout_deck(stage, layout, dir), stage, world);
  EXPECT_EQ(zm::load_checkpoint(reader->engine(), reader->deck(), path), 4);
  EXPECT_TRUE(whole_state(reader->engine()) == written) << "loaded state differs bitwise";
  const std::vector<double> losses = run_steps(*reader, 4, 8);
  for (size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(losses[i], unsharded[4 + i], 1e-5 * unsharded[4 + i]) << "step " << 4 + i;
}

// 4 ranks, a directory they share, and the unsharded run's losses (made once for the tests).
class CheckpointPp : public ::testing::Test {
 protected:
  void SetUp() override {
    world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
    if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
    dir = shared_dir(MPI_COMM_WORLD, "pp-checkpoints");
    static const std::vector<double> losses =
        zm::testing::reference_run(dir, kGlobalBatch, {kDepth}).losses;
    unsharded = losses;
  }
  std::unique_ptr<zm::Communicator> world;
  std::string dir;
  std::vector<double> unsharded;
};

TEST_F(CheckpointPp, LoadsAtOtherPipelineDataAndTensorDegreesAtEveryStage) {
  std::vector<Layout> readers = {{1, 1, 1, ""}, {4, 1, 4, ""}};
  if (zm::testing::key_built("parallel.tp")) readers.push_back({2, 2, 2, ""});
  for (int stage = 0; stage <= 3; ++stage) {
    const Layout writer{2, 1, 2, ""};
    SCOPED_TRACE(fmt::format("written at {}, ZeRO stage {}", writer.name(), stage));
    State written;
    const std::string path =
        write_in(writer, stage, fmt::format("{}/pp2-stage{}", dir, stage), *world, written);
    for (const Layout& reader : readers)
      expect_read_in(reader, stage, dir + "/reader", *world, path, written, unsharded);
  }
}

// Uneven stages (parallel.pp_layers): written at pp 2 with blocks "3,1" (stage 3), read at "1,3"
// and at 4 equal stages (stage 1), and written at pp 4 read at "3,1" (stage 2).
TEST_F(CheckpointPp, UnevenStagesLoadAtOtherSplits) {
  struct Case {
    Layout writer;
    int write_stage;
    std::vector<Layout> readers;
    int read_stage;
  };
  const Case cases[] = {{{2, 1, 2, "3,1"}, 3, {{2, 1, 1, "1,3"}, {4, 1, 4, ""}}, 1},
                        {{4, 1, 2, ""}, 0, {{2, 1, 2, "3,1"}}, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("written at {}, ZeRO stage {}", c.writer.name(), c.write_stage));
    State written;
    const std::string path =
        write_in(c.writer, c.write_stage, dir + "/writer-" + c.writer.blocks, *world, written);
    for (const Layout& reader : c.readers)
      expect_read_in(reader, c.read_stage, dir + "/reader", *world, path, written, unsharded);
  }
}

// At the same layout a pipeline resumes exactly: steps 0-8 in one run against 0-4, a checkpoint
// and 4-8 in a fresh trainer, losses and each rank's state bit for bit (pp 2 x dp 2, 2
// micro-batches; the tied embedding's copy on the last stage loaded from the first's dataset).
TEST_F(CheckpointPp, ResumesExactlyAtTheSameLayout) {
  for (int stage : {1, 3}) {
    SCOPED_TRACE(fmt::format("ZeRO stage {}", stage));
    zm::testing::expect_exact_resume(
        layout_deck(stage, {2, 1, 2, ""}, fmt::format("{}/stage{}", dir, stage)), stage, *world);
  }
}

}  // namespace
