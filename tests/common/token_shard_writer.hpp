// Writes a token shard in llm.c's format (io/token_shard.hpp), for the tests that read one.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/token_shard.hpp"

namespace zm::testing {

inline void write_token_shard(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail("{}: cannot create the token shard", path);
  int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out.write(reinterpret_cast<const char*>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
  if (!out) fail("{}: write failed", path);
}

}  // namespace zm::testing
