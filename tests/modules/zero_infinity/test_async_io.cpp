// The NVMe tier's swap files and I/O engines (src/modules/zero_infinity/): what is written comes
// back, with more transfers than the engine keeps in flight and waited out of order; a failed,
// short or too-large transfer is an error naming the operation, what it moved and the file; a
// swap file leaves nothing in its directory; a directory that cannot hold the state is refused.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "common/test_paths.hpp"
#include "core/error.hpp"
#include "modules/zero_infinity/async_io.hpp"

namespace {

using namespace zm::nvme;
namespace fs = std::filesystem;

constexpr int64_t kBlock = 64 * 1024;

// Fills block b with a pattern of its own.
void fill_block(void* data, int b) {
  auto* words = static_cast<uint32_t*>(data);
  for (int64_t i = 0; i < kBlock / 4; ++i) words[i] = static_cast<uint32_t>(b * 1000003 + i);
}

std::string message_of(AsyncIo& io, int64_t ticket) {
  try {
    io.wait(ticket);
  } catch (const zm::Error& error) {
    return error.what();
  }
  return "";
}

// The engines this build has: the threads always; io_uring where liburing was found (else it
// must be refused by name).
std::vector<IoEngine> engines() {
  std::vector<IoEngine> all{IoEngine::Threads};
  try {
    make_async_io(IoEngine::Uring, 2, nullptr);
    all.push_back(IoEngine::Uring);
  } catch (const zm::Error& refused) {
    EXPECT_NE(std::string(refused.what()).find("liburing"), std::string::npos) << refused.what();
  }
  return all;
}

class AsyncIoTest : public ::testing::TestWithParam<IoEngine> {};

TEST_P(AsyncIoTest, WrittenBlocksReadBackOutOfOrder) {
  const fs::path dir = zm_test::fresh_dir("async-io");
  constexpr int kBlocks = 16;
  SwapFile file(dir, "rank 0 test state", kBlocks * kBlock);
  auto io = make_async_io(GetParam(), 4, nullptr);
  std::vector<AlignedBuffer> written, read;
  std::vector<int64_t> tickets;
  for (int b = 0; b < kBlocks; ++b) {
    written.emplace_back(kBlock);
    fill_block(written.back().data(), b);
    tickets.push_back(io->submit({IoOp::Write, &file, written.back().data(), kBlock, b * kBlock,
                                  "block " + std::to_string(b)}));
  }
  for (int b = kBlocks - 1; b >= 0; --b) io->wait(tickets[b]);  // newest first
  tickets.clear();
  for (int b = 0; b < kBlocks; ++b) {
    read.emplace_back(kBlock);
    tickets.push_back(io->submit(
        {IoOp::Read, &file, read.back().data(), kBlock, (kBlocks - 1 - b) * kBlock, "block"}));
  }
  for (int b = 0; b < kBlocks; ++b) {
    io->wait(tickets[b]);
    EXPECT_EQ(std::memcmp(read[b].data(), written[kBlocks - 1 - b].data(), kBlock), 0) << b;
  }
  EXPECT_EQ(io->figures().writes, kBlocks);
  EXPECT_EQ(io->figures().reads, kBlocks);
  EXPECT_EQ(io->figures().bytes_read, kBlocks * kBlock);
  EXPECT_EQ(io->figures().bytes_written, kBlocks * kBlock);
}

TEST_P(AsyncIoTest, ShortReadIsAnErrorNamingTheTransfer) {
  const fs::path dir = zm_test::fresh_dir("async-io-short");
  SwapFile file(dir, "rank 0 Adam m", 2 * kBlock);
  auto io = make_async_io(GetParam(), 2, nullptr);
  AlignedBuffer buffer(2 * kBlock);
  // From the file's last block on: one block is there, the second is past its end.
  const std::string message = message_of(
      *io, io->submit({IoOp::Read, &file, buffer.data(), 2 * kBlock, kBlock, "unit 3's Adam m"}));
  EXPECT_NE(message.find("NVMe read of unit 3's Adam m failed"), std::string::npos) << message;
  EXPECT_NE(message.find("short read: 65536 of 131072 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find(dir.string() + " (rank 0 Adam m)"), std::string::npos) << message;
  EXPECT_EQ(io->figures().reads, 0);
}

TEST_P(AsyncIoTest, FailedTransferIsAnErrorWithItsReason) {
  const fs::path dir = zm_test::fresh_dir("async-io-error");
  SwapFile file(dir, "rank 1 master", kBlock);
  auto io = make_async_io(GetParam(), 2, nullptr);
  // A buffer the process cannot write: the kernel refuses the read (EFAULT), as it would report
  // a failing drive, through the engine's own path.
  void* unmapped = reinterpret_cast<void*>(uintptr_t{kAlignment});
  const std::string message =
      message_of(*io, io->submit({IoOp::Read, &file, unmapped, kBlock, 0, "unit 0's master"}));
  EXPECT_NE(message.find("NVMe read of unit 0's master failed"), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(EFAULT)), std::string::npos) << message;
}

TEST_P(AsyncIoTest, WriteBeyondTheFileSizeLimitIsAnError) {
  const fs::path dir = zm_test::fresh_dir("async-io-full");
  SwapFile file(dir, "rank 0 Adam v", 4 * kBlock);
  auto io = make_async_io(GetParam(), 2, nullptr);
  AlignedBuffer buffer(kBlock);
  // A limit on file sizes below the write: the kernel refuses it as a full disk would (EFBIG in
  // place of ENOSPC), with SIGXFSZ ignored as a run would.
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = saved;
  limited.rlim_cur = 2 * kBlock;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  const std::string message = message_of(
      *io, io->submit({IoOp::Write, &file, buffer.data(), kBlock, 3 * kBlock, "unit 7's Adam v"}));
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  EXPECT_NE(message.find("NVMe write of unit 7's Adam v failed"), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(EFBIG)), std::string::npos) << message;
  EXPECT_EQ(io->figures().writes, 0);
}

INSTANTIATE_TEST_SUITE_P(Engines, AsyncIoTest, ::testing::ValuesIn(engines()),
                         [](const ::testing::TestParamInfo<IoEngine>& engine) {
                           return engine.param == IoEngine::Uring ? "io_uring" : "threads";
                         });

TEST(SwapFile, LeavesNothingInItsDirectory) {
  const fs::path dir = zm_test::fresh_dir("swap-unnamed");
  {
    SwapFile file(dir, "rank 0 state", 8 * kBlock);
    EXPECT_EQ(file.bytes(), 8 * kBlock);
    EXPECT_TRUE(fs::is_empty(dir)) << "a swap file has no name: the kernel removes it at exit";
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(SwapFile, RefusesADirectoryThatCannotHoldIt) {
  const fs::path dir = zm_test::fresh_dir("swap-refused");
  const auto refusal = [](const std::string& where, int64_t bytes) -> std::string {
    try {
      SwapFile file(where, "rank 2 optimizer state", bytes);
    } catch (const zm::Error& error) {
      return error.what();
    }
    return "";
  };
  const std::string missing = refusal((dir / "absent").string(), kBlock);
  EXPECT_NE(missing.find("absent: No such file or directory; expected an existing directory"),
            std::string::npos)
      << missing;
  std::ofstream((dir / "plain").string()) << "x";
  const std::string plain = refusal((dir / "plain").string(), kBlock);
  EXPECT_NE(plain.find("plain: not a directory"), std::string::npos) << plain;
  const int64_t too_much = free_bytes(dir.string()) + (int64_t{1} << 30);
  const std::string full = refusal(dir.string(), too_much);
  EXPECT_NE(
      full.find(std::to_string(aligned_size(too_much)) + " needed for rank 2 optimizer state"),
      std::string::npos)
      << full;
}

}  // namespace
