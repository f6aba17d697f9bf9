// What `zeromini plan` predicts for a deck against what a run of it allocates and sends, byte for
// byte: memory by category (held and at the peak), traffic by level and collective, and the
// throughput report's counts. Shared by the core's test
// (tests/plan/test_planned_equals_measured.cpp) and the modules' (tests/modules/<name>/), which
// check their own figures of each step through `around_step`.
#pragma once

#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <cmath>
#include <functional>
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "core/memory.hpp"
#include "plan/planner.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "train/throughput.hpp"

namespace zm::testing {

// The FLOPs the run's throughput report counts per rank are the planner's, and the bytes of each
// timed step (what a bus bandwidth divides) are the planned traffic (all levels).
inline void check_throughput_counts(const zm::Deck& deck, const zm::PlanPoint& plan,
                                    zm::Trainer& trainer,
                                    const std::vector<zm::StepRecord>& records, int ranks) {
  zm::StageResult s;
  s.ranks = ranks;
  s.tokens_per_rank_per_step = trainer.tokens_per_rank_per_step();
  s.steps = records;
  s.mean_times.total = 1.0;  // any positive time: the counts do not depend on it
  const zm::Throughput t = zm::measure_throughput(
      s, deck.model, zm::attention_kernels(zm::run_extensions(deck, plan.stage)));
  EXPECT_DOUBLE_EQ(t.model_flops_per_step / ranks, plan.model_flops_per_step);
  EXPECT_DOUBLE_EQ(t.hardware_flops_per_step / ranks, plan.flops_per_step);
  EXPECT_DOUBLE_EQ(t.tflops_per_device * 1e12, plan.model_flops_per_step);  // over 1 s
  const size_t first = records.size() >= 2 ? 1 : 0;
  for (int op = 0; op < zm::kCommOps; ++op) {
    double bytes = 0;
    for (size_t i = first; i < records.size(); ++i)
      bytes += records[i].comm.ops[op].bytes / static_cast<double>(records.size() - first);
    EXPECT_NEAR(bytes, plan.bytes_per_step[op], 1e-12 * (1 + plan.bytes_per_step[op]))
        << zm::comm_op_name(zm::CommOp(op));
  }
}

// One deck: the plan against what a trainer allocates and sends in its steps. `around_step`, where
// given, is called with the trainer right before (false) and right after (true) each step.
inline void check_planned_equals_measured(
    const zm::Deck& deck, int stage, zm::Communicator& comm,
    const std::function<void(zm::Trainer& trainer, bool after)>& around_step = {}) {
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(deck, stage, comm.size(), nullptr);
  // This rank's part of a model held in parts (each part's rank is priced on its own).
  const std::string parts = zm::run_extensions(deck, stage).part_dimension;
  const int part = parts.empty() ? 0 : mesh.mesh.coordinate(comm.rank(), parts);
  const zm::MemoryPlan planned = zm::plan_memory(deck, stage, mesh, part);  // priced as it runs
  const zm::LevelTraffic planned_traffic = zm::plan_traffic(deck, stage, mesh, part);

  zm::MemoryLedger ledger;
  const zm::MemoryFigures before = ledger.figures();
  ledger.reset_peaks();
  const auto trainer_owned =
      zm::make_trainer(deck, stage, comm, zm::RunContext{nullptr, nullptr, &ledger});
  zm::Trainer& trainer = *trainer_owned;
  ASSERT_EQ(trainer.comms().mesh().group_ranks(), mesh.group_ranks());
  ASSERT_EQ(trainer.comms().mesh().model_parallel(), mesh.model_parallel());
  trainer.init_parameters();
  std::vector<zm::StepRecord> records;
  std::vector<zm::CommStats> model_parallel;  // each step's part of record.comm at that level
  for (int64_t s = 0; s < deck.train.steps; ++s) {
    const zm::CommStats counted = trainer.comms().stats(zm::CommLevel::ModelParallel);
    if (around_step) around_step(trainer, false);
    records.push_back(trainer.step(s));
    if (around_step) around_step(trainer, true);
    model_parallel.push_back(trainer.comms().stats(zm::CommLevel::ModelParallel) - counted);
  }

  for (int c = 0; c < zm::kMemCategories; ++c) {
    SCOPED_TRACE(zm::mem_category_name(zm::MemCategory(c)));
    // Held now, and at the peak of the steps: nothing is allocated beyond the plan.
    EXPECT_EQ(static_cast<double>(ledger.figures().current[c] - before.current[c]),
              planned.bytes[c]);
    EXPECT_EQ(static_cast<double>(ledger.figures().peak[c] - before.current[c]), planned.bytes[c]);
  }
  const auto& intra = planned_traffic[static_cast<size_t>(zm::CommLevel::IntraGroup)];
  const auto& inter = planned_traffic[static_cast<size_t>(zm::CommLevel::InterGroup)];
  const auto& model = planned_traffic[static_cast<size_t>(zm::CommLevel::ModelParallel)];
  double model_total = 0;
  for (double bytes : model) model_total += bytes;
  if (mesh.model_parallel() > 1)
    EXPECT_GT(model_total, 0.0);  // the model's own collectives
  else
    EXPECT_EQ(model_total, 0.0);
  double inter_total = 0;
  for (double bytes : inter) inter_total += bytes;
  if (mesh.hybrid() && mesh.world() > 1)
    EXPECT_GT(inter_total, 0.0);  // the replicas' all-reduce and the statistics
  else
    EXPECT_EQ(inter_total, 0.0);
  for (size_t i = 0; i < records.size(); ++i)
    for (int op = 0; op < zm::kCommOps; ++op) {
      const zm::StepRecord& record = records[i];
      SCOPED_TRACE(zm::comm_op_name(zm::CommOp(op)));
      const double measured_inter = record.comm_inter_group.ops[op].bytes;
      const double measured_model = model_parallel[i].ops[op].bytes;
      const double measured_intra = record.comm.ops[op].bytes - measured_inter - measured_model;
      EXPECT_NEAR(measured_intra, intra[op], 1e-12 * (1 + intra[op]));
      EXPECT_NEAR(measured_inter, inter[op], 1e-12 * (1 + inter[op]));
      EXPECT_NEAR(measured_model, model[op], 1e-12 * (1 + model[op]));
    }
  zm::PlanPoint point = zm::plan_point(deck, stage, comm.size(), nullptr);
  point.bytes_per_step = {};  // this rank's part's
  for (const auto& level : planned_traffic)
    for (int op = 0; op < zm::kCommOps; ++op) point.bytes_per_step[op] += level[op];
  check_throughput_counts(deck, point, trainer, records, comm.size());
}

}  // namespace zm::testing
