// Host buffers for staging device data through MPI, allocated once and reused.
//
// Allocating page-locked memory (and freeing it) synchronises a CUDA device, so a collective must
// not allocate its staging memory. Each MPI communicator's HostStaging owns one pool; each staged
// collective takes one buffer at post and gives it back when it completes, so the pool holds as
// many buffers as collectives were ever in flight at once (buckets and prefetch keep several),
// each as large as the largest collective it served. Buffers only grow: steady-state steps
// allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.hpp"

namespace zm {

// Page-locked memory where the device is a CUDA GPU, so that the copies run at full bandwidth.
using HostBytes = Kokkos::View<char*, HostStagingSpace>;

class StagingPool;

// One buffer of the pool, lent to one collective; back to the pool when destroyed.
class StagingLease {
 public:
  StagingLease() = default;
  StagingLease(std::shared_ptr<StagingPool> pool, size_t slot, char* data);
  StagingLease(StagingLease&& other) noexcept;
  StagingLease& operator=(StagingLease&& other) noexcept;
  StagingLease(const StagingLease&) = delete;
  StagingLease& operator=(const StagingLease&) = delete;
  ~StagingLease();

  char* data() const { return data_; }

 private:
  void give_back();
  std::shared_ptr<StagingPool> pool_;
  size_t slot_ = 0;
  char* data_ = nullptr;
};

class StagingPool : public std::enable_shared_from_this<StagingPool> {
 public:
  // A buffer of at least `bytes` (> 0): a free one that fits (the smallest), else the largest
  // free one grown, else a new one.
  StagingLease acquire(size_t bytes);

  uint64_t allocations() const { return allocations_; }  // host allocations, growths included
  size_t buffers() const { return slots_.size(); }
  size_t lent() const;  // buffers held by collectives in flight

 private:
  friend class StagingLease;
  struct Slot {
    HostBytes bytes;
    bool lent = false;
  };
  void release(size_t slot) { slots_[slot].lent = false; }
  std::vector<Slot> slots_;
  uint64_t allocations_ = 0;
};

}  // namespace zm
