// qgZ's exchange (src/modules/zeropp/quantized_gradients.hpp) on known data, against the plain
// reduce-scatter and all-reduce computed exactly on the host:
//   - within the group, every element of the rank's shard is the group's sum within the int8
//     (int4) bound: the sum over the group's ranks of scale / 2 of the block holding it in that
//     rank's segment (scale = max |x| / 127, or / 7);
//   - across the groups (4 ranks: groups of 2, with and without hpZ), the world's sum within that
//     bound plus the requantization's, and every replica holds the same bits;
//   - in two hops by node (4 ranks on two nodes of 2), the group's sum within the bound of the
//     first quantization plus the requantization of each node's sum;
//   - with error feedback, two exchanges of the same contribution sum to twice the exact sum
//     within one quantization's bound (the first one's error is made up by the second), where
//     without it the error doubles.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "core/stage_spec.hpp"
#include "kernels/counter_rng.hpp"
#include "model/layout.hpp"
#include "modules/zeropp/cross_node.hpp"
#include "modules/zeropp/quantized_gradients.hpp"
#include "plan/run_options.hpp"
#include "zero/schedule.hpp"

namespace {

using zm::testing::DeviceVec;

// Rank r's contribution, element i: values of every size, so that blocks have different scales.
float contribution(int r, int64_t i) {
  const uint64_t h = zm::kernels::splitmix64(static_cast<uint64_t>(r) * 1000003u + i);
  const float unit = static_cast<float>(h % 20001) / 10000.0f - 1.0f;  // [-1, 1]
  return unit * static_cast<float>(1 + (i / 48) % 7);
}

struct Setup {
  zm::Deck deck;
  zm::ZeroMesh mesh;
  std::unique_ptr<zm::MeshComms> comms;
  std::unique_ptr<zm::ParamLayout> layout;
  std::unique_ptr<zm::Partition> partition;
  std::unique_ptr<zm::PlannedAllocator> alloc;
  std::unique_ptr<zm::QuantizedGradients> qgz;
  zm::StepSchedule schedule;  // whose entries the exchanges post
  const zm::ScheduledCollective& in_group(int unit) const {
    return schedule.of(unit, zm::ScheduleRole::GroupReduction);
  }
  const zm::ScheduledCollective& across(int unit) const {
    return schedule.of(unit, zm::ScheduleRole::ReplicaReduction);
  }
};

// `group` ranks per shard group (the world when it is every rank), hpZ or not; with
// `ranks_per_node` > 0 on nodes of that many ranks, the group split by node.
std::unique_ptr<Setup> setup(zm::Communicator& world, int group, bool hpz, const char* bits,
                             bool feedback, int ranks_per_node = 0) {
  auto s = std::make_unique<Setup>();
  s->deck =
      zm::testing::test_deck(2, 1, 1,
                             {std::string("zero.quantize_grads=") + bits, "zero.quantize_block=32",
                              std::string("zero.error_feedback=") + (feedback ? "true" : "false")});
  s->mesh = zm::hybrid_mesh(world.size(), group, hpz);
  s->mesh.ranks_per_node = ranks_per_node;
  s->comms = std::make_unique<zm::MeshComms>(world, s->mesh);
  if (ranks_per_node > 0) zm::split_group_by_node(*s->comms);
  s->layout = std::make_unique<zm::ParamLayout>(s->deck.model);
  s->partition = std::make_unique<zm::Partition>(*s->layout, group, s->mesh.sub_shards());
  const zm::ZeroOptions options = zm::zero_options(s->deck, 2, s->mesh);
  s->schedule = zm::build_step_schedule(zm::stage_spec(2), *s->partition, options, s->mesh);
  zm::ZeroppOptions qgz = zm::zeropp_options(s->deck);
  qgz.policy = options.policy;
  s->alloc = std::make_unique<zm::PlannedAllocator>(
      zm::quantized_gradient_buffers(*s->partition, qgz, s->mesh), nullptr);
  s->qgz = std::make_unique<zm::QuantizedGradients>(*s->partition, qgz, *s->alloc, world.rank());
  s->alloc->finish();
  return s;
}

// The largest |x| of ranks [first, first + count)'s contributions over [begin, end).
float largest(int first, int count, int64_t begin, int64_t end) {
  float m = 0;
  for (int r = first; r < first + count; ++r)
    for (int64_t i = begin; i < end; ++i) m = std::max(m, std::fabs(contribution(r, i)));
  return m;
}

// The bound of one exchange within the group starting at world rank `first`: element e of the
// unit (in piece `e / shard`) is off by at most the sum over the ranks of scale / 2 of its block.
double group_bound(int first, int ranks, int64_t shard, int64_t block, float max_code, int64_t e) {
  const int64_t piece = e / shard;
  const int64_t begin = piece * shard + (e - piece * shard) / block * block;
  const int64_t end = std::min(begin + block, (piece + 1) * shard);
  double bound = 0;
  for (int r = first; r < first + ranks; ++r) bound += largest(r, 1, begin, end) / max_code / 2;
  return bound * (1 + 1e-5) + 1e-6;
}

double exact_sum(int first, int ranks, int64_t e) {
  double s = 0;
  for (int r = first; r < first + ranks; ++r) s += contribution(r, e);
  return s;
}

class QgzExchange : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<zm::Communicator> world =
      zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  float max_code() const { return std::string(GetParam()) == "int4" ? 7.0f : 127.0f; }
};

