#include "modules/mpi_staging/staging_pool.hpp"

#include <utility>

namespace zm {

StagingLease::StagingLease(std::shared_ptr<StagingPool> pool, size_t slot, char* data)
    : pool_(std::move(pool)), slot_(slot), data_(data) {}

StagingLease::StagingLease(StagingLease&& other) noexcept
    : pool_(std::move(other.pool_)), slot_(other.slot_), data_(other.data_) {
  other.data_ = nullptr;
}

StagingLease& StagingLease::operator=(StagingLease&& other) noexcept {
  if (this != &other) {
    give_back();
    pool_ = std::move(other.pool_);
    slot_ = other.slot_;
    data_ = other.data_;
    other.data_ = nullptr;
  }
  return *this;
}

StagingLease::~StagingLease() {
  give_back();
}

void StagingLease::give_back() {
  if (pool_) pool_->release(slot_);
  pool_.reset();
  data_ = nullptr;
}

size_t StagingPool::lent() const {
  size_t n = 0;
  for (const Slot& slot : slots_) n += slot.lent ? 1 : 0;
  return n;
}

StagingLease StagingPool::acquire(size_t bytes) {
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t fitting = kNone, largest = kNone;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].lent) continue;
    const size_t size = slots_[i].bytes.extent(0);
    if (size >= bytes && (fitting == kNone || size < slots_[fitting].bytes.extent(0))) fitting = i;
    if (largest == kNone || size > slots_[largest].bytes.extent(0)) largest = i;
  }
  size_t chosen = fitting;
  if (chosen == kNone) {
    // Growing the largest free buffer keeps the count at the number ever in flight at once.
    if (largest == kNone) {
      largest = slots_.size();
      slots_.push_back(Slot{});
    }
    chosen = largest;
    slots_[chosen].bytes = HostBytes();  // free before allocating: the peak stays one buffer
    slots_[chosen].bytes =
        HostBytes(Kokkos::view_alloc("mpi_staging", Kokkos::WithoutInitializing), bytes);
    ++allocations_;
  }
  slots_[chosen].lent = true;
  return StagingLease(shared_from_this(), chosen, slots_[chosen].bytes.data());
}

}  // namespace zm
