#include "modules/zero_infinity/nvme_figures.hpp"

#include <fmt/format.h>

#include <vector>

#include "comm/mesh_comms.hpp"
#include "comm/watched_mpi.hpp"
#include "io/h5.hpp"
#include "io/stage_figures.hpp"
#include "modules/zero_infinity/async_io.hpp"
#include "train/stage_hooks_extension.hpp"

namespace zm {

namespace {

constexpr int kColumns = 3;  // bytes read, bytes written, seconds waited: per step
const char* const kColumnNames[kColumns] = {"bytes_read", "bytes_written", "seconds_waited"};

class NvmeFigures final : public StageFigures {
 public:
  explicit NvmeFigures(int stage) : stage_(stage) {}

  void add_step(const nvme::IoTotals& before, const nvme::IoTotals& after) {
    sums_[0] += static_cast<double>(after.bytes_read - before.bytes_read);
    sums_[1] += static_cast<double>(after.bytes_written - before.bytes_written);
    sums_[2] += after.seconds_waited - before.seconds_waited;
    ++steps_;
  }

  // Collective: every rank's means per step, to rank 0.
  void gather(Communicator& world) {
    for (double& sum : sums_) sum /= steps_ > 0 ? static_cast<double>(steps_) : 1.0;
    ranks_ = world.size();
    all_.assign(static_cast<size_t>(kColumns * ranks_), 0.0);
    watched_gather(world.watchdog(), sums_, kColumns, MPI_DOUBLE, all_.data(), 0, world.mpi_comm(),
                   "the gather of the NVMe transfers");
  }

  std::vector<RankDataset> datasets() const override {
    if (!moved()) return {};
    return {{"nvme",
             {kColumnNames, kColumnNames + kColumns},
             "per rank per step: bytes read from and written to the swap files, seconds waited",
             all_}};
  }
  std::vector<std::string> summary_members(SummaryObject object) const override {
    if (object != SummaryObject::Stage || !moved()) return {};
    return {fmt::format(
        "      \"nvme_per_rank_per_step\": {{\"bytes_read\": {}, \"bytes_written\": {}, "
        "\"seconds_waited\": {}}}",
        all_[0], all_[1], all_[2])};
  }
  std::string table_note() const override {
    if (!moved()) return "";
    return fmt::format(
        "  stage {}: NVMe: {:.3f} MiB read, {:.3f} MiB written, {:.2f} ms waited per rank per "
        "step (rank 0)\n",
        stage_, all_[0] / (1 << 20), all_[1] / (1 << 20), all_[2] * 1e3);
  }

 private:
  bool moved() const { return !all_.empty() && all_[0] + all_[1] > 0; }

  int stage_, ranks_ = 1;
  int64_t steps_ = 0;
  double sums_[kColumns] = {};
  std::vector<double> all_;  // rank 0: ranks x kColumns
};

SpanObserver* observer = nullptr;  // nvme_span_observer()

class NvmeHook final : public StepHook {
 public:
  explicit NvmeHook(const StageOutputs& outputs)
      : o_(outputs), figures_(std::make_shared<NvmeFigures>(outputs.stage)) {
    o_.result.figures.push_back(figures_);
    observer = outputs.context.spans;
  }
  // The observer may not outlive the run.
  ~NvmeHook() override { observer = nullptr; }
  NvmeHook(const NvmeHook&) = delete;
  NvmeHook& operator=(const NvmeHook&) = delete;
  void before_step(int64_t) override { before_ = nvme::this_rank_io(); }
  void on_record(const StepRecord&) override { figures_->add_step(before_, nvme::this_rank_io()); }
  void at_end() override { figures_->gather(o_.trainer.comms().world()); }

 private:
  StageOutputs o_;
  std::shared_ptr<NvmeFigures> figures_;
  nvme::IoTotals before_;
};

}  // namespace

SpanObserver* nvme_span_observer() {
  return observer;
}

std::unique_ptr<TrainingExtension> make_nvme_figures() {
  return stage_hooks_extension(
      [](const StageOutputs& outputs) { return std::make_unique<NvmeHook>(outputs); });
}

std::string describe_nvme(hid_t group) {
  if (!h5::exists(group, "nvme")) return "";
  std::vector<hsize_t> dims;
  const auto values = h5::read_doubles(group, "nvme", dims);
  return fmt::format(
      "    NVMe per step, rank 0: {:.3f} MiB read, {:.3f} MiB written, {:.2f} ms waited\n",
      values[0] / (1 << 20), values[1] / (1 << 20), values[2] * 1e3);
}

}  // namespace zm