TEST_P(QgzExchange, WithinTheGroupMatchesThePlainReduceScatterWithinTheBound) {
  const int N = world->size();
  auto s = setup(*world, N, false, GetParam(), false);
  const int unit = 1;
  const zm::UnitPartition& p = s->partition->unit(unit);
  std::vector<float> mine(static_cast<size_t>(p.padded));
  for (int64_t i = 0; i < p.padded; ++i) mine[i] = contribution(world->rank(), i);
  DeviceVec<float> x(mine), out(static_cast<size_t>(p.shard));
  s->qgz->reduce_in_group(s->in_group(unit), *s->comms, x.data(), out.data(),
                          zm::testing::test_team_shape());
  const auto got = out.get();
  double worst_error = 0;
  for (int64_t i = 0; i < p.shard; ++i) {
    const int64_t e = world->rank() * p.shard + i;
    const double error = std::fabs(got[i] - exact_sum(0, N, e));
    ASSERT_LE(error, group_bound(0, N, p.shard, 32, max_code(), e)) << "element " << e;
    worst_error = std::max(worst_error, error);
  }
  EXPECT_GT(worst_error, 0.0) << "nothing was quantized";
}

// 4 ranks: groups of 2, the shard's replicas summing across them (each sub-shard under hpZ).
TEST_P(QgzExchange, AcrossTheGroupsMatchesThePlainReductionWithinTheBound) {
  const int N = world->size();
  if (N != 4) GTEST_SKIP() << "two groups of two ranks";
  for (const bool hpz : {false, true}) {
    SCOPED_TRACE(hpz ? "hpZ" : "shard groups");
    auto s = setup(*world, 2, hpz, GetParam(), false);
    const int unit = 1, shard_rank = s->comms->group().rank();
    const int replica = s->comms->replicas()->rank();
    const zm::UnitPartition& p = s->partition->unit(unit);
    std::vector<float> mine(static_cast<size_t>(p.padded));
    for (int64_t i = 0; i < p.padded; ++i) mine[i] = contribution(world->rank(), i);
    DeviceVec<float> x(mine), out(static_cast<size_t>(p.shard));
    s->qgz->reduce_in_group(s->in_group(unit), *s->comms, x.data(), out.data(),
                            zm::testing::test_team_shape());
    s->qgz->reduce_across(s->across(unit), *s->comms, out.data(), zm::testing::test_team_shape());
    const auto got = out.get();
    const int64_t begin = hpz ? replica * p.sub_shard : 0;
    const int64_t end = hpz ? begin + p.sub_shard : p.shard;
    // The requantized group sums: their scale is at most (largest sum + its error) / max_code.
    double bound_of_group[2] = {0, 0};
    for (int g = 0; g < 2; ++g)
      for (int64_t i = begin; i < end; ++i) {
        const int64_t e = shard_rank * p.shard + i;
        const double b = group_bound(2 * g, 2, p.shard, 32, max_code(), e);
        bound_of_group[g] = std::max(bound_of_group[g], std::fabs(exact_sum(2 * g, 2, e)) + b);
      }
    for (int64_t i = begin; i < end; ++i) {
      const int64_t e = shard_rank * p.shard + i;
      double bound = 0;
      for (int g = 0; g < 2; ++g)
        bound += group_bound(2 * g, 2, p.shard, 32, max_code(), e) +
                 bound_of_group[g] / max_code() / 2 * (1 + 1e-5);
      ASSERT_LE(std::fabs(got[i] - exact_sum(0, N, e)), bound) << "element " << e;
    }
    // The replicas of a shard hold the same bits (the whole shard; under hpZ their sub-shards
    // differ, and each is checked above).
    if (!hpz) {
      std::vector<float> other(got.size());
      MPI_Sendrecv(got.data(), static_cast<int>(got.size()), MPI_FLOAT, world->rank() ^ 2, 0,
                   other.data(), static_cast<int>(other.size()), MPI_FLOAT, world->rank() ^ 2, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT_EQ(got, other);
    }
  }
}

// 4 ranks on two nodes of 2, one group: hop 1 quantizes every rank's contribution (the flat
// exchange's bound), and the hop across requantizes each node's sum, whose scale is at most
// (the block's largest node sum + its error) / max_code.
TEST_P(QgzExchange, InTwoHopsByNodeMatchesThePlainReduceScatterWithinTheBound) {
  const int N = world->size();
  if (N != 4) GTEST_SKIP() << "4 ranks on two nodes of 2";
  auto s = setup(*world, N, false, GetParam(), false, 2);
  ASSERT_NE(s->comms->added(zm::kShardWithinNode), nullptr);
  const int unit = 1;
  const zm::UnitPartition& p = s->partition->unit(unit);
  std::vector<float> mine(static_cast<size_t>(p.padded));
  for (int64_t i = 0; i < p.padded; ++i) mine[i] = contribution(world->rank(), i);
  DeviceVec<float> x(mine), out(static_cast<size_t>(p.shard));
  s->qgz->reduce_in_group_by_node(s->in_group(unit), *s->comms, x.data(), out.data(),
                                  zm::testing::test_team_shape());
  const auto got = out.get();
  const int64_t block = 32;
  double worst_error = 0;
  for (int64_t i = 0; i < p.shard; ++i) {
    const int64_t e = world->rank() * p.shard + i;
    double bound = group_bound(0, N, p.shard, block, max_code(), e);
    const int64_t begin = i / block * block, end = std::min(begin + block, p.shard);
    for (int node = 0; node < 2; ++node) {
      double largest_sum = 0;
      for (int64_t j = begin; j < end; ++j) {
        const int64_t f = world->rank() * p.shard + j;
        largest_sum =
            std::max(largest_sum, std::fabs(exact_sum(2 * node, 2, f)) +
                                      group_bound(2 * node, 2, p.shard, block, max_code(), f));
      }
      bound += largest_sum / max_code() / 2 * (1 + 1e-5);
    }
    const double error = std::fabs(got[i] - exact_sum(0, N, e));
    ASSERT_LE(error, bound) << "element " << e;
    worst_error = std::max(worst_error, error);
  }
  EXPECT_GT(worst_error, 0.0) << "nothing was quantized";
}

// Two exchanges of the same contribution: with error feedback their sum is off by one
// quantization's error at most, without it by up to two.
TEST_P(QgzExchange, ErrorFeedbackMakesUpTheLastError) {
  const int N = world->size();
  const int unit = 1;
  double worst[2] = {0, 0};
  for (const bool feedback : {false, true}) {
    auto s = setup(*world, N, false, GetParam(), feedback);
    const zm::UnitPartition& p = s->partition->unit(unit);
    std::vector<float> mine(static_cast<size_t>(p.padded));
    for (int64_t i = 0; i < p.padded; ++i) mine[i] = contribution(world->rank(), i);
    std::vector<double> total(static_cast<size_t>(p.shard), 0.0);
    for (int time = 0; time < 2; ++time) {
      DeviceVec<float> x(mine), out(static_cast<size_t>(p.shard));
      s->qgz->reduce_in_group(s->in_group(unit), *s->comms, x.data(), out.data(),
                              zm::testing::test_team_shape());
      const auto got = out.get();
      for (int64_t i = 0; i < p.shard; ++i) total[i] += got[i];
    }
    for (int64_t i = 0; i < p.shard; ++i) {
      const int64_t e = world->rank() * p.shard + i;
      // The second quantization sees x + residual: its scale grows by at most half a step.
      const double one = group_bound(0, N, p.shard, 32, max_code(), e) * (1 + 0.5 / max_code());
      const double error = std::fabs(total[i] - 2 * exact_sum(0, N, e));
      if (feedback) {
        ASSERT_LE(error, one) << "element " << e;
      }
      worst[feedback] = std::max(worst[feedback], error);
    }
  }
  EXPECT_LT(worst[1], worst[0]) << "error feedback did not reduce the accumulated error";
}

INSTANTIATE_TEST_SUITE_P(Bits, QgzExchange, ::testing::Values("int8", "int4"));

}  // namespace
