// What `zeromini plan` predicts for a rank count is what a run at that rank count allocates and
// sends, byte for byte, for every stage, in fp32 and (where the build has bf16) mixed precision,
// also with the fp32 gradient reduction (train.reduce_precision), with and without hybrid sharding
// (zero.shard_size: traffic within and across shard groups compared separately). The modules
// compare theirs in tests/modules/<name>/ with the same check (common/planned_equals_measured.hpp),
// the bytes that leave nodes among them (tests/modules/zeropp/).
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "common/planned_equals_measured.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"

namespace {

using zm::testing::check_planned_equals_measured;

class PlannedEqualsMeasured : public ::testing::TestWithParam<int> {};

TEST_P(PlannedEqualsMeasured, MemoryAndTraffic) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  std::vector<std::vector<std::string>> precisions = {{"train.precision=fp32"}};
  if (ZEROMINI_HAVE_BF16) precisions.push_back({"train.precision=bf16"});
  if (ZEROMINI_HAVE_BF16)
    precisions.push_back({"train.precision=bf16", "train.reduce_precision=fp32"});
  // Shard groups of 2 ranks (as a number, and as faked nodes of 2) where the ranks make two or
  // more groups.
  std::vector<std::vector<std::string>> shardings = {{"zero.shard_size=0"}};
  if (N >= 4 && N % 2 == 0) {
    shardings.push_back({"zero.shard_size=2"});
    shardings.push_back({"zero.shard_size=node", "zero.ranks_per_node=2"});
  }
  for (const auto& sharding : shardings)
    for (const auto& precision : precisions)
      for (const int64_t grad_accum : {1, 2})
        for (const char* recompute : {"none", "blocks"}) {
          SCOPED_TRACE(fmt::format("stage {}, {} ranks, {}, grad_accum {}, {}, recompute {}", stage,
                                   N, fmt::join(sharding, " "), grad_accum,
                                   fmt::join(precision, " "), recompute));
          std::vector<std::string> overrides = {"train.steps=2",
                                                "model.recompute=" + std::string(recompute)};
          overrides.insert(overrides.end(), precision.begin(), precision.end());
          overrides.insert(overrides.end(), sharding.begin(), sharding.end());
          check_planned_equals_measured(zm::testing::test_deck(stage, 3, grad_accum, overrides),
                                        stage, *comm);
        }
}

// The LM head in chunks (model.classifier_chunk): the logits buffer of one chunk, the last one
// short (48 tokens in chunks of 7), or one chunk of all the tokens; against the whole logits at
// once (0).
TEST_P(PlannedEqualsMeasured, MemoryAndTrafficWithClassifierChunks) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  for (const int64_t chunk : {0, 7, 1000}) {
    SCOPED_TRACE(fmt::format("stage {}, {} ranks, classifier_chunk {}", stage, N, chunk));
    const std::vector<std::string> overrides = {"train.steps=2",
                                                fmt::format("model.classifier_chunk={}", chunk)};
    check_planned_equals_measured(zm::testing::test_deck(stage, 3, 2, overrides), stage, *comm);
  }
}

// Memory-centric tiling (model.tiles): the units are tiles, so are the gathered slots and the
// gradient buckets, and a recomputed tiled block gathers its tiles a third time.
TEST_P(PlannedEqualsMeasured, MemoryAndTrafficWithTiles) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  for (const char* recompute : {"none", "blocks"}) {
    SCOPED_TRACE(fmt::format("stage {}, {} ranks, recompute {}", stage, comm->size(), recompute));
    const std::vector<std::string> overrides = {"train.steps=2", "model.tiles=4",
                                                "model.recompute=" + std::string(recompute)};
    check_planned_equals_measured(zm::testing::test_deck(stage, 3, 2, overrides), stage, *comm);
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, PlannedEqualsMeasured, ::testing::Values(0, 1, 2, 3));

}  // namespace
