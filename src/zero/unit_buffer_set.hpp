// A set of unit-sized communication buffers, declared once: one for the embedding unit (named
// <prefix>.embed) and `shared` more used in turn by the other units (<prefix>.0, <prefix>.1, ...).
// The planner lists it and the path allocates it from the same declaration, so the two cannot
// disagree on names, counts or sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.hpp"

namespace zm {

struct UnitBufferSet {
  std::string prefix;
  int64_t embed_elements = 0;   // the embedding unit's buffer
  int64_t shared_elements = 0;  // each of the others' (the largest unit they serve)
  int shared = 0;               // how many others
  int element_bytes = 4;

  // Buffer i: -1 the embedding unit's, 0..shared-1 the others.
  std::string name(int i) const { return prefix + (i < 0 ? ".embed" : "." + std::to_string(i)); }
  void add_to(std::vector<BufferSpec>& buffers) const {
    for (int i = -1; i < shared; ++i)
      buffers.push_back({name(i), MemCategory::CommBuffers,
                         i < 0 ? embed_elements : shared_elements, element_bytes});
  }
  // Takes the set's buffers from an allocator built on a list it was added to: [0] the
  // embedding unit's, [1..shared] the others.
  template <typename T>
  std::vector<TrackedBuffer<T>> take(PlannedAllocator& alloc) const {
    std::vector<TrackedBuffer<T>> buffers;
    for (int i = -1; i < shared; ++i) buffers.push_back(alloc.take<T>(name(i)));
    return buffers;
  }
};

}  // namespace zm
