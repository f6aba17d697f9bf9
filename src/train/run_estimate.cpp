#include "train/run_estimate.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/communicator.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/host_transfer.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "kernels/adamw.hpp"
#include "kernels/common.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/team_shape.hpp"
#include "plan/planner.hpp"

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
// CUDA builds; a memcpy on a host build), and of the host's AdamW over n parameters.
double to_host_seconds(int64_t n) {
  const auto count = static_cast<size_t>(n);
  TrackedBuffer<float> device("estimate copy source", MemCategory::Workspace, count, nullptr);
  TrackedBuffer<float> host("estimate copy target", MemCategory::Host, count, nullptr);
  HostTransfers copies;
  return best_seconds(3, [&] {
    copies.copy(TransferDirection::ToHost, host.data(), device.data(), count * sizeof(float));
    copies.wait();
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

namespace {

double run_seconds_of(const Deck& deck, const Machine& machine, int64_t ranks,
                      std::vector<double>* per_stage) {
  double total = 0;
  for (const int stage : deck.stages()) {
    const double step = plan_point(deck, stage, ranks, &machine).step_seconds_overlapped;
    if (per_stage) per_stage->push_back(step);
    total += step * static_cast<double>(deck.train.steps);
  }
  return total;
}

// The keys that size a run: where each lives in a deck. (Accessor functions rather than pointers
// to members, whose declarations nvcc's front end rewrites into ones GCC warns about.)
struct SizeKey {
  const char* name;
  int64_t& (*in)(Deck&);
  int64_t of(const Deck& deck) const { return in(const_cast<Deck&>(deck)); }  // read only
};

const std::vector<SizeKey>& size_keys() {
  static const std::vector<SizeKey> keys = {
      {"train.steps", [](Deck& d) -> int64_t& { return d.train.steps; }},
      {"model.seq_len", [](Deck& d) -> int64_t& { return d.model.seq_len; }},
      {"model.layers", [](Deck& d) -> int64_t& { return d.model.layers; }},
      {"model.dim", [](Deck& d) -> int64_t& { return d.model.dim; }},
      {"model.vocab", [](Deck& d) -> int64_t& { return d.model.vocab; }},
      {"train.micro_batch", [](Deck& d) -> int64_t& { return d.train.micro_batch; }},
      {"train.grad_accum", [](Deck& d) -> int64_t& { return d.train.grad_accum; }},
  };
  return keys;
}

}  // namespace

RunEstimate estimate_run(const Deck& deck, const Machine& machine, int64_t ranks,
                         const std::string& machine_source) {
  RunEstimate estimate;
  estimate.machine = machine_source;
  estimate.run_seconds = run_seconds_of(deck, machine, ranks, &estimate.step_seconds);
  if (estimate.run_seconds <= deck.output.long_run_s || deck.output.long_run_s <= 0)
    return estimate;
  // The key that made it long: the one whose default value shortens the run most, by at least
  // half (model.dim keeps the deck's heads where its default divides by them).
  const Deck defaults;
  double shortest = estimate.run_seconds;
  for (const SizeKey& key : size_keys()) {
    if (key.of(deck) <= key.of(defaults)) continue;
    Deck variant = deck;
    key.in(variant) = key.of(defaults);
    if (variant.model.dim % variant.model.heads != 0) continue;
    double seconds = 0;
    try {
      seconds = run_seconds_of(variant, machine, ranks, nullptr);
    } catch (const Error&) {
      continue;  // a combination the planner refuses (e.g. a model dimension no longer divides)
    }
    if (seconds < shortest) {
      shortest = seconds;
      estimate.long_key = key.name;
      estimate.run_seconds_at_default = seconds;
    }
  }
  if (shortest > 0.5 * estimate.run_seconds) estimate.long_key.clear();
  return estimate;
}

std::string human_seconds(double seconds) {
  if (seconds < 120) return fmt::format("{:.2g} s", seconds);
  if (seconds < 7200) return fmt::format("{:.1f} min", seconds / 60);
  if (seconds < 172800) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} d", seconds / 86400);
}

void report_run_estimate(const Deck& deck, const RunEstimate& estimate) {
  std::string steps;
  const std::vector<int> stages = deck.stages();
  for (size_t i = 0; i < stages.size(); ++i)
    steps += fmt::format("{}{}", i ? ", " : "",
                         stages.size() > 1 ? fmt::format("stage {} {}", stages[i],
                                                         human_seconds(estimate.step_seconds[i]))
                                           : human_seconds(estimate.step_seconds[i]));
  log_root("Estimate (planner; machine: {}): {} per step, about {} for the run's {} step{}{}\n",
           estimate.machine, steps, human_seconds(estimate.run_seconds), deck.train.steps,
           deck.train.steps == 1 ? "" : "s", stages.size() > 1 ? " of each stage" : "");
  if (deck.output.long_run_s <= 0 || estimate.run_seconds <= deck.output.long_run_s) return;
  const Deck defaults;
  if (!estimate.long_key.empty()) {
    // The deck's value and the default of the key named.
    int64_t value = 0, fallback = 0;
    for (const auto& key : size_keys())
      if (estimate.long_key == key.name) {
        value = key.of(deck);
        fallback = key.of(defaults);
      }
    log_root(
        "warning: this run is estimated at {}, longer than output.long_run_s = {}; most of it "
        "from {} = {} (at its default {}: {})\n",
        human_seconds(estimate.run_seconds), human_seconds(deck.output.long_run_s),
        estimate.long_key, value, fallback, human_seconds(estimate.run_seconds_at_default));
  } else {
    log_root(
        "warning: this run is estimated at {}, longer than output.long_run_s = {} (no single "
        "key makes it long)\n",
        human_seconds(estimate.run_seconds), human_seconds(deck.output.long_run_s));
  }
}

struct FirstStepNotice::State {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::thread thread;
};

FirstStepNotice::FirstStepNotice(int stage, int64_t step, double estimated_seconds)
    : state_(std::make_unique<State>()) {
  double delay = 60;
  if (const char* test_delay = std::getenv("ZEROMINI_TEST_FIRST_STEP_NOTICE_S"))
    delay = std::atof(test_delay);
  State* state = state_.get();
  state->thread = std::thread([state, stage, step, estimated_seconds, delay] {
    std::unique_lock<std::mutex> lock(state->mutex);
    if (state->finished.wait_for(lock, std::chrono::duration<double>(delay),
                                 [state] { return state->done; }))
      return;
    log_root("[stage {}] step {} still running after {}{}\n", stage, step + 1, human_seconds(delay),
             estimated_seconds > 0
                 ? fmt::format(" (estimated {} per step)", human_seconds(estimated_seconds))
                 : std::string());
  });
}

FirstStepNotice::~FirstStepNotice() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->done = true;
  }
  state_->finished.notify_all();
  state_->thread.join();
}

}  // namespace zm
