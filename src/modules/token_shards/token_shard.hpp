// Token shards in llm.c's format: a header of 256 int32 (magic 20240520, version 1, token count,
// the rest zero), then `count` uint16 tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zm {

constexpr int32_t kShardMagic = 20240520;
constexpr int32_t kShardVersion = 1;
constexpr int64_t kShardHeaderInts = 256;

// Checks a shard without reading its tokens: a regular file, the header's magic and version, its
// token count against the file size and against the sequence length the run needs (at least
// seq_len + 1 tokens). Returns the token count; errors (zm::Error) name the file, the deck key
// that gave its path (`key`, e.g. "data.source") and the cause.
// `run` calls it with the deck's checks, on every rank, so that a file that is not a shard is
// bad input (exit status 2) before training starts.
int64_t check_token_shard(const std::string& path, int64_t seq_len, const std::string& key);

// Reads and validates a whole shard: check_token_shard, then every token against the vocabulary.
std::vector<uint16_t> read_token_shard(const std::string& path, int64_t vocab, int64_t seq_len,
                                       const std::string& key);

}  // namespace zm
