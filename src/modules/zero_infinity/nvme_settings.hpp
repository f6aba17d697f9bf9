// The NVMe tier's settings, the module's deck keys (register.cpp) mapped once: where the swap
// files go, which I/O engine moves them, through how much host staging, in which requests.
#pragma once

#include <string>

#include "core/deck.hpp"
#include "modules/zero_infinity/async_io.hpp"

namespace zm {

struct NvmeSettings {
  std::string dir;                               // zero.nvme_dir
  std::string where;                             // its file:line, for messages
  nvme::IoEngine engine = nvme::IoEngine::Auto;  // zero.nvme_engine
  int buffers = 3;                               // zero.nvme_buffers: staging slots
  int64_t block_bytes = 0;  // zero.nvme_block_kib x 1024: a request's largest (0: a whole unit)
  bool gradients = false;   // zero.nvme_gradients: the gradient shard in the swap files too
};
NvmeSettings nvme_settings(const Deck& deck);

// Where a run keeps state on NVMe: zero.nvme_dir is set and names a directory this process can
// write (its free space is checked against the swap files' size when they are made, before the
// first step); zero.nvme_gradients where the micro-steps' sum is not taken in fp32 on the host.
// Throws zm::Error naming the key's file:line.
void check_nvme_settings(const Deck& deck);

}  // namespace zm
