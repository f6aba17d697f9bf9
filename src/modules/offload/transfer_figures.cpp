#include "modules/offload/transfer_figures.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "comm/mesh_comms.hpp"
#include "comm/watched_mpi.hpp"
#include "io/h5.hpp"
#include "io/stage_figures.hpp"
#include "modules/offload/host_transfer.hpp"
#include "train/stage_hooks_extension.hpp"

namespace zm {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{}", value);
}

std::vector<std::string> direction_names() {
  std::vector<std::string> names;
  for (int d = 0; d < kTransferDirections; ++d)
    names.push_back(transfer_direction_name(static_cast<TransferDirection>(d)));
  return names;
}

class TransferFigures final : public StageFigures {
 public:
  explicit TransferFigures(int stage) : stage_(stage) {}

  void add_step(const TransferStats& step) { steps_.push_back(step); }

  // Collective: every rank's copies over the stage, to rank 0.
  void gather(Communicator& world) {
    TransferStats stage;
    for (const TransferStats& step : steps_)
      for (size_t d = 0; d < stage.directions.size(); ++d) {
        stage.directions[d].calls += step.directions[d].calls;
        stage.directions[d].bytes += step.directions[d].bytes;
        stage.directions[d].seconds += step.directions[d].seconds;
      }
    std::vector<double> mine(3 * kTransferDirections);
    for (int d = 0; d < kTransferDirections; ++d) {
      const TransferOpStats& t = stage.directions[static_cast<size_t>(d)];
      mine[d] = static_cast<double>(t.calls);
      mine[kTransferDirections + d] = t.bytes;
      mine[2 * kTransferDirections + d] = t.seconds;
    }
    ranks_ = world.size();
    all_.assign(mine.size() * static_cast<size_t>(ranks_), 0.0);
    watched_gather(world.watchdog(), mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                   all_.data(), 0, world.mpi_comm(), "the gather of the host copies");
    // The mean per step on this rank (calls: a whole number of copies per step).
    if (steps_.empty()) return;
    const double n = static_cast<double>(steps_.size());
    for (const TransferStats& step : steps_)
      for (size_t d = 0; d < step.directions.size(); ++d) {
        TransferOpStats& mean = per_step_.directions[d];
        mean.calls += step.directions[d].calls;
        mean.bytes += step.directions[d].bytes / n;
        mean.seconds += step.directions[d].seconds / n;
      }
    for (auto& d : per_step_.directions) d.calls /= steps_.size();
  }

  std::vector<RankDataset> datasets() const override {
    RankDataset calls{"transfer_calls", direction_names(), "copies", {}};
    RankDataset bytes{
        "transfer_bytes", direction_names(), "bytes copied between host and device memory", {}};
    RankDataset seconds{
        "transfer_seconds", direction_names(), "seconds issuing and waiting for the copies", {}};
    for (int r = 0; r < ranks_; ++r)
      for (int d = 0; d < kTransferDirections; ++d) {
        const double* v = all_.data() + static_cast<size_t>(r) * 3 * kTransferDirections;
        calls.values.push_back(v[d]);
        bytes.values.push_back(v[kTransferDirections + d]);
        seconds.values.push_back(v[2 * kTransferDirections + d]);
      }
    return {calls, bytes, seconds};
  }
  std::vector<std::string> summary_members(SummaryObject object) const override {
    if (object != SummaryObject::Stage) return {};
    std::string out = "      \"host_transfers_per_rank_per_step\": {";
    for (int d = 0; d < kTransferDirections; ++d) {
      const TransferOpStats& t = per_step_.directions[static_cast<size_t>(d)];
      out += fmt::format("{}\"{}\": {{\"calls\": {}, \"bytes\": {}, \"seconds\": {}}}",
                         d ? ", " : "", transfer_direction_name(static_cast<TransferDirection>(d)),
                         t.calls, json_number(t.bytes), json_number(t.seconds));
    }
    return {out + "}"};
  }
  // Copies are no collective: the table's traffic columns do not show them.
  std::string table_note() const override {
    if (per_step_.total().calls == 0) return "";
    const TransferOpStats &to_host = per_step_[TransferDirection::ToHost],
                          &to_device = per_step_[TransferDirection::ToDevice];
    return fmt::format(
        "  stage {}: host copies: {:.3f} MiB device->host ({:.2f} ms), {:.3f} MiB host->device "
        "({:.2f} ms) per rank per step\n",
        stage_, to_host.bytes / kMiB, to_host.seconds * 1e3, to_device.bytes / kMiB,
        to_device.seconds * 1e3);
  }

 private:
  int stage_, ranks_ = 1;
  std::vector<TransferStats> steps_;  // this rank's copies, a record per step
  TransferStats per_step_;            // their mean per step
  std::vector<double> all_;           // rank 0: ranks x (calls, bytes, seconds) per direction
};

// Each step's copies: this rank's counters around the step. While the stage runs, its copies are
// spans for the run's observer.
class TransferHook final : public StepHook {
 public:
  explicit TransferHook(const StageOutputs& outputs)
      : o_(outputs), figures_(std::make_shared<TransferFigures>(outputs.stage)) {
    o_.result.figures.push_back(figures_);
    this_rank_copies().report_spans_to(outputs.context.spans);
  }
  // The observer may not outlive the run.
  ~TransferHook() override { this_rank_copies().report_spans_to(nullptr); }
  TransferHook(const TransferHook&) = delete;
  TransferHook& operator=(const TransferHook&) = delete;

  void before_step(int64_t) override { before_ = this_rank_copies().stats(); }
  void on_record(const StepRecord&) override {
    figures_->add_step(transfers_between(before_, this_rank_copies().stats()));
  }
  void at_end() override { figures_->gather(o_.trainer.comms().world()); }

 private:
  StageOutputs o_;
  std::shared_ptr<TransferFigures> figures_;
  TransferStats before_;
};

}  // namespace

std::unique_ptr<TrainingExtension> make_transfer_figures() {
  return stage_hooks_extension(
      [](const StageOutputs& outputs) { return std::make_unique<TransferHook>(outputs); });
}

std::string describe_transfers(hid_t group) {
  if (!h5::exists(group, "transfer_bytes")) return "";
  std::vector<hsize_t> dims;
  const auto bytes = h5::read_doubles(group, "transfer_bytes", dims);
  const auto seconds = h5::read_doubles(group, "transfer_seconds", dims);
  if (bytes[0] + bytes[1] == 0) return "";
  std::string out = "    MiB copied by rank 0 (host copies):";
  for (int d = 0; d < kTransferDirections; ++d)
    out += fmt::format(" {} {:.3f} ({:.2f} ms)",
                       transfer_direction_name(static_cast<TransferDirection>(d)), bytes[d] / kMiB,
                       seconds[d] * 1e3);
  return out + "\n";
}

}  // namespace zm
