// One interface for the collectives ZeRO needs, with per-operation accounting.
//
// ZeRO's stages differ only in which collectives they call and on what, so the engine talks to
// this interface alone. Backends (comm_types/) implement the post_* hooks; this base class does
// the accounting so that every backend counts the same way:
//   calls  - one per collective posted
//   bytes  - bytes sent per rank under the ring-algorithm convention (ring_bytes below)
//   seconds - wall time spent waiting for completion (in wait(), or inside a blocking call)
// All data pointers are in the default Kokkos memory space (device memory in CUDA builds).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "core/compat.hpp"

namespace zm {

class Watchdog;
class CollectiveObserver;  // comm/collective_observer.hpp

// AllToAll comes last so that the indices of the older kinds (results files, plots) stay put.
enum class CommOp : int {
  AllReduce = 0,
  ReduceScatter,
  AllGather,
  Broadcast,
  Barrier,
  AllToAll,
  Count
};
constexpr int kCommOps = static_cast<int>(CommOp::Count);
const char* comm_op_name(CommOp op);  // "all_reduce", "reduce_scatter", ...

// U8: raw bytes (packed quantized segments, kernels/quantize.hpp); gathered, exchanged and
// broadcast, never reduced.
enum class DType : int { F32 = 0, BF16, U8 };
size_t dtype_size(DType type);
const char* dtype_name(DType type);

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
#if ZEROMINI_HAVE_BF16
template <>
constexpr DType dtype_of<bf16>() {
  return DType::BF16;
}
#endif

// Bytes each rank sends for one collective under the ring convention (nccl-tests' "bus bytes"):
//   all_reduce      2(N-1)/N * S   S = bytes of the whole buffer
//   reduce_scatter   (N-1)/N * S   S = bytes of the whole input (N shards)
//   all_gather       (N-1)/N * S   S = bytes of the whole output (N shards)
//   broadcast        S             (pipelined ring/tree: every byte crosses one link per rank)
//   all_to_all       (N-1)/N * S   S = bytes of the whole send buffer (N blocks, one per peer;
//                                  the block a rank keeps for itself is not sent)
//   barrier          0
// The planner uses the same function, so predicted and measured traffic agree by construction of
// the formula and by test of the calls.
double ring_bytes(CommOp op, double whole_buffer_bytes, int ranks);

// The nodes a communicator's ranks sit on (a collective declares it where its communicator is not a
// mesh dimension's, e.g. an exchange in hops by node: plan/planner.hpp prices its links by it).
struct NodeSpan {
  int nodes = 1;     // distinct nodes among the communicator's ranks
  int per_node = 1;  // its ranks on each of them (k); 0: not the same on every node
};

// Why a collective runs (for those who observe collectives, comm/collective_observer.hpp).
// ModelParallel: the model's own collectives along a model-parallel dimension (its activations'
// sums and gathers).
enum class CommPurpose : int { Other = 0, GradReduce, ParamGather, Stats, ModelParallel };
const char* comm_purpose_name(CommPurpose purpose);  // "other", "grad_reduce", ...

// What a collective is for: the model unit it moves (-1: none) and why.
struct CommTag {
  int unit = -1;
  CommPurpose purpose = CommPurpose::Other;
};

struct CommOpStats {
  uint64_t calls = 0;
  double bytes = 0.0;
  double seconds = 0.0;
};

struct CommStats {
  std::array<CommOpStats, kCommOps> ops{};
  const CommOpStats& operator[](CommOp op) const { return ops[static_cast<int>(op)]; }
  CommOpStats& operator[](CommOp op) { return ops[static_cast<int>(op)]; }
  CommOpStats total() const;
};
// The counts between two readings of the same counters (`after` taken later), and a sum.
CommStats operator-(const CommStats& after, const CommStats& before);
CommStats& operator+=(CommStats& total, const CommStats& part);

// A point of a device stream's work that a communicator's observer marked
// (CollectiveObserver::mark_stream), e.g. with a device event; opaque to the communicator.
struct StreamMark {
  int64_t id = -1;  // -1: none
};

namespace detail {
// A backend's in-flight operation.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  // Advances the operation; true once it is complete (and any staged data is back in place).
  virtual bool test() = 0;
  // Blocks until complete. For stream-ordered backends (NCCL) "complete" means that work
  // enqueued afterwards on the default execution space will see the result.
  virtual void wait() = 0;
  // Stream-ordered backends run the operation on a device stream, where the communicator's
  // observer marks its start and its completion (Communicator::mark_stream); a wait then blocks
  // the compute stream, not the host.
  virtual bool stream_ordered() const { return false; }
  StreamMark device_posted, device_completed;
};
}  // namespace detail

