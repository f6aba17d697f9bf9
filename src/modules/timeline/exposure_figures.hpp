// The stage's figures of exposed communication (exposure.hpp defines them) and of the bus
// bandwidth per collective kind, as the run reports them (io/stage_figures.hpp):
//   results.h5   step_times columns comm_exposed, comm_in_flight (per step and rank); stage
//                attribute overlap_efficiency; datasets comm_bus_bytes_per_step,
//                comm_in_flight_seconds, comm_busbw (ranks, collective kinds)
//   summary.json the stage's comm_exposure, and in its throughput busbw_bytes_per_second,
//                bus_bytes_per_step and in_flight_seconds_per_step (rank 0's)
//   closing table the columns "exposed" (mean ms per step) and "ovlp%", and each throughput
//                line's busbw
//   inspect      the busbw line of each stage
#pragma once

#include <array>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/run_records.hpp"
#include "io/stage_figures.hpp"
#include "modules/timeline/exposure.hpp"

namespace zm {

class ExposureFigures final : public StageFigures {
 public:
  // After step `step` (0-based): this rank's exposure and seconds in flight per collective kind.
  void add_step(int64_t step, const CommExposure& exposure,
                const std::array<double, kCommOps>& in_flight_by_op);
  // Collective, once the stage's steps are over (`result.steps` holds this rank's records): the
  // bus figures over the timed steps (all but the first when there are two or more, as for the
  // step times), and on rank 0 every rank's figures, their means and the overlap efficiency.
  void gather(const StageResult& result, Communicator& comm);

  std::vector<StepValue> step_values(int64_t step) const override;
  std::vector<RankDataset> datasets() const override;
  std::vector<StageAttribute> attributes() const override;
  std::vector<std::string> summary_members(SummaryObject object) const override;
  std::vector<TableColumn> table_columns() const override;
  std::string throughput_heading() const override;
  std::string throughput_line_end() const override;

 private:
  // This rank's, per step.
  std::vector<int64_t> steps_;
  std::vector<CommExposure> exposure_;
  std::vector<std::array<double, kCommOps>> in_flight_by_op_;
  // This rank's, per collective kind and timed step: ring bytes, seconds in flight, their ratio.
  std::array<double, kCommOps> bus_bytes_{}, in_flight_seconds_{}, busbw_{};
  // Rank 0: every rank's exposure per step ([rank][step]), the means over the timed steps and
  // ranks, 1 - sum(exposed) / sum(in flight) over the same, and every rank's bus figures
  // (ranks x kinds).
  std::vector<std::vector<CommExposure>> exposure_by_rank_;
  CommExposure mean_exposure_;
  double overlap_efficiency_ = 0.0;
  std::vector<double> all_bus_bytes_, all_in_flight_seconds_, all_busbw_;
};

// The stage's busbw line of `zeromini inspect`, from results.h5 ("" without comm_busbw).
std::string describe_busbw(hid_t stage_group);

}  // namespace zm
