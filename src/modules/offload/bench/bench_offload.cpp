// ZeRO-Offload side by side, in one run:
//
//   OffloadAdamW/<millions of parameters>  the device's AdamW (kernels::adamw_update on the
//       default execution space, over device memory) and the host's (host_adamw_update on the
//       host execution space, over host memory: pinned in CUDA builds), timed alternately on the
//       same values; each one's parameters per second, the host's per host core, and their ratio
//       (host_over_device: above 1 the host is faster). On a host build both run on the host's
//       cores, the first as team kernels and the second as the plain threaded loop.
//   OffloadStep/stage  a quickstart step (inputs/quickstart.toml's model) without and with
//       zero.offload_optimizer = "host" (stage 3: zero.offload_params = "host" too), stepped in
//       alternation: offload_over_none is the step time ratio. On a host build the "device" is
//       the host, so the ratio shows the cost of the extra copies and staging, not what offload
//       saves on a GPU.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>

#include "bench_util.hpp"
#include "core/compat.hpp"
#include "core/memory.hpp"
#include "core/stage_spec.hpp"
#include "kernels/adamw.hpp"
#include "kernels/init.hpp"
#include "paired_steps.hpp"

namespace {

namespace k = zm::kernels;

// grads, params, m and v of n elements, in device memory or in host memory (the Host category).
struct AdamWState {
  zm::TrackedBuffer<float> grads, params, m, v;
  AdamWState(int64_t n, zm::MemCategory category)
      : grads("grads", category, static_cast<size_t>(n), nullptr),
        params("params", category, static_cast<size_t>(n), nullptr),
        m("m", category, static_cast<size_t>(n), nullptr),
        v("v", category, static_cast<size_t>(n), nullptr) {
    // Gradients and parameters as training has them; the moments start at zero.
    k::init_normal(k::kDefaultTeamShape, grads.data(), n, 1e-2f, 1, 0);
    k::init_normal(k::kDefaultTeamShape, params.data(), n, 2e-2f, 2, 0);
    Kokkos::fence();
  }
};

void adamw_host_and_device(benchmark::State& state) {
  const int64_t n = state.range(0) * 1000000;
  AdamWState on_device(n, zm::MemCategory::Optimizer), on_host(n, zm::MemCategory::Host);
  const k::AdamWParams hp{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1};
  auto seconds_of = [](auto&& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    Kokkos::fence();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto device_update = [&] {
    k::adamw_update(k::kDefaultTeamShape, on_device.params.data(), on_device.grads.data(),
                    on_device.m.data(), on_device.v.data(), n, hp);
  };
  auto host_update = [&] {
    k::host_adamw_update(on_host.params.data(), on_host.grads.data(), on_host.m.data(),
                         on_host.v.data(), n, hp);
  };
  seconds_of(device_update);  // first touch
  seconds_of(host_update);
  double device_seconds = 0, host_seconds = 0;
  int64_t pairs = 0;
  for (auto _ : state) {
    // Which goes first alternates, so that neither always finds the caches the other left.
    const bool device_first = pairs % 2 == 0;
    double device = 0, host = 0;
    if (device_first) device = seconds_of(device_update);
    host = seconds_of(host_update);
    if (!device_first) device = seconds_of(device_update);
    device_seconds += device;
    host_seconds += host;
    ++pairs;
    state.SetIterationTime(host);
  }
  const double cores = Kokkos::DefaultHostExecutionSpace().concurrency();
  const double device_rate = static_cast<double>(n) * pairs / device_seconds;
  const double host_rate = static_cast<double>(n) * pairs / host_seconds;
  state.counters["device_Mparams_per_s"] = device_rate / 1e6;
  state.counters["host_Mparams_per_s"] = host_rate / 1e6;
  state.counters["host_Mparams_per_s_per_core"] = host_rate / 1e6 / cores;
  state.counters["host_cores"] = cores;
  state.counters["host_over_device"] = host_rate / device_rate;
}

// Fixed iteration counts keep ranks in step when run under mpiexec.
BENCHMARK(adamw_host_and_device)
    ->Name("OffloadAdamW/Mparams")
    ->Arg(1)
    ->Arg(16)
    ->Iterations(10)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

zm::Deck quickstart_deck(int stage, bool offload) {
  std::vector<std::string> overrides = {fmt::format("zero.stage={}", stage)};
  if (offload) overrides.push_back("zero.offload_optimizer=host");
  // Parameters go to the host too where the stage holds a shard of them (the stage table says
  // which, as the deck's validation asks it).
  if (offload && zm::stage_spec(stage).gathers_parameters())
    overrides.push_back("zero.offload_params=host");
  return zm::bench::quickstart_model_deck(64, 4, 512, overrides);
}

void offload_step(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  zm::bench::compare_in_alternation(state, stage, quickstart_deck(stage, false),
                                    quickstart_deck(stage, true), {"none", "offload"});
}

BENCHMARK(offload_step)
    ->Name("OffloadStep/stage")
    ->DenseRange(1, 3)
    ->Iterations(15)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
