// The training step beside bare BLAS sgemm at the step's own GEMM calls, and the step's time by
// kernel: one rank, one host thread, on the medium deck's model (inputs/medium-l6d384.toml: 6
// layers, dim 384, the GPT-2 vocabulary, 4 x 128 tokens).
//
// How the step's GEMMs are known: this executable defines sgemm_, the Fortran BLAS entry that the
// host GEMMs reach (through Kokkos Kernels' HostBlas, kernels/gemm_host.cpp), and forwards every
// call to the BLAS's own (the next definition, dlsym RTLD_NEXT). While a step is recorded it keeps
// each call's arguments (transposes, shapes, leading dimensions, alpha, beta) and time, and Kokkos
// Tools' callbacks time every labelled kernel. The replay calls the BLAS's sgemm with exactly
// those arguments, one after another, on buffers of their sizes.
//
// StepVsSgemm: each iteration is a round of one step and one replay, the order alternating. The
// counters: step_ms and sgemm_ms (medians of the rounds), sgemm_over_step (the fraction of the
// GEMM limit the step runs at), sgemm_gflops (the replay's rate), stream_gbs (Streams below) and
// gemm_calls. After the rounds, a markdown table of one recorded step goes to stderr: each
// kernel's launches, its time (exclusive of the BLAS calls inside it) and share of the step, the
// BLAS row with its GFLOP/s against the replay's, and what is in no kernel (host code, copies).
// Its roofline columns: each modelled kernel's FLOPs and compulsory bytes in the step (kernel_work
// below: each input read once, each output written once), their rates, and the larger of its
// fractions of the two limits measured here, the replay's GFLOP/s and the streams' GB/s.
//
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/bin/zeromini-bench
//     --benchmark_filter=StepVsSgemm 2> kernels.md   (one command)
//
// Only where the GEMMs run on the host BLAS (not cuBLAS), and on one thread (so that the recording
// needs no lock): with more, a GEMM is cut into row blocks, one BLAS call per thread at once,
// which no sequential replay reproduces. ctest bench_step_vs_sgemm runs it (tests/kernels/).
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "core/deck.hpp"
#include "core/deck_keys.hpp"
#include "train/trainer.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*,
                         const float*, const int*, const float*, const int*, const float*, float*,
                         const int*);

// One BLAS call's arguments (column-major, as Fortran sees them) and its time in the step.
struct SgemmCall {
  char trans_a, trans_b;
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
  double seconds;
  double flops() const { return 2.0 * m * n * k; }
  // Elements of each operand the call reads or writes.
  size_t a_size() const { return static_cast<size_t>(lda) * (trans_a == 'N' ? k : m); }
  size_t b_size() const { return static_cast<size_t>(ldb) * (trans_b == 'N' ? n : k); }
  size_t c_size() const { return static_cast<size_t>(ldc) * n; }
};

struct KernelTime {
  int64_t launches = 0;
  double seconds = 0;  // exclusive of the BLAS calls inside
};

// What one recorded step ran: the BLAS calls in order and the kernels by label.
struct Recording {
  bool on = false;
  std::vector<SgemmCall> calls;
  double sgemm_seconds = 0;
  std::map<std::string, KernelTime> kernels;
  // The kernel under way (the host backends run one at a time) and the BLAS time when it began.
  std::string current;
  Clock::time_point began;
  double sgemm_at_begin = 0;
};
Recording& recording() {
  static Recording r;
  return r;
}

SgemmFn next_sgemm() {
  static const auto next = reinterpret_cast<SgemmFn>(dlsym(RTLD_NEXT, "sgemm_"));
  return next;
}

void begin_kernel(const char* name, const uint32_t, uint64_t*) {
  Recording& r = recording();
  if (!r.on) return;
  r.current = name;
  r.sgemm_at_begin = r.sgemm_seconds;
  r.began = Clock::now();
}
void end_kernel(const uint64_t) {
  Recording& r = recording();
  if (!r.on || r.current.empty()) return;
  KernelTime& k = r.kernels[r.current];
  ++k.launches;
  k.seconds += seconds_since(r.began) - (r.sgemm_seconds - r.sgemm_at_begin);
  r.current.clear();
}

}  // namespace

