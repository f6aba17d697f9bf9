// Each kernel's forward and backward at the PyTorch-comparison configuration (B=8, T=128,
// C=256, NH=4, V=512): where a training step spends its time. Every kernel reports the bytes it
// must move at the least (reads and writes of its operands once) as GB/s, beside a copy
// kernel's GB/s measured in the same run on a buffer of a comparable size (the memory-bandwidth
// limit), and the fraction of it reached; the matmuls and attention also report GFLOP/s.
#include <benchmark/benchmark.h>

#include <Kokkos_Random.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "column_sums_reference.hpp"
#include "core/compat.hpp"
#include "kernels/adamw.hpp"
#include "kernels/attention.hpp"
#include "kernels/column_sums.hpp"
#include "kernels/crossentropy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/encoder.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"

namespace {

namespace k = zm::kernels;
constexpr int64_t B = 8, T = 128, C = 256, NH = 4, V = 512, Vp = 512, N = B * T;
constexpr double kFloat = sizeof(float);
// The teams the model's kernels run in on this backend.
constexpr k::TeamShape kTeams = k::kDefaultTeamShape;

using Vec = Kokkos::View<float*, zm::MemSpace>;
using IntVec = Kokkos::View<int*, zm::MemSpace>;

struct KernelBuffers {
  Vec a, b, c, d, e, f, g, h, w, partials;
  IntVec tokens, group_ids, group_starts, group_rows;
  k::TokenGroups groups;
};

IntVec upload(const std::vector<int>& host, const char* name) {
  IntVec device(std::string(name), host.size());
  Kokkos::deep_copy(
      device, Kokkos::View<const int*, zm::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                  host.data(), host.size()));
  return device;
}

KernelBuffers& buffers() {
  static KernelBuffers* shared = nullptr;
  if (shared) return *shared;
  const size_t big = static_cast<size_t>(B * NH * T * T + 4 * N * C + N * Vp);
  shared = new KernelBuffers;
  for (auto [view, name] : {std::pair{&shared->a, "a"},
                            {&shared->b, "b"},
                            {&shared->c, "c"},
                            {&shared->d, "d"},
                            {&shared->e, "e"},
                            {&shared->f, "f"},
                            {&shared->g, "g"},
                            {&shared->h, "h"}})
    *view = Vec(std::string(name), big);
  shared->w = Vec("w", static_cast<size_t>(4 * C * C + Vp * C));
  shared->partials = Vec("partials", static_cast<size_t>(k::column_partials_size(N, 4 * C)));
  Kokkos::Random_XorShift64_Pool<zm::ExecSpace> pool(7);
  for (auto* v : {&shared->a, &shared->b, &shared->c, &shared->d, &shared->w})
    Kokkos::fill_random(*v, pool, -1.0f, 1.0f);
  // Tokens spread over the vocabulary, as a real batch's are, and their groups.
  std::vector<int> tokens(static_cast<size_t>(N));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int>((i * 7919) % V);
  k::HostTokenGroups groups;
  groups.build(tokens.data(), N, V);
  shared->tokens = upload(tokens, "tokens");
  shared->group_ids = upload(groups.ids, "group_ids");
  shared->group_starts = upload(groups.starts, "group_starts");
  shared->group_rows = upload(groups.rows, "group_rows");
  shared->groups = {shared->group_ids.data(), shared->group_starts.data(),
                    shared->group_rows.data(), static_cast<int64_t>(groups.ids.size())};
  zm::bench::before_finalize([] {
    delete shared;
    shared = nullptr;
  });
  return *shared;
}

// GB/s of k::copy on n floats (read and write), the best of a few timed batches of calls.
double copy_bandwidth(int64_t n) {
  Vec src("copy_src", static_cast<size_t>(n)), dst("copy_dst", static_cast<size_t>(n));
  double best = 0;
  for (int batch = 0; batch < 5; ++batch) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) k::copy(kTeams, dst.data(), src.data(), n);
    Kokkos::fence();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 20 * 2.0 * kFloat * static_cast<double>(n) / seconds);
  }
  return best;
}

// The copy's bandwidth on 4 MiB, about the size of the kernels' operands, measured once.
double copy_bytes_per_second() {
  static const double measured = copy_bandwidth(N * C * 4);
  return measured;
}

