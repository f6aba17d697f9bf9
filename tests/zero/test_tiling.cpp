// Memory-centric tiling (model.tiles = T): every linear layer of a block computed in T tiles of its
// output, each tile's weights their own unit (model/layout.hpp), reached one at a time (stage 3
// gathers one tile, not one block). What it must keep:
// - training: the same model as whole blocks. The output and weight gradient of a tile are the
//   whole layer's sums, bitwise where the BLAS sums in the same order for any width
//   (test_gemm.cpp, Gemm.TilesOfALayerAreTheWholeLayer), and each input gradient is a sum over the
//   tiles' partial sums, a reordering of the same sum. Differences of that kind, rounding in the
//   last bits that then propagates, are those between rank counts (the reduction's order): the
//   losses agree within test_zero_equivalence's tolerance (common/equivalence.hpp argues it).
//   The parameters get 1e-4 (1% of one update of lr 1e-2) instead of 1e-5: a reordered sum moves
//   an input gradient by up to 2 gamma_OC times the magnitudes summed into it, not times its
//   value, and it reaches every weight gradient upstream, block after block. Where a weight's
//   gradient cancels to a small value, its relative change is large, and AdamW, which divides
//   each update by the gradient's own RMS, turns it into a visible fraction of lr (measured: at
//   most 1.4e-5 after 5 steps, at 4 ranks with grad_accum 2; 1e-4 leaves room for other BLAS);
// - recomputation: a tiled block's recomputed forward (its tiles acquired again) is bitwise the
//   forward, as for whole blocks;
// - checkpoints: one dataset per block whatever the tiling: written tiled, read whole, and back.
#include <gtest/gtest.h>

#include "common/checkpoint_test_util.hpp"
#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "io/checkpoint.hpp"

namespace {

using zm::testing::kGlobalBatch;

class Tiling : public ::testing::TestWithParam<int> {};

TEST_P(Tiling, TrainsTheModelOfWholeBlocks) {
  const int stage = GetParam();
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  for (int64_t accum : {1, 2}) {
    const int64_t micro_batch = kGlobalBatch / N / accum;
    const auto whole = zm::testing::train(zm::testing::test_deck(stage, micro_batch, accum), *comm);
    for (int64_t tiles : {2, 4}) {
      SCOPED_TRACE(
          fmt::format("stage {}, {} ranks, grad_accum {}, {} tiles", stage, N, accum, tiles));
      const std::string tiled_key = fmt::format("model.tiles={}", tiles);
      const auto tiled =
          zm::testing::train(zm::testing::test_deck(stage, micro_batch, accum, {tiled_key}), *comm);
      zm::testing::expect_same_training(tiled, whole, 1e-4);
      const auto recomputed = zm::testing::train(
          zm::testing::test_deck(stage, micro_batch, accum, {tiled_key, "model.recompute=blocks"}),
          *comm);
      EXPECT_EQ(recomputed.losses, tiled.losses);
      EXPECT_EQ(recomputed.params, tiled.params);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, Tiling, ::testing::Values(0, 1, 2, 3));

// A tiled run resumes exactly from its checkpoint, which loads into a run of whole blocks as the
// same state, and a checkpoint of whole blocks loads into a tiled run likewise.
TEST(TilingCheckpoint, LoadsWithTilesOnOrOff) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  for (int stage : {1, 3}) {
    for (int64_t written_tiles : {4, 1}) {
      SCOPED_TRACE(fmt::format("stage {}, {} ranks, written with {} tiles", stage, comm->size(),
                               written_tiles));
      const std::string dir =
          zm::testing::shared_dir(MPI_COMM_WORLD, fmt::format("tiles{}ck{}", written_tiles, stage));
      const auto deck_with = [&](int64_t tiles) {
        return zm::testing::deck_for(stage, 2, dir, 8, "fp32",
                                     {fmt::format("model.tiles={}", tiles)});
      };
      const std::string path =
          zm::testing::expect_exact_resume(deck_with(written_tiles), stage, *comm);
      const auto state_read_with = [&](int64_t tiles) {
        const auto trainer = zm::make_trainer(deck_with(tiles), stage, *comm);
        EXPECT_EQ(zm::load_checkpoint(trainer->engine(), trainer->deck(), path), 4);
        return zm::testing::full_state(trainer->engine());
      };
      EXPECT_TRUE(state_read_with(written_tiles == 1 ? 4 : 1) == state_read_with(written_tiles));
    }
  }
}

}  // namespace
