// The collectives ZeRO needs, behind one interface. Backends (comm_types/) implement the post_*
// hooks; this base class counts for all of them alike: calls posted, bytes sent per rank
// (ring_bytes) and seconds waited for completion. Data pointers are in the default Kokkos memory
// space (device memory in CUDA builds).
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
enum class CommOp { AllReduce = 0, ReduceScatter, AllGather, Broadcast, Barrier, AllToAll, Count };
constexpr int kCommOps = static_cast<int>(CommOp::Count);
const char* comm_op_name(CommOp op);  // "all_reduce", "reduce_scatter", ...

// U8: raw bytes (e.g. packed quantized segments), moved but never reduced.
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
//   all_to_all       (N-1)/N * S   S = bytes of the whole send buffer (a rank keeps its own block)
//   barrier          0
// The planner prices traffic with the same function.
double ring_bytes(CommOp op, double whole_buffer_bytes, int ranks);

// The nodes a communicator's ranks sit on, where it is not a mesh dimension's (the planner prices
// its links by it).
struct NodeSpan {
  int nodes = 1;     // distinct nodes among the communicator's ranks
  int per_node = 1;  // its ranks on each of them (k); 0: not the same on every node
};

// Why a collective runs, for its observers. ModelParallel: the model's own collectives (its
// activations' sums and gathers).
enum class CommPurpose : int { Other = 0, GradReduce, ParamGather, Stats, ModelParallel };

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

// A point of a device stream an observer marked (CollectiveObserver::mark_stream); opaque here.
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
  // Blocks until complete; for a stream-ordered backend (NCCL), until work enqueued afterwards on
  // the default execution space will see the result: the compute stream waits, not the host.
  virtual void wait() = 0;
  virtual bool stream_ordered() const { return false; }
  // Marks of the device stream where it began and ended (Communicator::mark_stream).
  StreamMark device_posted, device_completed;
};
}  // namespace detail

class Communicator;

// Handle to a posted collective. Move-only; destroying an unfinished request waits for it.
class CommRequest {
 public:
  CommRequest() = default;
  CommRequest(Communicator* owner, CommOp op, std::unique_ptr<detail::PendingOp> pending,
              int64_t observed);
  CommRequest(CommRequest&& other) noexcept { *this = std::move(other); }
  CommRequest& operator=(CommRequest&&) noexcept;
  CommRequest(const CommRequest&) = delete;
  CommRequest& operator=(const CommRequest&) = delete;
  ~CommRequest() {
    if (pending_) wait();
  }

  // Waits for completion, counted in the operation's `seconds`. `blocking`: nothing was done since
  // the post (a blocking collective).
  void wait(bool blocking = false);
  bool test();  // progresses without blocking; true when complete
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
  // `watchdog`: the rank's, which must outlive the communicator.
  explicit Communicator(Watchdog& watchdog) : watchdog_(watchdog) {}
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "mpi" or "nccl", for logs and results
  // Whether its collectives complete on a device stream, where no host wait polls them.
  virtual bool completes_on_device_stream() const { return false; }
  virtual MPI_Comm mpi_comm() const = 0;  // for out-of-band use (checkpoint I/O, watchdog)

  // Non-blocking collectives (counts in elements). In place: data becomes the sum over ranks.
  CommRequest iall_reduce_sum(void* data, size_t count, DType type, CommTag tag = {});
  // send (size()*recv_count): rank r receives in recv (recv_count) the sum over ranks of shard r.
  // In place when recv == send + rank()*recv_count.
  CommRequest ireduce_scatter_sum(const void* send, void* recv, size_t recv_count, DType type,
                                  CommTag tag = {});
  // recv (size()*send_count) receives every rank's send (send_count) in rank order.
  // In place when send == recv + rank()*send_count.
  CommRequest iall_gather(const void* send, void* recv, size_t send_count, DType type,
                          CommTag tag = {});
  CommRequest ibroadcast(void* data, size_t count, DType type, int root);
  // Block p of send (size() blocks of block_count) goes to rank p, into its recv's block of this
  // rank. Never in place.
  CommRequest iall_to_all(const void* send, void* recv, size_t block_count, DType type,
                          CommTag tag = {});

  // Blocking forms.
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

  // Lets in-flight operations advance (MPI progresses them only inside MPI calls), so that the
  // engine overlaps communication with its kernels; tells observers of those it sees complete.
  void progress();

  // `observer` is told of every collective posted, waited for and seen complete until unobserve()
  // (it must outlive that); each change starts a new observation, following no earlier collective.
  void observe(CollectiveObserver* observer);
  void unobserve(CollectiveObserver* observer);

  // The watchdog's limit on a wait (comm.timeout_s); collective the first time.
  virtual void set_timeout(double /*seconds*/) {}
  // Also for the raw MPI and file waits of code that holds the communicator.
  Watchdog& watchdog() const { return watchdog_; }

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = CommStats{}; }

 protected:
  // The backend's post of each operation: its pending state, nullptr when already complete.
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
  virtual void do_progress() {}  // the backend's part of progress()
  // A following observer's mark of a stream-ordered backend's stream; none when none follows.
  StreamMark mark_stream(void* stream);

 private:
  friend class CommRequest;
  // An observed collective in flight (its operation owned by its request).
  struct InFlight {
    int64_t id;
    detail::PendingOp* pending;
  };
  // `before`: the host clock before the backend posted the operation (when observed).
  CommRequest account(CommOp op, double whole_buffer_bytes, CommTag tag, double before,
                      std::unique_ptr<detail::PendingOp> pending);
  double now_if_observed() const;
  // Whether collective `id` of `observation` is observed and still in flight; observed_done ends
  // that, telling the followers (wait_ended after a wait, else completed).
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

// backend: "mpi", "nccl" or "auto" (comm/backend_choice.hpp). The communicator spans `comm`
// without owning it; `watchdog` must outlive it.
std::unique_ptr<Communicator> make_communicator(const std::string& backend, MPI_Comm comm,
                                                Watchdog& watchdog);

}  // namespace zm
