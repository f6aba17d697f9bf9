#include "core/build_info.hpp"

#include <fmt/format.h>
#include <hdf5.h>
#include <mpi.h>

#include "core/compat.hpp"
#include "core/modules.hpp"
#include "git_revision.hpp"  // generated at build time: ZEROMINI_GIT_REVISION, ZEROMINI_VERSION

namespace zm {

BuildFeatures build_features() {
  BuildFeatures f;
#ifdef ZEROMINI_HAVE_NCCL
  f.nccl = true;
#endif
  f.bf16 = ZEROMINI_HAVE_BF16 != 0;
#ifdef KOKKOS_ENABLE_CUDA
  f.cuda = true;
#endif
  f.kokkos_version = fmt::format("{}.{}.{}", KOKKOS_VERSION / 10000, KOKKOS_VERSION / 100 % 100,
                                 KOKKOS_VERSION % 100);
  return f;
}

std::string git_revision() {
  return ZEROMINI_GIT_REVISION;
}

std::string zeromini_version() {
  return ZEROMINI_VERSION;
}

std::string kokkos_backends() {
  std::string list;
  auto add = [&](const char* name) { list += (list.empty() ? "" : ", ") + std::string(name); };
#ifdef KOKKOS_ENABLE_CUDA
  add("Cuda");
#endif
#ifdef KOKKOS_ENABLE_HIP
  add("HIP");
#endif
#ifdef KOKKOS_ENABLE_OPENMP
  add("OpenMP");
#endif
#ifdef KOKKOS_ENABLE_THREADS
  add("Threads");
#endif
#ifdef KOKKOS_ENABLE_SERIAL
  add("Serial");
#endif
  return list;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, static_cast<size_t>(length));
  auto newline = version.find('\n');
  if (newline != std::string::npos) version.resize(newline);
  for (char& c : version)
    if (c == '\t') c = ' ';
  return version;
}

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return fmt::format("{}.{}.{}{}", major, minor, release,
#ifdef H5_HAVE_PARALLEL
                     " (parallel)"
#else
                     " (serial)"
#endif
  );
}

std::string version_report() {
  const BuildFeatures f = build_features();
  return fmt::format(
      "zeromini {} (git {})\n"
      "  Kokkos      {} (backends: {}; default execution space: {})\n"
      "  MPI         {}\n"
      "  HDF5        {}\n"
      "  NCCL        {}\n"
      "  bf16        {}\n"
      "  modules     {}\n",
      ZEROMINI_VERSION, git_revision(), f.kokkos_version, kokkos_backends(), ExecSpace::name(),
      mpi_library_version(), hdf5_version(),
      f.nccl ? "built in" : "not built (needs a CUDA-enabled Kokkos)",
      f.bf16 ? "available" : "not available (Kokkos < 4)", built_modules());
}

}  // namespace zm
