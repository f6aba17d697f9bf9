#include "modules/timeline/exposure_figures.hpp"

#include <fmt/format.h>

#include <cmath>

#include "comm/watched_mpi.hpp"
#include "core/error.hpp"
#include "io/h5.hpp"

namespace zm {

namespace {

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{}", value);
}

// {"all_reduce": ..., ...}: one figure per collective kind.
std::string by_op_json(const std::array<double, kCommOps>& values) {
  std::string out = "{";
  for (int op = 0; op < kCommOps; ++op)
    out += fmt::format("{}\"{}\": {}", op ? ", " : "", comm_op_name(static_cast<CommOp>(op)),
                       json_number(values[static_cast<size_t>(op)]));
  return out + "}";
}

// Per-rank lists of one figure over the steps: [[rank 0's...], [rank 1's...]].
std::string by_rank_json(const std::vector<std::vector<CommExposure>>& by_rank,
                         double CommExposure::*figure) {
  std::string out = "[";
  for (size_t r = 0; r < by_rank.size(); ++r) {
    out += r ? ", [" : "[";
    for (size_t i = 0; i < by_rank[r].size(); ++i)
      out += fmt::format("{}{}", i ? ", " : "", json_number(by_rank[r][i].*figure));
    out += "]";
  }
  return out + "]";
}

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (int op = 0; op < kCommOps; ++op) out.push_back(comm_op_name(static_cast<CommOp>(op)));
  return out;
}

// Overlap efficiency as a percentage, "-" where nothing was in flight.
std::string percent_or_dash(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.1f}", 100.0 * fraction) : std::string("-");
}

}  // namespace

void ExposureFigures::add_step(int64_t step, const CommExposure& exposure,
                               const std::array<double, kCommOps>& in_flight_by_op) {
  steps_.push_back(step);
  exposure_.push_back(exposure);
  in_flight_by_op_.push_back(in_flight_by_op);
}

void ExposureFigures::gather(const StageResult& result, Communicator& comm) {
  const std::vector<StepRecord>& records = result.steps;
  ZM_ASSERT(records.size() == exposure_.size(), "{} steps recorded, {} measured", records.size(),
            exposure_.size());
  // The bus figures over the timed steps.
  const size_t first = records.size() >= 2 ? 1 : 0;
  const double timed = static_cast<double>(records.size() - first);
  for (size_t i = first; i < records.size(); ++i)
    for (size_t op = 0; op < static_cast<size_t>(kCommOps); ++op) {
      bus_bytes_[op] += records[i].comm.ops[op].bytes / timed;
      in_flight_seconds_[op] += in_flight_by_op_[i][op] / timed;
    }
  for (size_t op = 0; op < static_cast<size_t>(kCommOps); ++op)
    busbw_[op] = bus_bytes_[op] > 0 ? bus_bandwidth(bus_bytes_[op], in_flight_seconds_[op]) : NAN;
  // Every rank's exposure per step, then its bus figures, to rank 0.
  const size_t steps = exposure_.size();
  std::vector<double> mine;
  mine.reserve(2 * steps + 3 * kCommOps);
  for (const CommExposure& e : exposure_) {
    mine.push_back(e.exposed);
    mine.push_back(e.in_flight);
  }
  for (const auto* figure : {&bus_bytes_, &in_flight_seconds_, &busbw_})
    mine.insert(mine.end(), figure->begin(), figure->end());
  const int ranks = comm.size();
  const size_t width = mine.size();
  std::vector<double> all(comm.rank() == 0 ? width * static_cast<size_t>(ranks) : 0);
  watched_gather(comm.watchdog(), mine.data(), static_cast<int>(width), MPI_DOUBLE, all.data(), 0,
                 comm.mpi_comm(), "the gather of exposed communication");
  if (comm.rank() != 0) return;
  exposure_by_rank_.assign(static_cast<size_t>(ranks), std::vector<CommExposure>(steps));
  all_bus_bytes_.clear();
  all_in_flight_seconds_.clear();
  all_busbw_.clear();
  CommExposure sum;
  for (size_t r = 0; r < static_cast<size_t>(ranks); ++r) {
    const double* v = all.data() + r * width;
    for (size_t s = 0; s < steps; ++s) {
      CommExposure& e = exposure_by_rank_[r][s];
      e.exposed = v[2 * s];
      e.in_flight = v[2 * s + 1];
      if (s < first) continue;
      sum.exposed += e.exposed;
      sum.in_flight += e.in_flight;
    }
    const double* bus = v + 2 * steps;
    all_bus_bytes_.insert(all_bus_bytes_.end(), bus, bus + kCommOps);
    all_in_flight_seconds_.insert(all_in_flight_seconds_.end(), bus + kCommOps, bus + 2 * kCommOps);
    all_busbw_.insert(all_busbw_.end(), bus + 2 * kCommOps, bus + 3 * kCommOps);
  }
  const double samples = static_cast<double>((steps - first) * static_cast<size_t>(ranks));
  if (samples > 0) {
    mean_exposure_.exposed = sum.exposed / samples;
    mean_exposure_.in_flight = sum.in_flight / samples;
  }
  overlap_efficiency_ = overlap_efficiency(sum.exposed, sum.in_flight);
}