// `seconds` is the wall time of the timed loop, measured here so that of_copy (the fraction of
// the copy's bandwidth this kernel reached) is a plain ratio rather than a rate per second.
void report(benchmark::State& state, double bytes, double flops, double seconds) {
  const double iterations = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes * iterations));
  state.counters["of_copy"] = bytes * iterations / seconds / copy_bytes_per_second();
  state.counters["copy_GBps"] = copy_bytes_per_second() / 1e9;
  if (flops > 0)
    state.counters["GFLOPs"] =
        benchmark::Counter(flops * iterations / 1e9, benchmark::Counter::kIsRate);
}

}  // namespace

#define ZM_KERNEL_BENCH(name, bytes, flops, body)                                            \
  void name(benchmark::State& state) {                                                       \
    KernelBuffers& m = buffers();                                                            \
    copy_bytes_per_second();                                                                 \
    const auto start = std::chrono::steady_clock::now();                                     \
    for (auto _ : state) {                                                                   \
      body;                                                                                  \
      Kokkos::fence();                                                                       \
    }                                                                                        \
    report(state, bytes, flops,                                                              \
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()); \
  }                                                                                          \
  BENCHMARK(name)->Unit(benchmark::kMicrosecond)->Iterations(50);

// Bytes: each operand read or written once. FLOPs: 2 per multiply-add of the GEMMs.
constexpr double kNC = kFloat * N * C, kGemmQKV = 2.0 * N * C * 3 * C,
                 kGemmFC = 2.0 * N * C * 4 * C;
constexpr double kScores = kFloat * B * NH * T * T,
                 kAttentionFlops = 4.0 * B * NH * T * T * (C / NH);

ZM_KERNEL_BENCH(Kernel_copy, 2 * 4 * kNC, 0, k::copy(kTeams, m.e.data(), m.a.data(), 4 * N * C))
ZM_KERNEL_BENCH(Kernel_encoder_forward, 3 * kNC, 0,
                k::encoder_forward(kTeams, m.e.data(), m.tokens.data(), m.w.data(), m.a.data(), B,
                                   T, C))
ZM_KERNEL_BENCH(Kernel_encoder_backward, 4 * kNC, 0,
                k::encoder_backward(kTeams, m.f.data(), m.g.data(), m.a.data(), m.groups, B, T, C))
ZM_KERNEL_BENCH(Kernel_layernorm_forward, 2 * kNC, 0,
                k::layernorm_forward(kTeams, m.e.data(), m.f.data(), m.g.data(), m.a.data(),
                                     m.w.data(), m.w.data(), N, C))
ZM_KERNEL_BENCH(Kernel_layernorm_backward, 6 * kNC, 0,
                k::layernorm_backward(kTeams, m.h.data(), m.f.data(), m.g.data(), m.a.data(),
                                      m.b.data(), m.w.data(), m.c.data(), m.d.data(), N, C,
                                      m.partials.data()))
ZM_KERNEL_BENCH(Kernel_matmul_forward_qkv, 4 * kNC, kGemmQKV,
                k::matmul_forward(kTeams, m.e.data(), m.a.data(), m.w.data(), m.b.data(), N, C,
                                  3 * C))
ZM_KERNEL_BENCH(Kernel_matmul_backward_qkv, 8 * kNC, 2 * kGemmQKV,
                k::matmul_backward(kTeams, m.e.data(), m.f.data(), m.g.data(), m.a.data(),
                                   m.b.data(), m.w.data(), N, C, 3 * C, m.partials.data()))
ZM_KERNEL_BENCH(Kernel_matmul_forward_fc, 5 * kNC, kGemmFC,
                k::matmul_forward(kTeams, m.e.data(), m.a.data(), m.w.data(), m.b.data(), N, C,
                                  4 * C))
ZM_KERNEL_BENCH(Kernel_matmul_backward_fc, 10 * kNC, 2 * kGemmFC,
                k::matmul_backward(kTeams, m.e.data(), m.f.data(), m.g.data(), m.a.data(),
                                   m.b.data(), m.w.data(), N, C, 4 * C, m.partials.data()))
ZM_KERNEL_BENCH(Kernel_matmul_forward_lm_head, 3 * kNC, 2.0 * N * C * Vp,
                k::matmul_forward<float>(kTeams, m.e.data(), m.a.data(), m.w.data(), nullptr, N, C,
                                         Vp))
