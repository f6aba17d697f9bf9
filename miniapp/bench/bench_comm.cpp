// Collective bandwidth: the Communicator call beside the raw MPI call on the same buffers, in
// the same run. The Communicator's backend is zeromini-bench's --backend=mpi|nccl (bench_util.hpp).
// The raw MPI baseline does what a user's code would on device buffers: it hands MPI the device
// pointers where the MPI backend would too (no DeviceStaging made: mpi_communicator.hpp), and
// otherwise copies through host buffers around each call; the case's label says which. Reported
// as nccl-tests does: algorithm bandwidth S/t and bus bandwidth (x 2(N-1)/N for all-reduce,
// x (N-1)/N for reduce-scatter and all-gather), S the whole buffer.
//
// Google Benchmark chooses iteration counts per process, which would desynchronise the ranks
// of a collective; every case here has a fixed iteration count, and each iteration's time is
// the slowest rank's (barrier, time, max-reduce), given to the library as manual time.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bench_util.hpp"
#include "comm/comm_types/mpi_communicator.hpp"
#include "comm/communicator.hpp"
#include "core/memory.hpp"

namespace {

enum class Op { AllReduce, ReduceScatter, AllGather };

// How the raw MPI baseline reaches the buffers.
enum class RawPath { Host, DevicePointers, StagedThroughHost };

RawPath raw_path() {
  if (zm::device_is_host()) return RawPath::Host;
  static const bool aware = zm::make_device_staging() == nullptr;
  return aware ? RawPath::DevicePointers : RawPath::StagedThroughHost;
}

const char* raw_path_label(RawPath path) {
  switch (path) {
    case RawPath::Host:
      return "raw MPI on host buffers";
    case RawPath::DevicePointers:
      return "raw MPI on device pointers (CUDA-aware MPI)";
    case RawPath::StagedThroughHost:
      return "raw MPI staged through host buffers";
  }
  return "";
}

struct CommBuffers {
  Kokkos::View<float*, zm::MemSpace> send, recv;
  Kokkos::View<float*, zm::HostStagingSpace> host_send, host_recv;  // the raw baseline's staging
};

// The Communicator of the Comm/* cases, on the chosen backend; freed before finalize.
zm::Communicator& bench_communicator() {
  static std::unique_ptr<zm::Communicator> comm;
  if (!comm) {
    comm = zm::make_communicator(zm::bench::comm_bench_backend(), MPI_COMM_WORLD,
                                 zm::bench::watchdog());
    zm::bench::before_finalize([] { comm.reset(); });
  }
  return *comm;
}

// One set of buffers per size (reused by the raw and the Communicator runs).
std::map<size_t, CommBuffers>& buffer_cache() {
  static std::map<size_t, CommBuffers> cache;
  return cache;
}

CommBuffers& buffers(size_t elements, int ranks) {
  auto& cache = buffer_cache();
  if (cache.empty()) zm::bench::before_finalize([] { buffer_cache().clear(); });
  auto found = cache.find(elements);
  if (found != cache.end()) return found->second;
  if (!cache.empty()) cache.clear();  // keep one size alive at a time
  CommBuffers b;
  b.send = Kokkos::View<float*, zm::MemSpace>("send", elements);
  b.recv = Kokkos::View<float*, zm::MemSpace>("recv", elements);
  Kokkos::deep_copy(b.send, 1.0f);
  (void)ranks;
  if (raw_path() == RawPath::StagedThroughHost) {
    b.host_send = Kokkos::View<float*, zm::HostStagingSpace>("host_send", elements);
    b.host_recv = Kokkos::View<float*, zm::HostStagingSpace>("host_recv", elements);
  }
  return cache.emplace(elements, b).first->second;
}

int64_t iterations_for(int64_t bytes) {
  if (bytes <= (1 << 20)) return 200;
  if (bytes <= (16 << 20)) return 30;
  return 10;
}

// The first `n` elements of `from` into `to`.
template <typename To, typename From>
void copy_prefix(const To& to, const From& from, size_t n) {
  const auto range = std::make_pair(size_t(0), n);
  Kokkos::deep_copy(Kokkos::subview(to, range), Kokkos::subview(from, range));
}

// One raw MPI call, on the device buffers or through host copies of them (what MPI reads
// before, what it wrote after).
void raw_call(Op op, CommBuffers& b, size_t elements, size_t shard, int ranks) {
  const bool staged = raw_path() == RawPath::StagedThroughHost;
  float* send = staged ? b.host_send.data() : b.send.data();
  float* recv = staged ? b.host_recv.data() : b.recv.data();
  const size_t whole = shard * static_cast<size_t>(ranks);
  const int n = static_cast<int>(shard);
  MPI_Comm world = MPI_COMM_WORLD;
  switch (op) {
    case Op::AllReduce:
      if (staged) copy_prefix(b.host_send, b.send, elements);
      MPI_Allreduce(MPI_IN_PLACE, send, static_cast<int>(elements), MPI_FLOAT, MPI_SUM, world);
      if (staged) copy_prefix(b.send, b.host_send, elements);
      break;
    case Op::ReduceScatter:
      if (staged) copy_prefix(b.host_send, b.send, whole);
      MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM, world);
      if (staged) copy_prefix(b.recv, b.host_recv, shard);
      break;
    case Op::AllGather:
      if (staged) copy_prefix(b.host_send, b.send, shard);
      MPI_Allgather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, world);
      if (staged) copy_prefix(b.recv, b.host_recv, whole);
      break;
  }
}

