// The step schedule (zero/schedule.hpp) as data: which collectives each stage's step posts, with
// which strategy, on which group, and that the planner's traffic is the schedule itself. The run
// posting exactly the schedule is test_planned_equals_measured's (it counts what ranks post).
#include <gtest/gtest.h>

#include <set>

#include "core/deck.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"
#include "model/layout.hpp"
#include "plan/run_options.hpp"
#include "planner_test_util.hpp"
#include "zero/engine.hpp"
#include "zero/schedule.hpp"

namespace {

using zm::MeshGroup;
using zm::ScheduleRole;

struct Model {
  zm::Deck deck;
  zm::ZeroMesh mesh;
  zm::ParamLayout layout;
  zm::Partition partition;
  Model(zm::Deck d, zm::ZeroMesh m)
      : deck(std::move(d)),
        mesh(std::move(m)),
        layout(deck.model),
        partition(layout, mesh.group_ranks(), mesh.sub_shards()) {}
  zm::StepSchedule schedule(int stage) const {
    return zm::build_step_schedule(zm::stage_spec(stage), partition,
                                   zm::zero_options(deck, stage, mesh), mesh);
  }
  // A copy: the schedule it comes from is a temporary.
  zm::ScheduledCollective of(int stage, int unit, ScheduleRole role) const {
    return schedule(stage).of(unit, role);
  }
};

zm::Deck small_deck(const char* precision = "fp32") {
  zm::Deck deck = zm_test::deck_with(2, 64, 2, precision);
  deck.model.vocab = 256;
  deck.model.seq_len = 32;
  return deck;
}

// The strategy's name for an entry, as `zeromini plan --schedule` prints it.
std::string strategy(const zm::ScheduledCollective& c) {
  return c.strategy->name(c);
}

std::set<ScheduleRole> roles(const zm::StepSchedule& schedule) {
  std::set<ScheduleRole> out;
  for (const zm::ScheduledCollective& c : schedule.collectives()) out.insert(c.role);
  return out;
}

// Every stage ends with the step statistics' all-reduce over the world (unit -1).
TEST(StepSchedule, EachStageHasItsRoles) {
  const Model s(small_deck(), zm::hybrid_mesh(4, 4, false));
  const ScheduleRole stats = ScheduleRole::StepStatistics;
  EXPECT_EQ(roles(s.schedule(0)), (std::set<ScheduleRole>{ScheduleRole::Buckets, stats}));
  const std::set<ScheduleRole> reduce_and_update{ScheduleRole::GroupReduction,
                                                 ScheduleRole::UpdateGather, stats};
  EXPECT_EQ(roles(s.schedule(1)), reduce_and_update);
  EXPECT_EQ(roles(s.schedule(2)), reduce_and_update);
  EXPECT_EQ(roles(s.schedule(3)), (std::set<ScheduleRole>{ScheduleRole::GroupReduction,
                                                          ScheduleRole::UnitGather, stats}));
  for (int stage = 0; stage <= 3; ++stage) {
    const zm::StepSchedule schedule = s.schedule(stage);
    const zm::ScheduledCollective& last = schedule.collectives().back();
    EXPECT_EQ(last.role, stats) << "stage " << stage;
    // The loss, and a sum of squares per dataset (embedding, blocks, final norm).
    EXPECT_EQ(last.elements, 1 + small_deck().model.layers + 2);
    EXPECT_EQ(last.hops.at(0).group, MeshGroup::World);
  }
  // Stage 1 reduces once per step, stages 2-3 every micro-step; stage 3 gathers twice each.
  zm::Deck accum = small_deck();
  accum.train.grad_accum = 3;
  const Model a(accum, zm::hybrid_mesh(4, 4, false));
  EXPECT_EQ(a.of(1, 0, ScheduleRole::GroupReduction).per_step, 1);
  EXPECT_EQ(a.of(2, 0, ScheduleRole::GroupReduction).per_step, 3);
  EXPECT_EQ(a.of(3, 0, ScheduleRole::UnitGather).per_step, 6);
}

// Every unit's shard lands where the stage's state lives: the buckets cover the padded model
// once; each reduce-scatter keeps the unit's shard.
TEST(StepSchedule, CountsFollowThePartition) {
  const Model s(small_deck(), zm::hybrid_mesh(4, 4, false));
  int64_t covered = 0;
  const zm::StepSchedule buckets = s.schedule(0);
  for (const zm::ScheduledCollective& c : buckets.collectives())
    if (c.role == ScheduleRole::Buckets) covered += c.elements;
  EXPECT_EQ(covered, s.partition.padded_total());
  for (int u = 0; u < s.partition.num_units(); ++u) {
    const zm::ScheduledCollective c = s.of(2, u, ScheduleRole::GroupReduction);
    EXPECT_EQ(strategy(c), "reduce_scatter");
    EXPECT_EQ(c.elements, s.partition.unit(u).shard);
    EXPECT_EQ(c.hops.at(0).wire.count, s.partition.unit(u).padded);
    EXPECT_EQ(c.hops.at(0).group, MeshGroup::Shard);
  }
}

// The strategies come from the settings, decided once: hybrid sharding adds the replicas'
// reduction, secondary shards turn it into a reduce-scatter into sub-shards and gather them back
// across the replicas.
TEST(StepSchedule, StrategiesFollowTheSettings) {
  const Model hybrid(small_deck(), zm::hybrid_mesh(4, 2, false));
  EXPECT_EQ(strategy(hybrid.of(2, 1, ScheduleRole::ReplicaReduction)), "all_reduce");
  EXPECT_EQ(hybrid.of(2, 1, ScheduleRole::UpdateGather).hops[0].group, MeshGroup::Shard);

  const Model hpz(small_deck(), zm::hybrid_mesh(4, 2, true));
  const zm::StepSchedule s3 = hpz.schedule(3);
  EXPECT_EQ(strategy(s3.of(1, ScheduleRole::ReplicaReduction)), "reduce_scatter");
  EXPECT_EQ(s3.of(1, ScheduleRole::ReplicaReduction).elements, hpz.partition.unit(1).sub_shard);
  EXPECT_EQ(strategy(s3.of(1, ScheduleRole::UpdateGather)), "all_gather");
  EXPECT_EQ(s3.of(1, ScheduleRole::UpdateGather).hops[0].group, MeshGroup::Replicate);
}

// Without overlap every collective is waited where it is posted.
TEST(StepSchedule, NoOverlapBlocksEverywhere) {
  zm::Deck deck = small_deck();
  deck.zero.overlap = false;
  const Model s(deck, zm::hybrid_mesh(4, 2, false));
  for (int stage = 0; stage < 4; ++stage) {
    const zm::StepSchedule schedule = s.schedule(stage);
    for (const zm::ScheduledCollective& c : schedule.collectives())
      if (c.role != ScheduleRole::UnitGather) {
        EXPECT_TRUE(c.blocking()) << stage;
      }
  }
}

// The planner's traffic is the schedule, hop by hop and post by post.
TEST(StepSchedule, PlannedTrafficIsTheSchedule) {
  zm::Deck deck = small_deck();
  deck.train.grad_accum = 2;
  const Model s(deck, zm::hybrid_mesh(4, 2, true));
  for (int stage = 0; stage < 4; ++stage) {
    const zm::StepSchedule schedule = s.schedule(stage);
    const zm::PlannedCollectives traffic = zm::ZeroEngine::declared_traffic(
        stage, s.partition, zm::zero_options(deck, stage, s.mesh), s.mesh);
    int64_t posts = 0;
    for (const zm::ScheduledCollective& c : schedule.collectives())
      posts += c.per_step * static_cast<int64_t>(c.hops.size());
    ASSERT_EQ(static_cast<int64_t>(traffic.size()), posts) << stage;
    const zm::PlannedCollectives planned = schedule.planned();
    for (size_t i = 0; i < traffic.size(); ++i) {
      EXPECT_EQ(traffic[i].op, planned[i].op);
      EXPECT_EQ(traffic[i].count, planned[i].count);
      EXPECT_EQ(traffic[i].ranks, planned[i].ranks);
    }
  }
}

}  // namespace
