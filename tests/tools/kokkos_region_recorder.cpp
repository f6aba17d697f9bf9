// A Kokkos Tools library for tests: it records the profiling regions and the kernels a program
// launches, one line per event, in the file named by ZEROMINI_REGION_LOG:
//
//   push NAME      Kokkos::Profiling::pushRegion(NAME)
//   pop            Kokkos::Profiling::popRegion()
//   kernel NAME    the start of a parallel_for, parallel_reduce or parallel_scan named NAME
//
// In ZEROMINI_REGION_LOG, %r stands for the MPI rank (from the launcher's environment: PMI_RANK,
// OMPI_COMM_WORLD_RANK, PMIX_RANK or SLURM_PROCID; 0 without one) and %p for the process id, so
// that the ranks of one job write one file each. Without ZEROMINI_REGION_LOG it records nothing.
//
// Load it with KOKKOS_TOOLS_LIBS=path (Kokkos >= 4) or KOKKOS_PROFILE_LIBRARY=path (Kokkos 3).
// The C interface below is that of Kokkos_Profiling_C_Interface.h (the same in Kokkos 3.4 and
// 4.6); the library is plain C++ and does not include or link Kokkos.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

std::mutex log_mutex;
std::FILE* log_file = nullptr;
uint64_t next_kernel_id = 0;

std::string rank_from_environment() {
  for (const char* name : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value && *value) return value;
  }
  return "0";
}

// The log's name with %r and %p replaced (%% is a literal %).
std::string log_path(const char* pattern) {
  std::string path;
  for (const char* c = pattern; *c; ++c) {
    if (*c != '%' || !c[1]) {
      path += *c;
      continue;
    }
    ++c;
    if (*c == 'r')
      path += rank_from_environment();
    else if (*c == 'p')
      path += std::to_string(static_cast<long>(getpid()));
    else
      path += *c;
  }
  return path;
}

// One line: "EVENT NAME", or "EVENT" where name is null. The caller holds log_mutex.
void record(const char* event, const char* name) {
  if (!log_file) return;
  if (name)
    std::fprintf(log_file, "%s %s\n", event, name);
  else
    std::fprintf(log_file, "%s\n", event);
}

void begin_kernel(const char* name, uint64_t* kernel_id) {
  std::lock_guard<std::mutex> lock(log_mutex);
  record("kernel", name ? name : "");
  *kernel_id = next_kernel_id++;
}

}  // namespace

// NOLINTBEGIN(readability-identifier-naming): the names Kokkos looks up.
extern "C" {

struct Kokkos_Profiling_KokkosPDeviceInfo;

void kokkosp_init_library(const int /*loadSeq*/, const uint64_t /*interfaceVer*/,
                          const uint32_t /*devInfoCount*/,
                          Kokkos_Profiling_KokkosPDeviceInfo* /*deviceInfo*/) {
  const char* pattern = std::getenv("ZEROMINI_REGION_LOG");
  if (!pattern || !*pattern) return;
  const std::string path = log_path(pattern);
  std::lock_guard<std::mutex> lock(log_mutex);
  log_file = std::fopen(path.c_str(), "w");
  if (!log_file)
    std::fprintf(stderr, "kokkos_region_recorder: cannot write %s; recording nothing\n",
                 path.c_str());
}

void kokkosp_finalize_library() {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (!log_file) return;
  std::fclose(log_file);
  log_file = nullptr;
}

void kokkosp_push_profile_region(const char* name) {
  std::lock_guard<std::mutex> lock(log_mutex);
  record("push", name ? name : "");
}

void kokkosp_pop_profile_region() {
  std::lock_guard<std::mutex> lock(log_mutex);
  record("pop", nullptr);
}

void kokkosp_begin_parallel_for(const char* name, const uint32_t /*devID*/, uint64_t* kID) {
  begin_kernel(name, kID);
}

void kokkosp_begin_parallel_reduce(const char* name, const uint32_t /*devID*/, uint64_t* kID) {
  begin_kernel(name, kID);
}

void kokkosp_begin_parallel_scan(const char* name, const uint32_t /*devID*/, uint64_t* kID) {
  begin_kernel(name, kID);
}

void kokkosp_end_parallel_for(const uint64_t /*kID*/) {}
void kokkosp_end_parallel_reduce(const uint64_t /*kID*/) {}
void kokkosp_end_parallel_scan(const uint64_t /*kID*/) {}

}  // extern "C"
// NOLINTEND(readability-identifier-naming)