ZM_KERNEL_BENCH(Kernel_attention_forward, 8 * kNC + 2 * kScores, kAttentionFlops,
                k::attention_forward<float>(kTeams, m.e.data(),
                                            {m.b.data(), m.c.data(), m.d.data(), m.f.data()},
                                            {m.g.data(), nullptr, nullptr, nullptr, nullptr},
                                            m.a.data(), B, T, C, NH))
ZM_KERNEL_BENCH(Kernel_attention_backward, 14 * kNC + 4 * kScores, 2 * kAttentionFlops,
                k::attention_backward<float>(kTeams, m.e.data(),
                                             {m.g.data(), m.h.data(), m.e.data() + N * 3 * C,
                                              m.e.data() + N * 4 * C, m.e.data() + N * 5 * C},
                                             m.a.data(),
                                             {m.b.data(), m.c.data(), m.d.data(), m.f.data()}, B, T,
                                             C, NH))
ZM_KERNEL_BENCH(Kernel_gelu_forward, 2 * 4 * kNC, 0,
                k::gelu_forward(kTeams, m.e.data(), m.a.data(), N * 4 * C))
ZM_KERNEL_BENCH(Kernel_gelu_backward, 3 * 4 * kNC, 0,
                k::gelu_backward(kTeams, m.e.data(), m.a.data(), m.b.data(), N * 4 * C,
                                 k::GradWrite::Overwrite))
ZM_KERNEL_BENCH(Kernel_softmax_crossentropy_forward, 2 * kFloat * N * Vp, 0,
                k::softmax_crossentropy_forward(kTeams, m.e.data(), m.f.data(), m.tokens.data(), N,
                                                V, Vp))
ZM_KERNEL_BENCH(Kernel_softmax_crossentropy_backward, 2 * kFloat * N * Vp, 0,
                k::softmax_crossentropy_backward(kTeams, m.e.data(), m.tokens.data(), 1.0f / N, N,
                                                 V, Vp))
ZM_KERNEL_BENCH(Kernel_adamw_update, 7 * kFloat * 12 * C * C, 0,
                k::adamw_update(kTeams, m.e.data(), m.a.data(), m.f.data(), m.g.data(), 12 * C * C,
                                {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1}))

namespace {

// The column sums of the bias gradient (N rows of 4C columns, one sum) and of the LayerNorm
// gradients (N rows of C columns, two sums), level 1 by the previous kernel (a team per row block)
// and by the current one (a team per row block and column tile), timed alternately in one run:
// old_us and new_us per call, and new_over_old, their ratio (below 1: the current one is faster).
template <int K>
void column_sums_old_and_new(benchmark::State& state, int64_t columns) {
  KernelBuffers& m = buffers();
  const float* x = m.a.data();
  float* partials = m.partials.data();
  const auto term = KOKKOS_LAMBDA(int64_t r, int64_t c, float(&t)[K]) {
    for (int k = 0; k < K; ++k) t[k] = x[r * columns + c] * float(k + 1);
  };
  double old_seconds = 0, new_seconds = 0;
  auto timed = [](auto&& call) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) call();
    Kokkos::fence();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 10;
  };
  for (auto _ : state) {
    old_seconds += timed([&] {
      k::reference::row_block_column_sums<K>(kTeams, "bench::column_sums_old", N, columns, partials,
                                             term);
    });
    new_seconds += timed([&] {
      k::block_column_sums<K>(kTeams, "bench::column_sums_new", N, columns, partials, term);
    });
  }
  const double calls = static_cast<double>(state.iterations());
  state.counters["old_us"] = 1e6 * old_seconds / calls;
  state.counters["new_us"] = 1e6 * new_seconds / calls;
  state.counters["new_over_old"] = new_seconds / old_seconds;
}

void Kernel_column_sums_bias_old_and_new(benchmark::State& state) {
  column_sums_old_and_new<1>(state, 4 * C);
}
void Kernel_column_sums_layernorm_old_and_new(benchmark::State& state) {
  column_sums_old_and_new<2>(state, C);
}

}  // namespace

BENCHMARK(Kernel_column_sums_bias_old_and_new)->Unit(benchmark::kMicrosecond)->Iterations(20);
BENCHMARK(Kernel_column_sums_layernorm_old_and_new)->Unit(benchmark::kMicrosecond)->Iterations(20);
