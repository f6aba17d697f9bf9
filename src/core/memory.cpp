#include "core/memory.hpp"

#include <iterator>

#include "core/error.hpp"
#include "core/text.hpp"

namespace zm {

const char* mem_category_name(MemCategory category) {
  static const char* const kNames[] = {"parameters",   "gradients", "optimizer", "activations",
                                       "comm_buffers", "workspace", "host",      "storage"};
  static_assert(std::size(kNames) == kMemCategories);
  return enum_name(kNames, category);
}

void MemoryLedger::add(MemCategory category, size_t bytes) {
  const int c = static_cast<int>(category);
  figures_.current[c] += bytes;
  figures_.peak[c] = std::max(figures_.peak[c], figures_.current[c]);
  if (!on_device(category)) return;
  current_total_ += bytes;
  figures_.peak_total = std::max(figures_.peak_total, current_total_);
}

void MemoryLedger::remove(MemCategory category, size_t bytes) {
  const int c = static_cast<int>(category);
  ZM_ASSERT(figures_.current[c] >= bytes, "releasing {} bytes of {} but only {} are held", bytes,
            mem_category_name(category), figures_.current[c]);
  figures_.current[c] -= bytes;
  if (on_device(category)) current_total_ -= bytes;
}

void MemoryLedger::reset_peaks() {
  figures_.peak = figures_.current;
  figures_.peak_total = current_total_;
}

PlannedAllocator::PlannedAllocator(const std::vector<BufferSpec>& plan, MemoryLedger* ledger)
    : remaining_(plan), ledger_(ledger) {}

BufferSpec PlannedAllocator::claim(const std::string& name, size_t element_bytes) {
  const auto it = std::find_if(remaining_.begin(), remaining_.end(),
                               [&](const BufferSpec& spec) { return spec.name == name; });
  ZM_ASSERT(it != remaining_.end(), "buffer '{}' is not in the plan (or was taken twice)", name);
  const BufferSpec spec = *it;
  remaining_.erase(it);
  ZM_ASSERT(static_cast<size_t>(spec.element_bytes) == element_bytes,
            "buffer '{}' is planned with {}-byte elements but allocated with {}-byte ones",
            spec.name, spec.element_bytes, element_bytes);
  return spec;
}

bool PlannedAllocator::has(const std::string& name) const {
  for (const auto& spec : remaining_)
    if (spec.name == name) return true;
  return false;
}

void PlannedAllocator::finish() const {
  ZM_ASSERT(remaining_.empty(), "{} planned buffers were not allocated (first: {})",
            remaining_.size(), remaining_.empty() ? "" : remaining_.front().name);
}

}  // namespace zm
