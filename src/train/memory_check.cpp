#include "train/memory_check.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include "comm/node_split.hpp"
#include "core/error.hpp"
#include "plan/planner.hpp"
#include "plan/run_options.hpp"

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace zm {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

#if !defined(KOKKOS_ENABLE_CUDA)
// Bytes the kernel says can be allocated without swapping (MemAvailable), or 0 if unknown.
double host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      double kib = 0;
      fields >> kib;
      return kib * 1024.0;
    }
  }
  return 0;
}
#endif

}  // namespace

void check_memory_fits(const Deck& deck, int stage, Communicator& comm) {
  const MemoryPlan planned = plan_memory(deck, stage, run_zero_mesh(deck, stage, comm));
  double available = 0;
  std::string where;
#if defined(KOKKOS_ENABLE_CUDA)
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  available = static_cast<double>(free_bytes);
  where = fmt::format("{:.2f} GiB free on this rank's GPU", available / kGiB);
#else
  const int ranks_here = NodeComm(comm.mpi_comm()).size();
  const double host = host_available_bytes();
  available = host / ranks_here;
  where = fmt::format("MemAvailable {:.2f} GiB on this node shared by {} ranks", host / kGiB,
                      ranks_here);
#endif
  // Every rank decides on the smallest availability, so that all stop (or go) together.
  double least = available;
  MPI_Allreduce(&available, &least, 1, MPI_DOUBLE, MPI_MIN, comm.mpi_comm());
  if (least <= 0 || planned.total() <= least) return;
  std::string categories;
  for (int c = 0; c < kMemCategories; ++c)
    categories +=
        fmt::format("{}{} {:.2f}", c ? ", " : "", mem_category_name(static_cast<MemCategory>(c)),
                    planned.bytes[static_cast<size_t>(c)] / kGiB);
  throw CollectiveError(fmt::format(
      "stage {} at {} ranks needs {:.2f} GiB per rank ({} GiB) but only {:.2f} GiB is available "
      "per rank (on this rank: {}). Use more ranks, a higher zero.stage, a smaller "
      "train.micro_batch or model; `zeromini plan` shows the figures for any rank count.",
      stage, comm.size(), planned.total() / kGiB, categories, least / kGiB, where));
}

std::vector<MemoryFigures> gather_memory_figures(const MemoryFigures& mine, Communicator& comm) {
  // Reporting traffic goes straight to MPI: it is not part of the training step's accounting.
  constexpr int kValues = 2 * kMemCategories + 1;
  std::vector<unsigned long long> send(kValues);
  for (int c = 0; c < kMemCategories; ++c) {
    send[static_cast<size_t>(c)] = mine.current[static_cast<size_t>(c)];
    send[static_cast<size_t>(kMemCategories + c)] = mine.peak[static_cast<size_t>(c)];
  }
  send[kValues - 1] = mine.peak_total;
  std::vector<unsigned long long> all(static_cast<size_t>(kValues * comm.size()));
  MPI_Gather(send.data(), kValues, MPI_UNSIGNED_LONG_LONG, all.data(), kValues,
             MPI_UNSIGNED_LONG_LONG, 0, comm.mpi_comm());
  std::vector<MemoryFigures> out;
  if (comm.rank() != 0) return out;
  for (int r = 0; r < comm.size(); ++r) {
    MemoryFigures f;
    const unsigned long long* v = all.data() + static_cast<size_t>(r * kValues);
    for (int c = 0; c < kMemCategories; ++c) {
      f.current[static_cast<size_t>(c)] = v[c];
      f.peak[static_cast<size_t>(c)] = v[kMemCategories + c];
    }
    f.peak_total = v[kValues - 1];
    out.push_back(f);
  }
  return out;
}

}  // namespace zm
