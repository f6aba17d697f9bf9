// qgZ in two hops by node (modules/zeropp/quantized_gradients.hpp), at 4 ranks on two faked nodes
// of 2 (zero.ranks_per_node = 2), plain stages 2 and 3 (one shard group of 4 spanning both nodes):
//   - the run splits the group by node, trains within 1% of the unquantized loss in int8 at
//     every step (fp32, and bf16 where the build has it), and the ranks keep one model;
//   - the bytes its all-to-alls send out of the node are (N-1)/N * S / k per unit (S a rank's
//     quantized contribution, N = 2 nodes, k = 2 ranks on each), strictly less than the flat
//     exchange's (G-k)/G * S;
// and at any rank count on one node (no zero.ranks_per_node) the group is not split: the one flat
// all-to-all per unit, its bytes (G-1)/G * S, nothing out of the node, the loss as before.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "cross_node_steps.hpp"
#include "model/layout.hpp"
#include "modules/zeropp/options.hpp"
#include "modules/zeropp/quantized_gradients.hpp"
#include "plan/run_options.hpp"

namespace {

using zm::testing::kGlobalBatch;
using zm::testing::largest_difference_from_rank0;
using zm::testing::with;

using zm::testing::kInt8LossTolerance;

const std::vector<std::string> kInt8 = {"zero.quantize_grads=int8", "zero.quantize_block=64"};

// S per unit: a rank's quantized contribution, one segment of its shard per rank of the group
// (one shard group of `group` ranks at `stage`).
std::vector<double> contribution_bytes(const zm::Deck& deck, int stage, int group) {
  const zm::ParamLayout layout(deck.model);
  const zm::Partition partition(layout, group, 1);
  (void)stage;
  const zm::ZeroppOptions options = zm::zeropp_options(deck);
  std::vector<double> out;
  for (int u = 0; u < partition.num_units(); ++u)
    out.push_back(static_cast<double>(group) *
                  static_cast<double>(zm::grad_segment(options, partition.unit(u).shard).bytes()));
  return out;
}

double largest_loss_gap(const zm::testing::TrainedRun& run, const zm::testing::TrainedRun& plain) {
  double worst = 0;
  for (size_t s = 0; s < plain.losses.size(); ++s)
    worst = std::max(worst, std::fabs(run.losses[s] / plain.losses[s] - 1.0));
  return worst;
}

double all_to_all(const zm::CommStats& stats) {
  return stats.ops[static_cast<size_t>(zm::CommOp::AllToAll)].bytes;
}

class QgzNodeHops : public ::testing::TestWithParam<int> {
 protected:
  // The two-hop run against the unquantized one, and its all-to-all bytes, in one precision.
  void check_two_hops(int stage, const std::string& precision);
  std::unique_ptr<zm::Communicator> comm =
      zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
};

TEST_P(QgzNodeHops, TwoNodesOfTwoTrackTheUnquantizedLossAndSendLessAcross) {
  const int stage = GetParam(), G = comm->size();
  if (G != 4) GTEST_SKIP() << "4 ranks on two nodes of 2";
  std::vector<std::string> precisions = {"train.precision=fp32"};
  if (ZEROMINI_HAVE_BF16) precisions.push_back("train.precision=bf16");
  for (const std::string& precision : precisions) {
    SCOPED_TRACE(precision);
    check_two_hops(stage, precision);
  }
}

void QgzNodeHops::check_two_hops(int stage, const std::string& precision) {
  const int G = comm->size(), nodes = 2, k = 2;
  const std::vector<std::string> two_nodes = {"zero.ranks_per_node=2", precision};
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / G, 1, with(two_nodes, kInt8));
  {
    const auto trainer = zm::make_trainer(deck, stage, *comm);
    const zm::Communicator* within = trainer->comms().added(zm::kShardWithinNode);
    const zm::Communicator* across = trainer->comms().added(zm::kShardAcrossNodes);
    ASSERT_NE(within, nullptr) << "the group was not split by node";
    ASSERT_NE(across, nullptr);
    EXPECT_EQ(within->size(), k);
    EXPECT_EQ(across->size(), nodes);
    EXPECT_EQ(across->rank(), comm->rank() / k);
  }
  const auto plain =
      zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / G, 1, two_nodes), *comm);
  zm::testing::CrossNodeSteps left(deck.train.steps);
  const auto run = zm::testing::train(deck, *comm, left.around_step());
  const double gap = largest_loss_gap(run, plain);
  EXPECT_LE(gap, kInt8LossTolerance);
  EXPECT_NE(run.params, plain.params) << "the gradients were not quantized";
  EXPECT_LT(run.losses.back(), run.losses.front());
  EXPECT_EQ(largest_difference_from_rank0(run.params), 0.0f) << "the ranks' models differ";

  double two_hops = 0, flat = 0, within = 0;
  for (const double S : contribution_bytes(deck, stage, G)) {
    two_hops += (nodes - 1.0) / nodes * S / k;
    flat += (G - k) / static_cast<double>(G) * S;
    // Every byte sent: the hop within the node moves S among k ranks, the hop across N of the
    // requantized segments among N ranks.
    within += (k - 1.0) / k * S + (nodes - 1.0) / nodes * (nodes * S / G);
  }
  ASSERT_EQ(left.left.size(), run.records.size());
  for (size_t s = 0; s < run.records.size(); ++s) {
    EXPECT_DOUBLE_EQ(all_to_all(left.left[s]), two_hops);
    EXPECT_DOUBLE_EQ(all_to_all(run.records[s].comm), within);
  }
  EXPECT_LT(two_hops, flat);
  if (comm->rank() == 0)
    std::printf(
        "[ info ] stage %d, int8, %s, 4 ranks on 2 nodes: loss gap %.3g; all-to-all bytes out of "
        "the node per rank and step %.0f in two hops, %.0f flat (%.3f)\n",
        stage, precision.c_str(), gap, two_hops, flat, two_hops / flat);
}

TEST_P(QgzNodeHops, OneNodeKeepsTheFlatExchange) {
  const int stage = GetParam(), G = comm->size();
  if (kGlobalBatch % G != 0) GTEST_SKIP() << "global batch not divisible by " << G;
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / G, 2, kInt8);
  {
    const auto trainer = zm::make_trainer(deck, stage, *comm);
    EXPECT_EQ(trainer->comms().added(zm::kShardWithinNode), nullptr);
    EXPECT_EQ(trainer->comms().added(zm::kShardAcrossNodes), nullptr);
  }
  const auto plain = zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / G, 2), *comm);
  zm::testing::CrossNodeSteps left(deck.train.steps);
  const auto run = zm::testing::train(deck, *comm, left.around_step());
  EXPECT_LE(largest_loss_gap(run, plain), kInt8LossTolerance);
  double flat = 0;  // one all-to-all per unit and micro-step (stages 2 and 3 reduce each)
  for (const double S : contribution_bytes(deck, stage, G)) flat += 2 * (G - 1.0) / G * S;
  for (const auto& record : run.records) EXPECT_DOUBLE_EQ(all_to_all(record.comm), flat);
  for (const zm::CommStats& step : left.left) EXPECT_EQ(all_to_all(step), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Stages, QgzNodeHops, ::testing::Values(2, 3));

}  // namespace