// One call of the collective, through raw MPI or through the Communicator, complete on the host
// (a stream-ordered backend's blocking call only orders later device work).
void call_once(Op op, bool raw, zm::Communicator& comm, CommBuffers& b, size_t elements,
               size_t shard) {
  if (raw) {
    raw_call(op, b, elements, shard, comm.size());
    return;
  }
  switch (op) {
    case Op::AllReduce:
      comm.all_reduce_sum(b.send.data(), elements, zm::DType::F32);
      break;
    case Op::ReduceScatter:
      comm.reduce_scatter_sum(b.send.data(), b.recv.data(), shard, zm::DType::F32);
      break;
    case Op::AllGather:
      comm.all_gather(b.send.data(), b.recv.data(), shard, zm::DType::F32);
      break;
  }
  Kokkos::fence();
}

// Bandwidths from the bytes of one call, the calls made and their total seconds, raw and ours.
void report_bandwidths(benchmark::State& state, Op op, int ranks, double whole, int64_t n,
                       double raw_total, double mine_total) {
  const double factor =
      op == Op::AllReduce ? 2.0 * (ranks - 1) / ranks : static_cast<double>(ranks - 1) / ranks;
  const double raw_algbw = whole * static_cast<double>(n) / raw_total / 1e9;
  const double mine_algbw = whole * static_cast<double>(n) / mine_total / 1e9;
  state.counters["ranks"] = ranks;
  state.counters["bytes"] = whole;
  state.counters["raw_algbw_GBps"] = raw_algbw;
  state.counters["raw_busbw_GBps"] = raw_algbw * factor;
  state.counters["algbw_GBps"] = mine_algbw;
  state.counters["busbw_GBps"] = mine_algbw * factor;
  state.counters["ratio"] = mine_algbw / raw_algbw;
}

// Raw MPI and the Communicator alternate iteration by iteration on the same buffers, so that both
// see the same machine state (a VM's memory bandwidth drifts by tens of percent over seconds);
// the case reports both bandwidths and their ratio. The benchmark's own time is the
// Communicator's.
void run_collective(benchmark::State& state, Op op) {
  zm::Communicator& comm = bench_communicator();
  state.SetLabel(comm.name() + " backend; " + raw_path_label(raw_path()));
  const int ranks = comm.size();
  const size_t elements = static_cast<size_t>(state.range(0)) / sizeof(float);
  const size_t shard = elements / static_cast<size_t>(ranks);
  CommBuffers& b = buffers(elements, ranks);
  // The slowest rank's time of one call.
  auto timed = [&](bool raw) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    call_once(op, raw, comm, b, elements, shard);
    double elapsed = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
  };
  // Untimed: first touch of the buffers, connection set-up.
  call_once(op, true, comm, b, elements, shard);
  call_once(op, false, comm, b, elements, shard);
  double raw_total = 0, mine_total = 0;
  int64_t n = 0;
  for (auto _ : state) {
    // Alternate which goes first, so neither always follows the other.
    const bool raw_first = n % 2 == 0;
    if (raw_first) raw_total += timed(true);
    const double t = timed(false);
    mine_total += t;
    state.SetIterationTime(t);
    if (!raw_first) raw_total += timed(true);
    ++n;
  }
  const double whole = static_cast<double>(op == Op::AllReduce ? elements : shard * ranks) * 4.0;
  report_bandwidths(state, op, ranks, whole, n, raw_total, mine_total);
}

void register_all() {
  const struct {
    const char* name;
    Op op;
  } ops[] = {{"all_reduce", Op::AllReduce},
             {"reduce_scatter", Op::ReduceScatter},
             {"all_gather", Op::AllGather}};
  for (const auto& o : ops) {
    for (int64_t bytes = 1024; bytes <= (int64_t(256) << 20); bytes *= 4) {
      const std::string name = std::string("Comm/") + o.name + "/" + std::to_string(bytes);
      benchmark::RegisterBenchmark(name.c_str(), run_collective, o.op)
          ->Arg(bytes)
          ->Iterations(iterations_for(bytes))
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

const bool registered = (register_all(), true);

}  // namespace
