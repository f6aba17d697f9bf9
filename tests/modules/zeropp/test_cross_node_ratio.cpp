// ZeRO++'s claim in bytes that leave nodes: a stage-3 step with qwZ, hpZ (groups of a node) and
// qgZ moves a fraction of plain stage 3's across nodes. Measured by the run's own counters
// (modules/zeropp/cross_node.hpp) at 4 ranks on two faked nodes of 2, in bf16, and printed.
//
// Per padded parameter, with k = 2 ranks per node and two nodes, each collective over all ranks
// sends (nodes - 1) / nodes / k = 1/4 of its buffer out of the node. Plain stage 3: the forward
// and backward all-gathers and the gradient reduce-scatter, 3 x 2 bytes. With hpZ the gathers
// stay in the node; what crosses is qgZ's exchange of the requantized group sums (0.5 bytes of
// int4 codes) and hpZ's gather of the updated sub-shards, in int8 under bf16 (qwZ: 1 byte). So
// the ratio is (0.5 + 1) / 6 = 0.25, ZeRO++'s 0.75M / 3M, up to the quantization scales and the
// step statistics (within 1%).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "cross_node_steps.hpp"

namespace {

#if ZEROMINI_HAVE_BF16

// Bytes per step that left this rank's node, over every collective, from one trainer step.
double cross_node_bytes_per_step(const zm::Deck& deck, zm::Communicator& comm) {
  zm::testing::CrossNodeSteps steps(1);
  zm::testing::train(deck, comm, steps.around_step());
  double bytes = 0;
  for (const zm::CommOpStats& op : steps.left.at(0).ops) bytes += op.bytes;
  return bytes;
}

TEST(ZeroPlusPlusCrossNodeRatio, QwzHpzQgzInt4AgainstPlainStage3) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (comm->size() != 4) GTEST_SKIP() << "4 ranks on two nodes of 2";
  // A wider model than the other tests' so that the scales and statistics stay under 1%.
  const std::vector<std::string> common = {"train.steps=1", "train.precision=bf16",
                                           "zero.ranks_per_node=2", "model.dim=64"};
  std::vector<std::string> zeropp = common;
  zeropp.insert(zeropp.end(), {"zero.quantize_weights=int8", "zero.secondary_shard_size=2",
                               "zero.quantize_grads=int4"});
  const double plain = cross_node_bytes_per_step(zm::testing::test_deck(3, 2, 1, common), *comm);
  const double combined = cross_node_bytes_per_step(zm::testing::test_deck(3, 2, 1, zeropp), *comm);
  const double ratio = combined / plain;
  // Bytes per parameter out of the node: int4 gradient codes and the int8 sub-shard gather,
  // against plain stage 3's two bf16 gathers and one bf16 reduce-scatter.
  const double int4_grads = 0.5, subshard_gather = 1.0, plain_collectives = 3 * 2.0;
  const double expected = (int4_grads + subshard_gather) / plain_collectives;
  if (comm->rank() == 0)
    fmt::print(
        "cross-node bytes per rank per step, 4 ranks on 2 nodes, stage 3, bf16: plain {:.0f}, "
        "qwZ+hpZ+qgZ(int4) {:.0f}, ratio {:.4f} (formula {:.4f})\n",
        plain, combined, ratio, expected);
  EXPECT_GT(plain, 0.0);
  EXPECT_NEAR(ratio, expected, 0.01 * expected);
}

#else

TEST(ZeroPlusPlusCrossNodeRatio, NeedsABuildWithBf16) {
  GTEST_SKIP() << "this build's Kokkos has no bfloat16 type (the OpenMP configuration runs these)";
}

#endif  // ZEROMINI_HAVE_BF16

}  // namespace