class Communicator;

// Handle to a posted collective. Move-only; destroying an unfinished request waits for it.
class CommRequest {
 public:
  CommRequest() = default;
  // `observed`: the collective's id when the communicator's observers follow it, else -1.
  CommRequest(Communicator* owner, CommOp op, std::unique_ptr<detail::PendingOp> pending,
              int64_t observed);
  CommRequest(CommRequest&&) noexcept;
  CommRequest& operator=(CommRequest&&) noexcept;
  CommRequest(const CommRequest&) = delete;
  CommRequest& operator=(const CommRequest&) = delete;
  ~CommRequest();

  // Waits for completion; the time spent is added to the operation's `seconds`. `blocking`: the
  // rank has done nothing since the post (a blocking collective), so all of it was waited for.
  void wait(bool blocking = false);
  // Progresses without blocking; true when complete.
  bool test();
  bool pending() const { return pending_ != nullptr; }

 private:
  Communicator* owner_ = nullptr;
  CommOp op_ = CommOp::Barrier;
  std::unique_ptr<detail::PendingOp> pending_;
  int64_t observed_ = -1;     // its id, when the observer follows it; -1 otherwise
  uint64_t observation_ = 0;  // the observation (Communicator::observe) it belongs to
};

class Communicator {
 public:
  // `watchdog`: the rank's (owned by what started MPI), which must outlive the communicator.
  explicit Communicator(Watchdog& watchdog) : watchdog_(watchdog) {}
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "mpi" or "nccl", for logs and results
  // Whether its collectives complete on a device stream, where no host wait polls them (a hung
  // one then shows only as work that does not end; the step takes a deadline for it).
  virtual bool completes_on_device_stream() const { return false; }
  virtual MPI_Comm mpi_comm() const = 0;  // for out-of-band use (checkpoint I/O, watchdog)

  // --- non-blocking collectives (counts in elements) ---------------------------------------
  // In place: data (count) becomes the element-wise sum over ranks.
  CommRequest iall_reduce_sum(void* data, size_t count, DType type, CommTag tag = {});
  // send (size()*recv_count): rank r receives in recv (recv_count) the sum over ranks of shard r.
  // In place when recv == send + rank()*recv_count.
  CommRequest ireduce_scatter_sum(const void* send, void* recv, size_t recv_count, DType type,
                                  CommTag tag = {});
  // recv (size()*send_count) receives every rank's send (send_count) in rank order.
  // In place when send == recv + rank()*send_count.
  CommRequest iall_gather(const void* send, void* recv, size_t send_count, DType type,
                          CommTag tag = {});
  // data (count) on every rank becomes root's.
  CommRequest ibroadcast(void* data, size_t count, DType type, int root);
  // send holds size() blocks of block_count elements, block p for rank p; recv (size() blocks)
  // receives in block p what rank p sent this rank. Never in place (send and recv are disjoint).
  CommRequest iall_to_all(const void* send, void* recv, size_t block_count, DType type,
                          CommTag tag = {});

  // --- blocking forms: the non-blocking call plus wait ----------------------------------------
  void all_reduce_sum(void* data, size_t count, DType type, CommTag tag = {}) {
    iall_reduce_sum(data, count, type, tag).wait(true);
  }
  void reduce_scatter_sum(const void* send, void* recv, size_t recv_count, DType type) {
    ireduce_scatter_sum(send, recv, recv_count, type).wait(true);
  }
  void all_gather(const void* send, void* recv, size_t send_count, DType type, CommTag tag = {}) {
    iall_gather(send, recv, send_count, type, tag).wait(true);
  }
  void broadcast(void* data, size_t count, DType type, int root) {
    ibroadcast(data, count, type, root).wait(true);
  }
  void all_to_all(const void* send, void* recv, size_t block_count, DType type, CommTag tag = {}) {
    iall_to_all(send, recv, block_count, type, tag).wait(true);
  }
  void barrier();

