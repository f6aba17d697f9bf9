#include "modules/zeropp/cross_node_figures.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "comm/watched_mpi.hpp"
#include "io/stage_figures.hpp"
#include "modules/zeropp/cross_node.hpp"
#include "plan/plan_extensions.hpp"
#include "train/stage_hooks_extension.hpp"

namespace zm {

namespace {

const char* const kCrossNodeFigure = "cross_node_bytes";  // PlanPoint::figures

double total_bytes(const CommStats& stats) {
  double bytes = 0;
  for (const CommOpStats& op : stats.ops) bytes += op.bytes;
  return bytes;
}

// One stage's bytes out of the node: each step's on this rank, then every rank's sums on rank 0.
class CrossNodeFigures final : public StageFigures {
 public:
  // `any_left`: the run's, set once some stage sent bytes out of the node (this rank's).
  CrossNodeFigures(int stage, std::shared_ptr<bool> any_left)
      : stage_(stage), any_left_(std::move(any_left)) {}

  void add_step(const CommStats& left) { steps_.push_back(left); }

  // Collective over `world`.
  void gather(Communicator& world) {
    std::vector<double> mine(kCommOps, 0.0);
    const double n = static_cast<double>(steps_.size());
    for (const CommStats& step : steps_)
      for (int op = 0; op < kCommOps; ++op) {
        mine[static_cast<size_t>(op)] += step.ops[static_cast<size_t>(op)].bytes;
        per_step_.ops[static_cast<size_t>(op)].bytes += step.ops[static_cast<size_t>(op)].bytes / n;
      }
    if (total_bytes(per_step_) != 0) *any_left_ = true;  // NaN too: no figure is news
    ranks_ = world.size();
    all_.assign(static_cast<size_t>(kCommOps * ranks_), 0.0);
    watched_gather(world.watchdog(), mine.data(), kCommOps, MPI_DOUBLE, all_.data(), 0,
                   world.mpi_comm(), "the gather of the bytes that left the nodes");
  }

  std::vector<RankDataset> datasets() const override {
    std::vector<std::string> ops;
    for (int op = 0; op < kCommOps; ++op) ops.push_back(comm_op_name(static_cast<CommOp>(op)));
    return {{"comm_bytes_cross_node", ops,
             "bytes sent per rank out of its node (node-aware convention, comm/cross_node.hpp; "
             "nodes of zero.ranks_per_node ranks when set, else of MPI's shared-memory split)",
             all_}};
  }
  std::vector<std::string> summary_members(SummaryObject object) const override {
    if (object != SummaryObject::Stage) return {};
    std::string out = "      \"bytes_per_rank_per_step_cross_node\": {";
    for (int op = 0; op < kCommOps; ++op) {
      const double bytes = per_step_.ops[static_cast<size_t>(op)].bytes;
      out += fmt::format("{}\"{}\": {}", op ? ", " : "", comm_op_name(static_cast<CommOp>(op)),
                         std::isfinite(bytes) ? fmt::format("{}", bytes) : "null");
    }
    return {out + "}"};
  }
  std::string table_note() const override {
    if (!*any_left_) return "";
    const double leaving = total_bytes(per_step_);
    if (std::isnan(leaving))
      return fmt::format(
          "  stage {}: n/a left the node (a communicator spread unevenly over nodes)\n", stage_);
    return fmt::format("  stage {}: {:.3f} MiB per rank per step left the node ({} B)\n", stage_,
                       leaving / (1024.0 * 1024.0), leaving);
  }

 private:
  int stage_, ranks_ = 1;
  std::shared_ptr<bool> any_left_;
  std::vector<CommStats> steps_;  // this rank's, a record per step
  CommStats per_step_;            // their mean
  std::vector<double> all_;       // rank 0: ranks x ops, the stage's sums
};

// Each step's bytes out of the node: the counters around the step.
class CrossNodeHook final : public StepHook {
 public:
  CrossNodeHook(const StageOutputs& o, std::shared_ptr<bool> any_left)
      : o_(o),
        counters_(o.trainer.comms()),
        figures_(std::make_shared<CrossNodeFigures>(o.stage, std::move(any_left))) {
    o_.result.figures.push_back(figures_);
  }
  void before_step(int64_t) override { before_ = counters_.stats(); }
  void on_record(const StepRecord&) override { figures_->add_step(counters_.stats() - before_); }
  void at_end() override { figures_->gather(o_.trainer.comms().world()); }

 private:
  StageOutputs o_;
  CrossNodeCounters counters_;
  std::shared_ptr<CrossNodeFigures> figures_;
  CommStats before_;
};

double planned_bytes(const PlanPoint& p) {
  return p.figures.at(kCrossNodeFigure);
}

// The plan's points over several nodes: what leaves a node, as a run counts it.
std::string plan_lines(const std::vector<PlanPoint>& points, const Machine*) {
  std::string out;
  for (const PlanPoint& p : points) {
    const double bytes = planned_bytes(p);
    if (bytes == 0) continue;  // one node; NaN: a communicator spread unevenly
    if (out.empty())
      out = "\nCross-node: GB each rank sends out of its node per step (node-aware):\n";
    out += fmt::format(
        "  {:>8} ranks, stage {}, {} per node: {}\n", p.ranks, p.stage, p.mesh.ranks_per_node,
        std::isnan(bytes) ? std::string("n/a (a communicator spread unevenly over nodes)")
                          : fmt::format("{:.3f} ({:.0f} bytes)", bytes / 1e9, bytes));
  }
  return out;
}

}  // namespace

void add_cross_node_figures() {
  add_training_extension([] {
    auto any_left = std::make_shared<bool>(false);  // one run's: whether any stage sent some
    return stage_hooks_extension([any_left](const StageOutputs& outputs) {
      return std::make_unique<CrossNodeHook>(outputs, any_left);
    });
  });
  add_plan_pricing([](const Deck& deck, int stage, const ZeroMesh& mesh, const Machine*, double,
                      PlanPoint& point) {
    double bytes = 0;
    for (double b : plan_cross_node_traffic(deck, stage, mesh)) bytes += b;
    point.figures[kCrossNodeFigure] = bytes;
  });
  // Right after the modules' columns that follow the all-to-all bytes (this module's settings),
  // before those at the end: the column's place since it was the core's.
  PlanColumns column;
  column.at = PlanColumnsAt::AfterAllToAll;
  column.shown = [](const Deck&, const std::vector<PlanPoint>&) { return true; };
  column.header = ",cross_node_bytes";
  column.row = [](const Deck&, const PlanPoint& p, bool) {
    const double bytes = planned_bytes(p);
    return std::isfinite(bytes) ? fmt::format(",{:.0f}", bytes) : std::string(",");
  };
  add_plan_columns(column);
  add_plan_footnote(plan_lines, PlanFootnoteAt::AfterTable);
}

}  // namespace zm
