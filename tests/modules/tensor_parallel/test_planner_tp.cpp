// The planner under tensor parallelism (parallel.tp): the model's tp traffic, the model-state
// memory of one tp rank's slices, the links the tp and ZeRO collectives are priced on, the FLOPs
// per rank (the ZeRO paper's Table 2 and plan --largest per tp degree:
// tests/modules/largest_model/).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iterator>
#include <vector>

#include "common/test_paths.hpp"
#include "core/deck.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"
#include "plan/run_declarations.hpp"

namespace {

using zm_test::two_link_machine;

// Device memory small enough that tp's memory savings decide what fits.
constexpr double kQuarterGiB = 0.25 * (1 << 30);

zm::Deck tp_deck(int64_t layers, int64_t dim, int64_t heads, const char* precision, int64_t tp,
                 const char* recompute = "none", int64_t micro_batch = 2, int64_t grad_accum = 1) {
  return zm::parse_deck(
      fmt::format("[model]\nlayers = {}\ndim = {}\nheads = {}\nvocab = 50257\nseq_len = 128\n"
                  "recompute = \"{}\"\n[train]\nmicro_batch = {}\ngrad_accum = {}\n"
                  "precision = \"{}\"\n[parallel]\ntp = {}\n",
                  layers, dim, heads, recompute, micro_batch, grad_accum, precision, tp),
      "planner-tp-test", {}, zm::BuildChecks::Skip);
}

double ring_all_reduce(double bytes, double n) {
  return 2.0 * (n - 1) / n * bytes;
}
double ring_all_gather(double bytes, double n) {
  return (n - 1) / n * bytes;
}

// Per micro-batch: the embedding's all-reduce, 4 per block (6 when the blocks' forward is
// recomputed), the head's input-gradient all-reduce, each of B x T x C activations; and the
// cross-entropy's all-gather of 3 fp32 statistics per row from every tp rank.
TEST(PlannerTp, TensorParallelTrafficIsTheMegatronFormula) {
  for (const char* recompute : {"none", "blocks"})
    for (const char* precision : {"fp32", "bf16"})
      for (int64_t tp : {2, 4}) {
        SCOPED_TRACE(fmt::format("{} {} tp {}", recompute, precision, tp));
        const int64_t L = 3, C = 256, B = 2, T = 128, accum = 3;
        const zm::Deck deck = tp_deck(L, C, 8, precision, tp, recompute, B, accum);
        const double element = std::string(precision) == "bf16" ? 2.0 : 4.0;
        const double per_block = std::string(recompute) == "blocks" ? 6.0 : 4.0;
        const double activations = double(B * T * C) * element;
        const double expected =
            accum * ((per_block * L + 2) * ring_all_reduce(activations, double(tp)) +
                     ring_all_gather(3.0 * B * T * tp * 4.0, double(tp)));
        for (int stage = 0; stage <= 3; ++stage) {
          const zm::PlanPoint p = zm::plan_point(deck, stage, 4 * tp, nullptr);
          EXPECT_NEAR(p.bytes_at_level(zm::CommLevel::ModelParallel), expected, 1e-6 * expected);
        }
        // tp = 1 has no tp traffic.
        const zm::PlanPoint one = zm::plan_point(tp_deck(L, C, 8, precision, 1), 0, 4, nullptr);
        EXPECT_EQ(one.bytes_at_level(zm::CommLevel::ModelParallel), 0.0);
      }
}

// One tp rank holds 1/tp of the split tensors (wte, the attention and MLP weights, the
// column-parallel biases) and all of the replicated ones (wpe, LayerNorms, the row-parallel
// biases), each unit padded to 64 elements (zero/partition.hpp); the ZeRO stages then divide that
// rank's slices over the data-parallel ranks exactly as they divide the whole model without tp
// (the paper's closed forms with Psi' per tp rank).
int64_t padded64(int64_t elements) {
  return (elements + 63) / 64 * 64;
}

TEST(PlannerTp, ModelStatesAreTheSlicesOfOneTpRank) {
  const int64_t L = 4, C = 256, T = 128, Vp = 50304;
  const double split = double(Vp * C + L * (12 * C * C + 7 * C));
  const double replicated = double(T * C + L * 6 * C + 2 * C);
  for (int64_t tp : {1, 2, 4, 8}) {
    SCOPED_TRACE(fmt::format("tp {}", tp));
    const zm::Deck deck = tp_deck(L, C, 8, "bf16", tp);
    const zm::PlanPoint base = zm::plan_point(deck, 0, tp, nullptr);
    const int64_t local = padded64(Vp * C / tp + T * C) +
                          L * padded64((12 * C * C + 7 * C) / tp + 6 * C) + padded64(2 * C);
    EXPECT_DOUBLE_EQ(base.memory.model_states(), 16.0 * double(local));
    EXPECT_LT(double(local), (split / double(tp) + replicated) * 1.001);
    EXPECT_EQ(base.params, zm::plan_point(tp_deck(L, C, 8, "bf16", 1), 0, 1, nullptr).params);
    for (int64_t dp : {4, 64}) {
      for (int stage = 1; stage <= 3; ++stage) {
        const zm::PlanPoint p = zm::plan_point(deck, stage, dp * tp, nullptr);
        ASSERT_EQ(p.mesh.data_parallel(), dp);
        const double psi = double(p.padded_params), N = double(dp);
        const double expected[] = {0, 4 * psi + 12 * psi / N, 2 * psi + 14 * psi / N, 16 * psi / N};
        EXPECT_DOUBLE_EQ(p.memory.model_states(), expected[stage]) << "stage " << stage;
        EXPECT_LT(psi, (split / double(tp) + replicated) * 1.01);
        EXPECT_GE(psi, double(local));
      }
    }
  }
}

// Sums of the same terms in another order: equal to the last bits.
void expect_same_seconds(double planned, double expected) {
  EXPECT_NEAR(planned, expected, 1e-12 * expected);
}

// The tp group (tp consecutive ranks) is priced on the intra-node link when it fits a node; a
// shard group, strided by tp, spans group_ranks x tp ranks and is priced by that span. A ring
// across nodes with k of its ranks in each runs on k network cards at once.
TEST(PlannerTp, CollectivesArePricedOnTheLinkTheirGroupSpans) {
  const double intra = 400e9, inter = 25e9;
  const zm::Machine m = two_link_machine(8, intra, inter, kQuarterGiB);
  for (int stage = 0; stage <= 3; ++stage) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    // tp 2 x dp 8 on two nodes: tp in a node, the shard group (8 ranks strided by 2, 4 in each
    // node) across both.
    const zm::PlanPoint a = zm::plan_point(tp_deck(2, 128, 8, "bf16", 2), stage, 16, &m);
    const double tp_bytes = a.bytes_at_level(zm::CommLevel::ModelParallel);
    ASSERT_GT(tp_bytes, 0);
    // The step statistics' all-reduce spans the world: 8 ranks in each node.
    // (The loss and a sum of squares per dataset: the embedding, 2 blocks, the final norm.)
    const double stats16 = zm::ring_bytes(zm::CommOp::AllReduce, (1 + 2 + 2) * 4.0, 16);
    expect_same_seconds(a.comm_seconds,
                        tp_bytes / intra + stats16 / (8 * inter) +
                            (zm_test::bytes_per_step_total(a) - tp_bytes - stats16) / (4 * inter));
    // Shard groups of a node: dp 4 (8 ranks / tp 2) per group, span 8 = one node; their replicas
    // one rank in each node.
    zm::Deck node = tp_deck(2, 128, 8, "bf16", 2);
    node.zero.shard_size = zm::kShardSizeNode;
    const zm::PlanPoint b = zm::plan_point(node, stage, 16, &m);
    if (stage > 0) {
      ASSERT_EQ(b.mesh.group_ranks(), 4);
      const double in_node = b.bytes_at_level(zm::CommLevel::ModelParallel) +
                             b.bytes_at_level(zm::CommLevel::IntraGroup);
      const double across = b.bytes_at_level(zm::CommLevel::InterGroup) - stats16;
      expect_same_seconds(b.comm_seconds, in_node / intra + across / inter + stats16 / (8 * inter));
    }
    // tp 16 on 8-device nodes: the tp group itself spans two nodes, 8 ranks in each; the shard
    // group (2 ranks, 16 apart) one rank in each of two nodes; the world 8 in each of 4.
    const zm::PlanPoint c = zm::plan_point(tp_deck(2, 128, 16, "bf16", 16), stage, 32, &m);
    const double c_tp = c.bytes_at_level(zm::CommLevel::ModelParallel);
    const double stats32 = zm::ring_bytes(zm::CommOp::AllReduce, (1 + 2 + 2) * 4.0, 32);
    expect_same_seconds(c.comm_seconds,
                        (c_tp + stats32) / (8 * inter) +
                            (zm_test::bytes_per_step_total(c) - c_tp - stats32) / inter);
    // All in one node.
    const zm::PlanPoint d = zm::plan_point(tp_deck(2, 128, 8, "bf16", 4), stage, 8, &m);
    expect_same_seconds(d.comm_seconds, zm_test::bytes_per_step_total(d) / intra);
  }
}

// Each tp rank computes 1/tp of every matmul on the same tokens.
TEST(PlannerTp, FlopsPerRankAreDividedByTp) {
  const zm::Machine m = two_link_machine(8, 400e9, 25e9, kQuarterGiB);
  const zm::PlanPoint one = zm::plan_point(tp_deck(2, 128, 8, "fp32", 1), 0, 8, &m);
  for (int64_t tp : {2, 4, 8}) {
    const zm::PlanPoint p = zm::plan_point(tp_deck(2, 128, 8, "fp32", tp), 0, 8, &m);
    EXPECT_DOUBLE_EQ(p.flops_per_step * double(tp), one.flops_per_step) << "tp " << tp;
    EXPECT_DOUBLE_EQ(p.compute_seconds * double(tp), one.compute_seconds) << "tp " << tp;
  }
}

}  // namespace
