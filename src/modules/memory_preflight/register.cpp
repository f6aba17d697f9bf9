// Out-of-memory predicted, not suffered: before a stage allocates anything, the planner's bytes
// per rank are compared with the memory this rank can have (a training extension's before_stage,
// train/training_extensions.hpp). It throws a CollectiveError on every rank alike, naming the
// planned bytes per category and the memory available when the run cannot fit: device memory in
// GPU builds, otherwise the host's MemAvailable shared by the ranks on this node.
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "comm/node_split.hpp"
#include "core/error.hpp"
#include "plan/planner.hpp"
#include "plan/run_options.hpp"
#include "train/training_extensions.hpp"

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

class MemoryPreflight final : public TrainingExtension {
 public:
  void before_stage(const Deck& deck, int stage, Communicator& comm) override {
    check_memory_fits(deck, stage, comm);
  }
};

}  // namespace

void register_module_memory_preflight() {
  add_training_extension([] { return std::make_unique<MemoryPreflight>(); });
}

}  // namespace zm