  // --- the same on a 1-D View of float (or bf16) in the default memory space -----------------
  template <typename T, typename... P>
  CommRequest iall_reduce_sum(const Kokkos::View<T*, P...>& data, CommTag tag = {}) {
    return iall_reduce_sum(data.data(), data.extent(0), dtype_of<std::remove_const_t<T>>(), tag);
  }

  // Lets in-flight operations advance. MPI libraries progress non-blocking collectives only
  // inside MPI calls, so the engine calls this between kernels to overlap communication. It
  // also tells the observers of the observed collectives it sees complete.
  void progress();

  // From now on `observer` too is told of every collective this communicator posts, waits for
  // and sees complete (comm/collective_observer.hpp), until unobserve(observer). Each change of
  // the observers starts a new observation: collectives posted before it are followed no more.
  // An observer must outlive its observation.
  void observe(CollectiveObserver* observer);
  void unobserve(CollectiveObserver* observer);

  // The watchdog: a wait that lasts longer than this ends the job with a message naming the
  // operation and the ranks that have not reached it (comm.timeout_s). Collective the first time
  // (it sets up how ranks see each other's progress).
  virtual void set_timeout(double seconds) { (void)seconds; }
  // The watchdog this communicator's waits run under; also for the raw MPI and file waits of
  // code that holds the communicator (agreements, checkpoint and results I/O).
  Watchdog& watchdog() const { return watchdog_; }

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = CommStats{}; }

 protected:
  // Backends post the operation and return its pending state (nullptr when already complete).
  virtual std::unique_ptr<detail::PendingOp> post_all_reduce(void* data, size_t count,
                                                             DType type) = 0;
  virtual std::unique_ptr<detail::PendingOp> post_reduce_scatter(const void* send, void* recv,
                                                                 size_t recv_count, DType type) = 0;
  virtual std::unique_ptr<detail::PendingOp> post_all_gather(const void* send, void* recv,
                                                             size_t send_count, DType type) = 0;
  virtual std::unique_ptr<detail::PendingOp> post_broadcast(void* data, size_t count, DType type,
                                                            int root) = 0;
  virtual std::unique_ptr<detail::PendingOp> post_all_to_all(const void* send, void* recv,
                                                             size_t block_count, DType type) = 0;
  virtual void do_barrier() = 0;
  // The backend's part of progress().
  virtual void do_progress() {}
  // Stream-ordered backends mark their stream where a collective begins and where it ends
  // (PendingOp::device_posted, device_completed): a following observer's mark, none when no
  // observer follows.
  StreamMark mark_stream(void* stream);

 private:
  friend class CommRequest;
  // An observed collective in flight: its id and its operation (owned by its request).
  struct InFlight {
    int64_t id;
    detail::PendingOp* pending;
  };
  // `before`: the host clock before the backend posted the operation (when observed).
  CommRequest account(CommOp op, double whole_buffer_bytes, CommTag tag, double before,
                      std::unique_ptr<detail::PendingOp> pending);
  double now_if_observed() const;
  // Whether collective `id` of observation `observation` is observed and still in flight; ends
  // that when `done`: the observer is told (wait_ended after a wait, else completed).
  bool in_flight(int64_t id, uint64_t observation) const;
  void observed_done(int64_t id, bool waited);
  Watchdog& watchdog_;
  CommStats stats_;
  std::vector<CollectiveObserver*> observers_;
  std::vector<CollectiveObserver*> followers_;  // those of them that follow waits and completions
  uint64_t observation_ = 0;                    // counts the changes of the observers
  int64_t next_id_ = 0;
  std::vector<InFlight> in_flight_;  // the observed collectives not yet seen complete
};

// backend: "mpi", "nccl" or "auto" (nccl in builds that have it, mpi otherwise). The
// communicator spans `comm` (MPI_COMM_WORLD for a run); it does not take ownership of it. Its
// waits run under `watchdog`, which must outlive it.
std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm comm,
                                                Watchdog& watchdog);

}  // namespace zm
