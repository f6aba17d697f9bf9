#include "modules/tensor_parallel/tp_traffic.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/mesh_comms.hpp"
#include "comm/watched_mpi.hpp"
#include "core/log.hpp"
#include "io/stage_figures.hpp"
#include "train/stage_hooks_extension.hpp"

namespace zm {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{}", value);
}

std::vector<std::string> op_names() {
  std::vector<std::string> names;
  for (int op = 0; op < kCommOps; ++op) names.push_back(comm_op_name(static_cast<CommOp>(op)));
  return names;
}

class TensorParallelFigures final : public StageFigures {
 public:
  TensorParallelFigures(int stage, int tp) : stage_(stage), tp_(tp) {}

  void add_step(const CommStats& along) { steps_.push_back(along); }

  // Collective: every rank's bytes and seconds along tp over the stage, to rank 0.
  void gather(const CommStats& zero_and_statistics_per_step, Communicator& world) {
    std::vector<double> mine(2 * kCommOps, 0.0);
    for (const CommStats& step : steps_)
      for (int op = 0; op < kCommOps; ++op) {
        mine[op] += step.ops[op].bytes;
        mine[kCommOps + op] += step.ops[op].seconds;
      }
    ranks_ = world.size();
    all_.assign(mine.size() * static_cast<size_t>(ranks_), 0.0);
    watched_gather(world.watchdog(), mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                   all_.data(), 0, world.mpi_comm(), "the gather of the traffic along tp");
    // The mean per step on this rank, summed as the core sums its own traffic.
    const double n = static_cast<double>(steps_.size());
    for (const CommStats& step : steps_)
      for (int op = 0; op < kCommOps; ++op) {
        per_step_.ops[op].calls += step.ops[op].calls;
        per_step_.ops[op].bytes += step.ops[op].bytes / n;
        per_step_.ops[op].seconds += step.ops[op].seconds / n;
      }
    if (!steps_.empty())
      for (auto& op : per_step_.ops) op.calls /= steps_.size();
    all_traffic_per_step_ = zero_and_statistics_per_step;
  }

  std::vector<RankDataset> datasets() const override {
    RankDataset bytes{"comm_bytes_tensor_parallel",
                      op_names(),
                      "bytes sent per rank along tp, the model's own collectives (ring "
                      "convention; part of comm_bytes)",
                      {}};
    RankDataset seconds{"comm_seconds_tensor_parallel",
                        op_names(),
                        "seconds waiting along tp (part of comm_seconds)",
                        {}};
    for (int r = 0; r < ranks_; ++r)
      for (int op = 0; op < kCommOps; ++op) {
        const double* v = all_.data() + static_cast<size_t>(r) * 2 * kCommOps;
        bytes.values.push_back(v[op]);
        seconds.values.push_back(v[kCommOps + op]);
      }
    return {bytes, seconds};
  }
  std::vector<StageAttribute> attributes() const override {
    return {{"tp", static_cast<int64_t>(tp_)}};
  }
  std::vector<std::string> summary_members(SummaryObject object) const override {
    if (object != SummaryObject::Stage) return {};
    std::string out = "      \"bytes_per_rank_per_step_tensor_parallel\": {";
    for (int op = 0; op < kCommOps; ++op)
      out += fmt::format("{}\"{}\": {}", op ? ", " : "", comm_op_name(static_cast<CommOp>(op)),
                         json_number(per_step_.ops[static_cast<size_t>(op)].bytes));
    return {out + "}"};
  }
  std::string table_note() const override {
    if (tp_ == 1) return "";
    double bytes = 0, seconds = 0, zero_bytes = 0;
    for (int op = 0; op < kCommOps; ++op) {
      bytes += per_step_.ops[static_cast<size_t>(op)].bytes;
      seconds += per_step_.ops[static_cast<size_t>(op)].seconds;
      zero_bytes += all_traffic_per_step_.ops[static_cast<size_t>(op)].bytes;
    }
    zero_bytes -= bytes;
    return fmt::format(
        "  stage {}: tp {} x {} data-parallel ranks; {:.3f} MiB per rank per step along tp "
        "({} collectives, {:.2f} ms waited), {:.3f} MiB for ZeRO and the step statistics\n",
        stage_, tp_, ranks_ / tp_, bytes / kMiB,
        per_step_[CommOp::AllReduce].calls + per_step_[CommOp::AllGather].calls, seconds * 1e3,
        zero_bytes / kMiB);
  }

 private:
  int stage_, tp_, ranks_ = 1;
  std::vector<CommStats> steps_;  // this rank's traffic along tp, a record per step
  CommStats per_step_;            // its mean per step
  CommStats all_traffic_per_step_;
  std::vector<double> all_;  // rank 0: ranks x (bytes, seconds) per op
};

// Each step's traffic along tp: the model-parallel level's counters around the step.
class TrafficHook final : public StepHook {
 public:
  explicit TrafficHook(const StageOutputs& outputs)
      : o_(outputs),
        figures_(std::make_shared<TensorParallelFigures>(outputs.stage,
                                                         outputs.trainer.comms().mesh().slices())) {
    o_.result.figures.push_back(figures_);
  }
  void before_step(int64_t) override { before_ = comms().stats(CommLevel::ModelParallel); }
  void on_record(const StepRecord&) override {
    figures_->add_step(comms().stats(CommLevel::ModelParallel) - before_);
  }
  void at_end() override {
    // The stage's mean traffic per step over every level, as the core's summary has it.
    CommStats all_per_step;
    const double n = static_cast<double>(o_.result.steps.size());
    for (const StepRecord& r : o_.result.steps)
      for (int op = 0; op < kCommOps; ++op) all_per_step.ops[op].bytes += r.comm.ops[op].bytes / n;
    figures_->gather(all_per_step, comms().world());
  }

 private:
  MeshComms& comms() const { return o_.trainer.comms(); }
  StageOutputs o_;
  std::shared_ptr<TensorParallelFigures> figures_;
  CommStats before_;
};

}  // namespace

std::unique_ptr<TrainingExtension> make_tensor_parallel_traffic() {
  return stage_hooks_extension(
      [](const StageOutputs& outputs) { return std::make_unique<TrafficHook>(outputs); });
}

}  // namespace zm
