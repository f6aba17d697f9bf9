#include "train/exposure_figures.hpp"

#include "comm/watched_mpi.hpp"

namespace zm {

void gather_exposure(StageResult& result, Communicator& comm) {
  const size_t steps = result.steps.size();
  std::vector<double> mine;
  mine.reserve(2 * steps);
  for (const StepRecord& r : result.steps) {
    mine.push_back(r.exposure.exposed);
    mine.push_back(r.exposure.in_flight);
  }
  const int ranks = comm.size();
  std::vector<double> all(comm.rank() == 0 ? 2 * steps * static_cast<size_t>(ranks) : 0);
  watched_gather(comm.watchdog(), mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE,
                 all.data(), 0, comm.mpi_comm(), "the gather of exposed communication");
  if (comm.rank() != 0) return;
  result.exposure_by_rank.assign(static_cast<size_t>(ranks), std::vector<CommExposure>(steps));
  const size_t first = steps >= 2 ? 1 : 0;
  CommExposure sum;
  for (size_t r = 0; r < static_cast<size_t>(ranks); ++r)
    for (size_t s = 0; s < steps; ++s) {
      CommExposure& e = result.exposure_by_rank[r][s];
      e.exposed = all[2 * (r * steps + s)];
      e.in_flight = all[2 * (r * steps + s) + 1];
      if (s < first) continue;
      sum.exposed += e.exposed;
      sum.in_flight += e.in_flight;
    }
  const double samples = static_cast<double>((steps - first) * static_cast<size_t>(ranks));
  if (samples > 0) {
    result.mean_exposure.exposed = sum.exposed / samples;
    result.mean_exposure.in_flight = sum.in_flight / samples;
  }
  result.overlap_efficiency = overlap_efficiency(sum.exposed, sum.in_flight);
}

}  // namespace zm
