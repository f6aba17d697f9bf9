#include "zero/unit_buffer_set.hpp"

#include <fmt/format.h>

namespace zm {

std::string UnitBufferSet::name(int i) const {
  return i < 0 ? prefix + ".embed" : fmt::format("{}.{}", prefix, i);
}

void UnitBufferSet::add_to(std::vector<BufferSpec>& buffers) const {
  buffers.push_back({name(-1), MemCategory::CommBuffers, embed_elements, element_bytes});
  for (int i = 0; i < shared; ++i)
    buffers.push_back({name(i), MemCategory::CommBuffers, shared_elements, element_bytes});
}

}  // namespace zm
