// Writes a token shard in llm.c's format (a header of 256 int32: magic 20240520, version 1, the
// token count; then the uint16 tokens), for the tests that read one: the reader is the module
// token_shards' (src/modules/token_shards/token_shard.hpp), which a test of another module finds
// registered where the build has it (reads_data_files).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/modules.hpp"

namespace zm::testing {

inline void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("{}: cannot create the token shard", path);
  int32_t header[256] = {};
  header[0] = 20240520;
  header[1] = 1;
  header[2] = static_cast<int32_t>(tokens.size());
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out.write(reinterpret_cast<const char*>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
  if (!out) fail("{}: write failed", path);
}

// Whether this build reads data files (a module that provides them is built): the tests that
// train or evaluate on a shard are skipped where not.
inline bool reads_data_files() {
  for (const ModuleInfo& module : modules())
    for (const std::string& what : module.provides)
      if (what == "data files") return module.built;
  return false;
}

}  // namespace zm::testing
