#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include <fmt/format.h>

#include "common/token_shard_writer.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "modules/token_shards/token_shard.hpp"

namespace {

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         fmt::format("zeromini-{}-{}", static_cast<long>(::getpid()), name);
}

std::string error_reading(const std::string& path, int64_t vocab, int64_t seq_len) {
  try {
    zm::read_token_shard(path, vocab, seq_len, "data.source");
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenShard, RoundTrip) {
  const auto path = temp_file("ok.bin").string();
  std::vector<uint16_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  zm::testing::write_token_shard(path, tokens);
  EXPECT_EQ(zm::read_token_shard(path, 11, 4, "data.source"), tokens);
  std::filesystem::remove(path);
}

TEST(TokenShard, BadFilesAreRefusedWithTheirCause) {
  const auto path = temp_file("bad.bin").string();
  std::vector<uint16_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  zm::testing::write_token_shard(path, tokens);
  EXPECT_EQ(
      error_reading(path, 10, 4),
      path + " (data.source): token 10 at position 9 is outside the vocabulary (model.vocab = 10)");
  EXPECT_EQ(
      error_reading(path, 11, 16),
      path +
          " (data.source): 10 tokens are too few for one sequence of model.seq_len = 16 (need 17)");

  // Truncated: the header promises more tokens than the file holds.
  std::filesystem::resize_file(path, 1024 + 2 * 7);
  EXPECT_EQ(error_reading(path, 11, 4), path +
                                            " (data.source): truncated or corrupt: header says 10 "
                                            "tokens (1044 bytes) but the file has "
                                            "1038 bytes");

  // Wrong magic.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    int32_t magic = 12345;
    f.write(reinterpret_cast<const char*>(&magic), sizeof(magic));
  }
  EXPECT_EQ(error_reading(path, 11, 4),
            path + " (data.source): not a token shard: magic number 12345 (expected 20240520)");

  // A hostile header: a huge count must be refused before anything is allocated.
  zm::testing::write_token_shard(path, tokens);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    int32_t count = 2000000000;
    f.write(reinterpret_cast<const char*>(&count), sizeof(count));
  }
  EXPECT_NE(error_reading(path, 11, 4).find("header says 2000000000 tokens"), std::string::npos);

  std::filesystem::resize_file(path, 100);
  EXPECT_EQ(
      error_reading(path, 11, 4),
      path + " (data.source): not a token shard: 100 bytes, shorter than the 1024-byte header");
  std::filesystem::remove(path);
  EXPECT_EQ(error_reading(path, 11, 4), path + ": the token shard (data.source) does not exist");
}

TEST(TokenShard, FilesThatAreNotRegularAreRefusedBeforeAnyOpen) {
  const auto fifo = temp_file("pipe.bin").string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto pending = std::async(std::launch::async, [&] { return error_reading(fifo, 11, 4); });
  if (pending.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    // Blocked in the open: a writer that comes and goes gives it end-of-file, so the test ends.
    ADD_FAILURE() << "reading " << fifo << " blocked";
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  EXPECT_EQ(pending.get(), fifo +
                               ": the token shard (data.source) is a FIFO (named pipe), not a "
                               "regular file");
  std::filesystem::remove(fifo);
  const auto dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(error_reading(dir, 11, 4),
            dir + ": the token shard (data.source) is a directory, not a regular file");
}

}  // namespace
