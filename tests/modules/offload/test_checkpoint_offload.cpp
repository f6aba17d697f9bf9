// Checkpoints under ZeRO-Offload: the master weights, Adam moments and (stage 3) parameter shard
// that live in host memory are written and read as every other placement's are (the checkpoint
// holds each unit whole, in logical order), so an offloaded run resumes exactly, and a checkpoint
// moves between runs with and without offload, at another rank count or stage.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "common/checkpoint_test_util.hpp"
#include "common/test_watchdog.hpp"
#include "io/checkpoint.hpp"

namespace {

using zm::testing::deck_for;
using zm::testing::full_state;
using zm::testing::run_steps;
using zm::testing::shared_dir;
using zm::testing::State;

const std::vector<std::string> kOffloadOptimizer = {"zero.offload_optimizer=host"};
const std::vector<std::string> kOffloadAll = {"zero.offload_optimizer=host",
                                              "zero.offload_params=host"};

// An offloaded run stopped after step 4 and resumed gives the uninterrupted run, bit for bit, at
// every offloading stage and in fp32 and bf16.
TEST(CheckpointOffload, OffloadedResumeGivesTheUninterruptedRunBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  std::vector<std::string> precisions = {"fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("bf16");
  const struct {
    int stage;
    const std::vector<std::string>* offload;
  } cases[] = {
      {1, &kOffloadOptimizer}, {2, &kOffloadOptimizer}, {3, &kOffloadOptimizer}, {3, &kOffloadAll}};
  for (const std::string& precision : precisions)
    for (const auto& [stage, offload] : cases) {
      SCOPED_TRACE(fmt::format("stage {}, {} ranks, {}, {}", stage, comm->size(), precision,
                               fmt::join(*offload, " ")));
      const std::string dir = shared_dir(MPI_COMM_WORLD, fmt::format("offload-resume{}", stage));
      zm::testing::expect_exact_resume(deck_for(stage, 2, dir, 8, precision, *offload), stage,
                                       *comm);
    }
}

// Written at the world's size at `stage` with `written_with`; read back on fewer ranks, at other
// stages, with offload turned off, on, or on for the parameters too.
void check_moves_from(int stage, const std::vector<std::string>& written_with,
                      zm::Communicator& world) {
  const std::string dir = shared_dir(MPI_COMM_WORLD, fmt::format("offload-moves{}", stage));
  const int64_t global_batch = 12;
  const int N = world.size();
  const zm::Deck written_deck = deck_for(stage, global_batch / N, dir, 8, "fp32", written_with);
  const auto writer = zm::make_trainer(written_deck, stage, world);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
  const State written = full_state(writer->engine());
  const std::vector<double> continued = run_steps(*writer, 4, 8);  // the uninterrupted run

  const struct {
    int ranks, stage;
    const std::vector<std::string>* offload;
  } targets[] = {{N, 1, nullptr},
                 {N - 1 > 0 ? N - 1 : 1, 2, &kOffloadOptimizer},
                 {N / 2 > 0 ? N / 2 : 1, 3, &kOffloadAll},
                 {N, 3, nullptr}};
  for (const auto& target : targets) {
    if (global_batch % target.ranks != 0) continue;
    const std::vector<std::string> none;
    const std::vector<std::string>& extra = target.offload ? *target.offload : none;
    SCOPED_TRACE(
        fmt::format("{} ranks, stage {}, {}", target.ranks, target.stage,
                    extra.empty() ? "no offload" : fmt::format("{}", fmt::join(extra, " "))));
    zm::testing::expect_resumes_on(target.ranks, target.stage, dir, global_batch, extra, path,
                                   written, continued);
  }
}

TEST(CheckpointOffload, OffloadedCheckpointResumesWithoutOffloadAndElsewhere) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  check_moves_from(3, kOffloadAll, *world);
}

TEST(CheckpointOffload, DeviceCheckpointResumesWithOffload) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  check_moves_from(2, {}, *world);
}

}  // namespace