// The BLAS entry the host GEMMs call (see the top of this file).
extern "C" void sgemm_(const char* trans_a, const char* trans_b, const int* m, const int* n,
                       const int* k, const float* alpha, const float* a, const int* lda,
                       const float* b, const int* ldb, const float* beta, float* c,
                       const int* ldc) {
  Recording& r = recording();
  if (!r.on) {
    next_sgemm()(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const Clock::time_point t0 = Clock::now();
  next_sgemm()(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  const double seconds = seconds_since(t0);
  r.calls.push_back({*trans_a, *trans_b, *m, *n, *k, *lda, *ldb, *ldc, *alpha, *beta, seconds});
  r.sgemm_seconds += seconds;
}

namespace {

// Kokkos Tools' callbacks around every kernel: set (on) or cleared.
void time_kernels(bool on) {
  namespace tools = Kokkos::Tools::Experimental;
  tools::set_begin_parallel_for_callback(on ? begin_kernel : nullptr);
  tools::set_begin_parallel_reduce_callback(on ? begin_kernel : nullptr);
  tools::set_begin_parallel_scan_callback(on ? begin_kernel : nullptr);
  tools::set_end_parallel_for_callback(on ? end_kernel : nullptr);
  tools::set_end_parallel_reduce_callback(on ? end_kernel : nullptr);
  tools::set_end_parallel_scan_callback(on ? end_kernel : nullptr);
}

// Records one step: the BLAS calls and the kernels' times.
double record_step(zm::Trainer& trainer, int64_t step) {
  Recording& r = recording();
  r.calls.clear();
  r.kernels.clear();
  r.sgemm_seconds = 0;
  time_kernels(true);
  r.on = true;
  const Clock::time_point t0 = Clock::now();
  trainer.step(step);
  const double seconds = seconds_since(t0);
  r.on = false;
  time_kernels(false);
  return seconds;
}

// The recorded calls on buffers of their sizes (each operand one buffer, shared by the calls).
class Replay {
 public:
  explicit Replay(const std::vector<SgemmCall>& calls) : calls_(calls) {
    size_t a = 0, b = 0, c = 0;
    for (const SgemmCall& call : calls) {
      a = std::max(a, call.a_size());
      b = std::max(b, call.b_size());
      c = std::max(c, call.c_size());
    }
    // Small values: the accumulating calls (beta 1) stay far from overflow over the rounds.
    a_.assign(a, 1e-3f);
    b_.assign(b, 1e-3f);
    c_.assign(c, 0.0f);
  }
  double run() {
    const Clock::time_point t0 = Clock::now();
    for (const SgemmCall& s : calls_)
      next_sgemm()(&s.trans_a, &s.trans_b, &s.m, &s.n, &s.k, &s.alpha, a_.data(), &s.lda, b_.data(),
                   &s.ldb, &s.beta, c_.data(), &s.ldc);
    return seconds_since(t0);
  }

 private:
  std::vector<SgemmCall> calls_;
  std::vector<float> a_, b_, c_;
};

// The machine's memory bandwidth: the best rate of two streaming patterns over arrays far larger
// than the caches, counted as STREAM counts (the bytes named, a write's line allocation not
// counted): STREAM's triad a = b + s c (12 bytes an element) and the optimizer's pattern, 4 arrays
// read and 3 written in place (28). A VM's bandwidth drifts by tens of percent over seconds, so
// both are measured in every round and the best of all is the limit. It is what a plain loop
// reaches here, not the hardware's peak: AdamW's update inside the step beats it by half on the
// AVX-512 host of results/step-vs-sgemm-avx512.md, and the table shows such a kernel above 1.
class Streams {
 public:
  Streams() : a_("stream_a", kN), b_("stream_b", kN), c_("stream_c", kN), d_("stream_d", kN) {
    Kokkos::deep_copy(b_, 1.0f);
    Kokkos::deep_copy(c_, 2.0f);
    Kokkos::deep_copy(d_, 1e-3f);
  }
  // Each pattern once; the best rate of all calls so far.
  double measure() {
    float *a = a_.data(), *b = b_.data(), *c = c_.data();
    const float* d = d_.data();
    time(12, [&] {
      Kokkos::parallel_for(
          "bench::triad", kN, KOKKOS_LAMBDA(const int64_t i) { a[i] = b[i] + 3.0f * c[i]; });
    });
    time(28, [&] {
      Kokkos::parallel_for(
          "bench::four_read_three_written", kN, KOKKOS_LAMBDA(const int64_t i) {
            const float g = d[i], m = 0.9f * b[i] + 0.1f * g, v = 0.99f * c[i] + 0.01f * g * g;
            b[i] = m;
            c[i] = v;
            a[i] -= 1e-3f * m / (v + 1e-8f);
          });
    });
    return best_;
  }

 private:
  static constexpr int64_t kN = int64_t{1} << 25;  // 128 MiB per array
  template <typename Pattern>
  void time(double bytes_per_element, const Pattern& pattern) {
    const Clock::time_point t0 = Clock::now();
    pattern();
    Kokkos::fence();
    best_ = std::max(best_, bytes_per_element * static_cast<double>(kN) / seconds_since(t0) / 1e9);
  }
  Kokkos::View<float*> a_, b_, c_, d_;
  double best_ = 0;
};

// What a kernel does in one step of the benchmark's run (fp32, one rank, ZeRO stage 1, one
// micro-batch, the chunked head in one chunk, the fused attention), modelled from its code: its
// launches, FLOPs (every float operation counted once: an exponential is fast_exp's 25, a tanh
// 28) and compulsory bytes. A row whose recorded launches differ from the model's shows none.
struct KernelWork {
  int64_t launches;
  double flops, bytes;
};
std::map<std::string, KernelWork> kernel_work(const zm::Deck& deck, int64_t params) {
  const auto& m = deck.model;
  const double tokens = static_cast<double>(deck.train.micro_batch * m.seq_len), seq = m.seq_len,
               width = m.dim, layers = m.layers, vocab = static_cast<double>(m.padded_vocab()),
               elems = static_cast<double>(params), mlp = 4 * width, activation = tokens * width,
               batch = deck.train.micro_batch;
  const double causal = batch * seq * seq * width;  // one causal product over the heads: FLOPs
  const double scores = batch * m.heads * seq * seq / 2;
  const int64_t l = m.layers;
  return {
      // Per row, as one host thread runs it: the maximum, the exponentials stored and summed,
      // the gradient (times the total's inverse and the loss scale).
      {"zeromini::softmax_crossentropy_fused",
       {1, tokens * vocab * (1 + 27 + 2), 2 * tokens * vocab * 4}},
      // Read p, g, m, v; write p, m, v.
      {"zeromini::adamw_update", {-1, 12 * elems, 28 * elems}},
      // Q K^T and P V, causal; the scores' exponentials. Read q, k, v; write y and the log-sums.
      {"zeromini::flash_attention_forward",
       {l, layers * (2 * causal + 25 * scores), layers * (4 * activation + tokens * m.heads) * 4}},
      // The scores again, dV, dP, dQ, dK. Read q, k, v, y, dy; write dq, dk, dv.
      {"zeromini::flash_attention_backward_by_head",
       {l, layers * (5 * causal + 25 * scores), layers * 8 * activation * 4}},
      {"zeromini::sum_of_squares", {l + 2, 2 * elems, 4 * elems}},
      {"zeromini::gelu_forward", {l, layers * tokens * mlp * 36, layers * tokens * mlp * 8}},
      {"zeromini::gelu_backward_overwrite",
       {l, layers * tokens * mlp * 45, layers * tokens * mlp * 12}},
      {"zeromini::layernorm_forward",
       {2 * l + 1, (2 * layers + 1) * activation * 8, (2 * layers + 1) * activation * 8}},
      {"zeromini::layernorm_backward_input",
       {2 * l + 1, (2 * layers + 1) * activation * 10, (2 * layers + 1) * activation * 12}},
      // The four linear layers' outputs: 3C, C, 4C and C wide (C: width).
      {"zeromini::matmul_backward_bias",
       {4 * l, layers * tokens * 9 * width, layers * tokens * 9 * width * 4}},
      {"zeromini::matmul_forward_bias",
       {4 * l, layers * tokens * 9 * width, layers * tokens * 9 * width * 8}},
      {"zeromini::residual_forward",
       {2 * l, 2 * layers * activation, 2 * layers * activation * 12}},
  };
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void print_kernel_table(const Recording& r, double step_seconds, double replay_gflops,
                        double stream_gbs, const std::map<std::string, KernelWork>& work) {
  std::vector<std::pair<std::string, KernelTime>> rows(r.kernels.begin(), r.kernels.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& x, const auto& y) { return x.second.seconds > y.second.seconds; });
  double flops = 0, in_kernels = 0;
  for (const SgemmCall& c : r.calls) flops += c.flops();
  // The step with every modelled kernel at its limit (or its time, where it beats the limit: its
  // data in cache) and the GEMMs at the replay's rate.
  double at_limits = flops / replay_gflops / 1e9;
  std::fprintf(stderr,
               "| kernel | launches | ms | share of the step | GFLOP | MB | GFLOP/s | GB/s | "
               "roofline |\n");
  std::fprintf(stderr, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::fprintf(stderr,
               "| BLAS sgemm (%zu calls) | %zu | %.1f | %.3f | %.1f | | %.1f (replayed: %.1f) | | "
               "%.2f |\n",
               r.calls.size(), r.calls.size(), 1e3 * r.sgemm_seconds,
               r.sgemm_seconds / step_seconds, flops / 1e9, flops / r.sgemm_seconds / 1e9,
               replay_gflops, flops / r.sgemm_seconds / 1e9 / replay_gflops);
  for (const auto& [name, k] : rows) {
    in_kernels += k.seconds;
    std::fprintf(stderr, "| %s | %lld | %.1f | %.3f |", name.c_str(),
                 static_cast<long long>(k.launches), 1e3 * k.seconds, k.seconds / step_seconds);
    const auto it = work.find(name);
    if (it == work.end() || (it->second.launches >= 0 && it->second.launches != k.launches)) {
      std::fprintf(stderr, " | | | | |\n");
      at_limits += k.seconds;
      continue;
    }
    const double gflops = it->second.flops / k.seconds / 1e9,
                 gbs = it->second.bytes / k.seconds / 1e9;
    at_limits += std::min(
        k.seconds, std::max(it->second.flops / replay_gflops, it->second.bytes / stream_gbs) / 1e9);
    std::fprintf(stderr, " %.3f | %.1f | %.1f | %.1f | %.2f |\n", it->second.flops / 1e9,
                 it->second.bytes / 1e6, gflops, gbs,
                 std::max(gflops / replay_gflops, gbs / stream_gbs));
  }
  const double rest = step_seconds - r.sgemm_seconds - in_kernels;
  at_limits += rest;
  std::fprintf(stderr, "| in no kernel (host code, copies) | | %.1f | %.3f | | | | | |\n",
               1e3 * rest, rest / step_seconds);
  std::fprintf(stderr, "| the step | | %.1f | 1 | | | %.1f | | |\n", 1e3 * step_seconds,
               flops / step_seconds / 1e9);
  std::fprintf(
      stderr,
      "\nroofline: the larger of GFLOP/s over the replay's %.1f and GB/s over the streams' "
      "%.1f (1: at the limit; above 1: data in cache)\n"
      "at every modelled kernel's limit the step would take %.1f ms: sgemm / step at most "
      "%.3f\n",
      replay_gflops, stream_gbs, 1e3 * at_limits, flops / replay_gflops / 1e9 / at_limits);
  // What a ratio of 0.95 leaves beside the GEMMs, against what the kernels need at their limits.
  const double gemms = flops / replay_gflops / 1e9;
  std::fprintf(stderr,
               "sgemm / step at 0.95 leaves %.1f ms beside the GEMMs; the kernels at their limits "
               "and the rest take %.1f ms\n",
               1e3 * (gemms / 0.95 - gemms), 1e3 * (at_limits - gemms));
}

// `attention`: the deck's model.attention where the module fused_attention is built (its default
// "fused" runs the attention's products in its own kernels; "reference", the core's plain
// attention, runs them as BLAS calls, which the replay then counts); without it, the core's.
void step_vs_sgemm(benchmark::State& state, const char* attention) {
  if (Kokkos::DefaultExecutionSpace::concurrency() != 1) {
    state.SkipWithError("StepVsSgemm runs on one host thread (OMP_NUM_THREADS=1)");
    return;
  }
  const zm::Deck deck = zm::parse_deck(
      "[model]\nlayers = 6\nheads = 6\ndim = 384\nvocab = 50257\nseq_len = 128\n"
      "[train]\nmicro_batch = 4\nsteps = 1000000\nlr = 6e-4\nwarmup = 2\nweight_decay = 0.1\n"
      "seed = 1337\n[zero]\nstage = 1\n",
      "medium-l6d384",
      zm::module_setting(zm::Deck{}, "model.attention", "").empty()
          ? std::vector<std::string>{}
          : std::vector<std::string>{fmt::format("model.attention=\"{}\"", attention)});
  auto trainer = zm::make_trainer(deck, deck.zero.stage, zm::bench::world_communicator());
  trainer->init_parameters();
  int64_t step = 0;
  trainer->step(step++);  // first touch of every buffer
  record_step(*trainer, step++);
  if (recording().calls.empty()) {
    state.SkipWithError("the step made no host BLAS sgemm call (a GPU build: cuBLAS)");
    return;
  }
  Replay replay(recording().calls);
  replay.run();  // first touch of the replay's buffers
  Streams streams;
  std::vector<double> steps, replays;
  bool replay_first = false;
  for (auto _ : state) {
    double s = 0, g = 0;
    if (replay_first) g = replay.run();
    const Clock::time_point t0 = Clock::now();
    trainer->step(step++);
    s = seconds_since(t0);
    if (!replay_first) g = replay.run();
    replay_first = !replay_first;
    steps.push_back(s);
    replays.push_back(g);
    state.SetIterationTime(s);
    streams.measure();  // between rounds: the alternation gives each side the flushed caches
  }
  double flops = 0;
  for (const SgemmCall& c : recording().calls) flops += c.flops();
  const double step_s = median(steps), sgemm_s = median(replays), stream_gbs = streams.measure();
  state.counters["step_ms"] = 1e3 * step_s;
  state.counters["sgemm_ms"] = 1e3 * sgemm_s;
  state.counters["sgemm_over_step"] = sgemm_s / step_s;
  state.counters["sgemm_gflops"] = flops / sgemm_s / 1e9;
  state.counters["stream_gbs"] = stream_gbs;
  state.counters["gemm_calls"] = static_cast<double>(recording().calls.size());
  // The table of a step recorded after the rounds (the machine as warm as in them).
  const double recorded = record_step(*trainer, step++);
  print_kernel_table(recording(), recorded, flops / sgemm_s / 1e9, stream_gbs,
                     kernel_work(deck, trainer->layout().total()));
  trainer.reset();
}

BENCHMARK_CAPTURE(step_vs_sgemm, fused, "fused")
    ->Name("StepVsSgemm")
    ->Iterations(8)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(step_vs_sgemm, reference, "reference")
    ->Name("StepVsSgemmReferenceAttention")
    ->Iterations(8)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
