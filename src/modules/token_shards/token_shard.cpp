#include "modules/token_shards/token_shard.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "core/error.hpp"
#include "core/regular_file.hpp"

namespace zm {

int64_t check_token_shard(const std::string& path, int64_t seq_len, const std::string& key) {
  // Before the open: a FIFO given as the shard would block it until a writer came.
  require_regular_file(path, fmt::format("token shard ({})", key));
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail("{}: cannot open the token shard ({})", path, key);
  const auto file_bytes = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  const int64_t header_bytes = kShardHeaderInts * static_cast<int64_t>(sizeof(int32_t));
  if (file_bytes < header_bytes)
    fail("{} ({}): not a token shard: {} bytes, shorter than the {}-byte header", path, key,
         file_bytes, header_bytes);
  int32_t header[kShardHeaderInts];
  in.read(reinterpret_cast<char*>(header), header_bytes);
  if (!in) fail("{} ({}): could not read the shard header", path, key);
  if (header[0] != kShardMagic)
    fail("{} ({}): not a token shard: magic number {} (expected {})", path, key, header[0],
         kShardMagic);
  if (header[1] != kShardVersion)
    fail("{} ({}): unsupported token shard version {} (expected {})", path, key, header[1],
         kShardVersion);
  const int64_t count = header[2];
  if (count < 0) fail("{} ({}): corrupt header: negative token count {}", path, key, count);
  // The header's count must match the file size exactly, before anything is allocated.
  const int64_t expected_bytes = header_bytes + count * static_cast<int64_t>(sizeof(uint16_t));
  if (file_bytes != expected_bytes)
    fail(
        "{} ({}): truncated or corrupt: header says {} tokens ({} bytes) but the file has {} bytes",
        path, key, count, expected_bytes, file_bytes);
  if (count < seq_len + 1)
    fail("{} ({}): {} tokens are too few for one sequence of model.seq_len = {} (need {})", path,
         key, count, seq_len, seq_len + 1);
  return count;
}

std::vector<uint16_t> read_token_shard(const std::string& path, int64_t vocab, int64_t seq_len,
                                       const std::string& key) {
  const int64_t count = check_token_shard(path, seq_len, key);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open the token shard ({})", path, key);
  in.seekg(kShardHeaderInts * static_cast<int64_t>(sizeof(int32_t)));
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  in.read(reinterpret_cast<char*>(tokens.data()), count * static_cast<int64_t>(sizeof(uint16_t)));
  if (!in) fail("{} ({}): could not read {} tokens", path, key, count);
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] >= vocab)
      fail("{} ({}): token {} at position {} is outside the vocabulary (model.vocab = {})", path,
           key, tokens[i], i, vocab);
  return tokens;
}

}  // namespace zm
