#include "modules/estimate/measure_machine.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>

#include "comm/communicator.hpp"
#include "core/compat.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "kernels/adamw.hpp"
#include "kernels/common.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/team_shape.hpp"

namespace zm {

namespace {

// Seconds of the fastest of `repeats` calls of `work`, after one call that warms it up (first
// touches, library start-up); the device is fenced around each.
double best_seconds(int repeats, const std::function<void()>& work) {
  work();
  Kokkos::fence();
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const double start = wall_seconds();
    work();
    Kokkos::fence();
    best = std::min(best, wall_seconds() - start);
  }
  return best;
}

// Seconds of one n x n x n GEMM in T.
template <typename T>
double gemm_seconds(int64_t n) {
  Kokkos::View<T*> a("estimate gemm A", n * n), b("estimate gemm B", n * n),
      c("estimate gemm C", n * n);
  Kokkos::deep_copy(a, static_cast<T>(0.5f));
  Kokkos::deep_copy(b, static_cast<T>(0.25f));
  return best_seconds(3, [&] {
    kernels::gemm<T>(false, false, n, n, n, static_cast<T>(1.0f), a.data(), b.data(),
                     static_cast<T>(0.0f), c.data());
  });
}

// Seconds of one y += x over n floats (12 bytes per element).
double stream_seconds(int64_t n) {
  Kokkos::View<float*> x("estimate stream x", n), y("estimate stream y", n);
  Kokkos::deep_copy(x, 1.0f);
  return best_seconds(
      3, [&] { kernels::add_into(kernels::kDefaultTeamShape, y.data(), x.data(), n); });
}

// The host side: seconds of one copy of n floats from device to host memory (pinned in
// CUDA builds; a memcpy on a host build, as ZeRO-Offload's copies are), and of the host's AdamW
// over n parameters.
double to_host_seconds(int64_t n) {
  const auto count = static_cast<size_t>(n);
  TrackedBuffer<float> device("estimate copy source", MemCategory::Workspace, count, nullptr);
  TrackedBuffer<float> host("estimate copy target", MemCategory::Host, count, nullptr);
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  const Kokkos::View<float*, Kokkos::HostSpace, Unmanaged> to(host.data(), count);
  const Kokkos::View<const float*, MemSpace, Unmanaged> from(device.data(), count);
  return best_seconds(3, [&] {
    if (device_is_host())
      std::memcpy(host.data(), device.data(), count * sizeof(float));
    else
      Kokkos::deep_copy(to, from);
  });
}

double host_adamw_seconds(int64_t n) {
  const auto count = static_cast<size_t>(n);
  std::array<TrackedBuffer<float>, 4> state = {
      TrackedBuffer<float>("estimate adamw p", MemCategory::Host, count, nullptr),
      TrackedBuffer<float>("estimate adamw g", MemCategory::Host, count, nullptr),
      TrackedBuffer<float>("estimate adamw m", MemCategory::Host, count, nullptr),
      TrackedBuffer<float>("estimate adamw v", MemCategory::Host, count, nullptr)};
  const kernels::AdamWParams hp{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  return best_seconds(3, [&] {
    kernels::host_adamw_update(state[0].data(), state[1].data(), state[2].data(), state[3].data(),
                               n, hp);
  });
}

// Seconds of one all-reduce of n floats on `comm`.
double all_reduce_seconds(Communicator& comm, int64_t n) {
  Kokkos::View<float*> data("estimate all-reduce", n);
  return best_seconds(
      3, [&] { comm.all_reduce_sum(data.data(), static_cast<size_t>(n), DType::F32); });
}

}  // namespace

Machine measure_machine(Communicator& comm, int64_t nodes) {
  // Large enough to run at a GEMM's sustained rate on host cores, small enough to take tens of
  // milliseconds there; a GPU runs it in microseconds, below its rate (the estimate errs long).
  constexpr int64_t kGemmSize = kernels::kHostExecution ? 384 : 2048;
  constexpr int64_t kStreamFloats = int64_t(1) << 22;     // 16 MiB per array
  constexpr int64_t kAllReduceFloats = int64_t(1) << 20;  // 4 MiB
  // Seconds measured here, the slowest rank's: every rank prices the same machine.
  std::array<double, 7> seconds{};
  seconds[0] = gemm_seconds<float>(kGemmSize);
#if ZEROMINI_HAVE_BF16
  seconds[1] = gemm_seconds<bf16>(kGemmSize);
#else
  seconds[1] = seconds[0];
#endif
  seconds[2] = stream_seconds(kStreamFloats);
  // Every rank at once, as the node's ranks share its host memory.
  seconds[5] = to_host_seconds(kStreamFloats);
  seconds[6] = host_adamw_seconds(kStreamFloats);
  const int ranks = comm.size();
  if (ranks > 1) {
    seconds[3] = all_reduce_seconds(comm, kAllReduceFloats);
    seconds[4] = all_reduce_seconds(comm, 1);
  }
  MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX,
                comm.mpi_comm());

  Machine m;
  m.name = "measured at start-up";
  m.devices_per_node = std::max<int64_t>(1, ranks / std::max<int64_t>(1, nodes));
  const double gemm_flops = 2.0 * std::pow(static_cast<double>(kGemmSize), 3);
  m.sustained_flops_fp32 = gemm_flops / seconds[0];
  m.sustained_flops_mixed = gemm_flops / seconds[1];
  m.memory_bandwidth = 12.0 * static_cast<double>(kStreamFloats) / seconds[2];
  HostSide host;
  host.link = kernels::kHostExecution ? "memcpy (host build)" : "device to pinned host copy";
  host.link_bandwidth = 4.0 * static_cast<double>(kStreamFloats) / seconds[5];
  host.adamw_params_per_second = static_cast<double>(kStreamFloats) / seconds[6];
  host.memory_per_node_bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  m.host = host;
  if (ranks > 1) {
    // A ring all-reduce moves 2 (N - 1) / N of the buffer per rank, in 2 (N - 1) hops.
    const double hops = 2.0 * (ranks - 1);
    const double moved = hops / ranks * 4.0 * static_cast<double>(kAllReduceFloats);
    m.intra_node_latency = m.inter_node_latency = seconds[4] / hops;
    m.intra_node_bandwidth = m.inter_node_bandwidth =
        moved / std::max(seconds[3] - seconds[4], 1e-9);
  } else {
    m.intra_node_bandwidth = m.inter_node_bandwidth = 1e12;  // no link: nothing to price
  }
  m.description = fmt::format(
      "GEMM {:.1f} GFLOP/s fp32, {:.1f} bf16; memory {:.1f} GB/s; link {}; host copies {:.1f} "
      "GB/s, host AdamW {:.2f} G parameters/s per rank",
      m.sustained_flops_fp32 / 1e9, m.sustained_flops_mixed / 1e9, m.memory_bandwidth / 1e9,
      ranks > 1 ? fmt::format("{:.2f} GB/s, {:.1f} us per hop", m.intra_node_bandwidth / 1e9,
                              m.intra_node_latency * 1e6)
                : std::string("none (one rank)"),
      host.link_bandwidth / 1e9, host.adamw_params_per_second / 1e9);
  return m;
}

}  // namespace zm
