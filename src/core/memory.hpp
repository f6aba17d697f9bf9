// Memory accounting by category. Every long-lived buffer of a run is a TrackedBuffer, so that the
// bytes a run holds per category (and their peak) are known exactly and can be compared with the
// planner's prediction, which computes the same sizes with the same code.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/compat.hpp"

namespace zm {

enum class MemCategory : int {
  Parameters = 0,
  Gradients,
  Optimizer,
  Activations,
  CommBuffers,
  Workspace,
  // Host memory (model state a module keeps there, and its staging): not in the device totals
  // (peak_total, MemoryPlan::total()).
  Host,
  // Files (model state a module keeps on a drive): counted, never allocated: its buffers have a
  // size and no data, and the module that keeps the state reaches it.
  Storage,
  Count
};
constexpr int kMemCategories = static_cast<int>(MemCategory::Count);
const char* mem_category_name(MemCategory category);  // "parameters", "gradients", ...
constexpr bool on_device(MemCategory category) {
  return category != MemCategory::Host && category != MemCategory::Storage;
}

struct MemoryFigures {
  std::array<size_t, kMemCategories> current{};
  std::array<size_t, kMemCategories> peak{};
  size_t peak_total = 0;  // peak of the device categories' sum, not the sum of their peaks
};

// One buffer a component allocates (element_bytes 4: float or int32; 2: bf16). Components publish
// the list they allocate, so that the planner can sum the same list.
struct BufferSpec {
  std::string name;
  MemCategory category;
  int64_t count;
  int element_bytes = 4;
  double bytes() const { return static_cast<double>(count) * element_bytes; }
};

// The tracked bytes of a run, by category: the program owns one and passes it down (RunContext,
// comm/run_context.hpp) to every PlannedAllocator.
class MemoryLedger {
 public:
  void add(MemCategory category, size_t bytes);
  void remove(MemCategory category, size_t bytes);
  // Peaks restart from the current figures (e.g. between the stages of a `stage = "all"` run).
  void reset_peaks();
  const MemoryFigures& figures() const { return figures_; }
  size_t current(MemCategory c) const { return figures_.current[static_cast<int>(c)]; }
  size_t peak(MemCategory c) const { return figures_.peak[static_cast<int>(c)]; }

 private:
  MemoryFigures figures_;
  size_t current_total_ = 0;
};

// Host memory for the Host category: pinned in CUDA builds, so that copies to and from the device
// run at the link's rate and asynchronously, and device kernels may still reach it.
#if defined(KOKKOS_ENABLE_CUDA)
using HostStagingSpace = Kokkos::CudaHostPinnedSpace;
#else
using HostStagingSpace = Kokkos::HostSpace;
#endif

// A move-only 1-D View whose bytes are recorded in a ledger (if any) while it is alive: in device
// memory, or for the Host category in HostStagingSpace (typed as a device View over that memory,
// which the device reaches through unified addressing, so that code taking either is the same);
// for the Storage category none (data() is null, size() the elements counted).
template <typename T>
class TrackedBuffer {
 public:
  using view_type = Kokkos::View<T*, MemSpace>;

  TrackedBuffer() = default;
  TrackedBuffer(const std::string& label, MemCategory category, size_t count, MemoryLedger* ledger)
      : category_(category), bytes_(count * sizeof(T)), ledger_(ledger) {
    if (on_device(category)) {
      view_ = view_type(label, count);
    } else if (category == MemCategory::Storage) {
      count_ = count;
    } else {
      // Zeroed, as a View's allocation is.
      host_ = Kokkos::kokkos_malloc<HostStagingSpace>(label, std::max<size_t>(bytes_, 1));
      std::memset(host_, 0, bytes_);
      view_ = view_type(static_cast<T*>(host_), count);
    }
    if (ledger_) ledger_->add(category_, bytes_);
  }
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  TrackedBuffer(TrackedBuffer&& other) noexcept { *this = std::move(other); }
  TrackedBuffer& operator=(TrackedBuffer&& other) noexcept {
    if (this != &other) {
      release();
      view_ = std::exchange(other.view_, view_type());
      host_ = std::exchange(other.host_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
      count_ = std::exchange(other.count_, 0);
      category_ = other.category_;
      ledger_ = other.ledger_;
    }
    return *this;
  }
  ~TrackedBuffer() { release(); }
  // Another name for `of`'s memory, neither counted nor freed by it (`of` must outlive it).
  static TrackedBuffer alias(const TrackedBuffer& of) {
    TrackedBuffer shared;
    shared.view_ = of.view_;
    return shared;
  }

  void release() {
    if (bytes_ > 0 && ledger_) ledger_->remove(category_, bytes_);
    bytes_ = count_ = 0;
    view_ = view_type();
    if (host_) Kokkos::kokkos_free<HostStagingSpace>(host_);
    host_ = nullptr;
  }

  T* data() const { return view_.data(); }
  size_t size() const { return category_ == MemCategory::Storage ? count_ : view_.extent(0); }
  size_t bytes() const { return bytes_; }
  const view_type& view() const { return view_; }
  MemCategory category() const { return category_; }

 private:
  view_type view_;
  void* host_ = nullptr;  // the Host category's allocation, which view_ does not own
  MemCategory category_ = MemCategory::Workspace;
  size_t bytes_ = 0;
  size_t count_ = 0;  // the Storage category's elements, which have no view
  MemoryLedger* ledger_ = nullptr;
};

// Allocates exactly the buffers of a plan built by the function the planner calls, by name;
// finish() checks that nothing planned was left out. The buffers are recorded in `ledger` (null:
// untracked, for tests and tools).
class PlannedAllocator {
 public:
  PlannedAllocator(const std::vector<BufferSpec>& plan, MemoryLedger* ledger);
  template <typename T>
  TrackedBuffer<T> take(const std::string& name) {
    const BufferSpec spec = claim(name, sizeof(T));
    return TrackedBuffer<T>(name, spec.category, static_cast<size_t>(spec.count), ledger_);
  }
  bool has(const std::string& name) const;
  void finish() const;

 private:
  // The planned buffer `name`, once, checked to have elements of `element_bytes`.
  BufferSpec claim(const std::string& name, size_t element_bytes);
  std::vector<BufferSpec> remaining_;
  MemoryLedger* ledger_;
};

}  // namespace zm