std::vector<StepValue> ExposureFigures::step_values(int64_t step) const {
  ZM_ASSERT(!steps_.empty() && steps_.back() == step, "step {} was not measured", step + 1);
  return {{"comm_exposed", exposure_.back().exposed},
          {"comm_in_flight", exposure_.back().in_flight}};
}

std::vector<RankDataset> ExposureFigures::datasets() const {
  return {
      {"comm_bus_bytes_per_step", op_names(), "ring bytes sent per rank per timed step",
       all_bus_bytes_},
      {"comm_in_flight_seconds", op_names(),
       "seconds per timed step with a collective of the kind in flight", all_in_flight_seconds_},
      {"comm_busbw", op_names(),
       "bytes/s: bus bandwidth (nccl-tests convention) = comm_bus_bytes_per_step / "
       "comm_in_flight_seconds; NaN where none was timed",
       all_busbw_}};
}

// 1 - exposed / in flight over the timed steps and ranks (NaN: none).
std::vector<StageAttribute> ExposureFigures::attributes() const {
  return {{"overlap_efficiency", overlap_efficiency_}};
}

std::vector<std::string> ExposureFigures::summary_members(SummaryObject object) const {
  if (object == SummaryObject::Throughput)
    return {"\n        \"busbw_bytes_per_second\": " + by_op_json(busbw_) +
            ",\n        \"bus_bytes_per_step\": " + by_op_json(bus_bytes_) +
            ",\n        \"in_flight_seconds_per_step\": " + by_op_json(in_flight_seconds_)};
  std::string steps;
  for (size_t i = 0; i < steps_.size(); ++i)
    steps += fmt::format("{}{}", i ? ", " : "", steps_[i] + 1);
  return {fmt::format(
      "      \"comm_exposure\": {{\"exposed_seconds\": {}, \"in_flight_seconds\": {}, "
      "\"overlap_efficiency\": {},\n        \"steps\": [{}],\n"
      "        \"exposed_seconds_by_rank\": {},\n        \"in_flight_seconds_by_rank\": {}}}",
      json_number(mean_exposure_.exposed), json_number(mean_exposure_.in_flight),
      json_number(overlap_efficiency_), steps,
      by_rank_json(exposure_by_rank_, &CommExposure::exposed),
      by_rank_json(exposure_by_rank_, &CommExposure::in_flight))};
}

std::vector<TableColumn> ExposureFigures::table_columns() const {
  return {{"comm", "exposed", 8, fmt::format("{:.1f}", mean_exposure_.exposed * 1e3)},
          {"opt", "ovlp%", 6, percent_or_dash(overlap_efficiency_)}};
}

std::string ExposureFigures::throughput_heading() const {
  return "busbw: nccl-tests convention, rank 0";
}

std::string ExposureFigures::throughput_line_end() const {
  std::string busbw;
  for (int op = 0; op < kCommOps; ++op)
    if (std::isfinite(busbw_[static_cast<size_t>(op)]))
      busbw +=
          fmt::format("{}{} {:.3g}", busbw.empty() ? "" : ", ",
                      comm_op_name(static_cast<CommOp>(op)), busbw_[static_cast<size_t>(op)] / 1e9);
  return busbw.empty() ? "; busbw: no collectives" : "; busbw GB/s: " + busbw;
}

std::string describe_busbw(hid_t group) {
  if (!h5::exists(group, "comm_busbw")) return "";
  std::vector<hsize_t> dims;
  const auto busbw = h5::read_doubles(group, "comm_busbw", dims);
  std::string line;
  for (int op = 0; op < kCommOps && !busbw.empty(); ++op)
    if (std::isfinite(busbw[static_cast<size_t>(op)]))
      line += fmt::format(" {} {:.4g}", comm_op_name(static_cast<CommOp>(op)),
                          busbw[static_cast<size_t>(op)] / 1e9);
  return "    busbw GB/s (rank 0):" + (line.empty() ? std::string(" no collectives") : line) + "\n";
}

}  // namespace zm
