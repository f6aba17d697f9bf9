#include "modules/checkpoint_seal/file_integrity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "comm/agree.hpp"
#include "comm/watchdog.hpp"
#include "comm/watched_mpi.hpp"
#include "core/error.hpp"

namespace zm {

namespace {

constexpr char kMagic[8] = {'Z', 'M', 'C', 'K', 'P', 'T', '0', '1'};
constexpr uint64_t kMinBlock = 64ull << 20;  // 64 MiB
constexpr uint64_t kHeaderWords = 5;  // magic, user_block, block_size, file_size, block_count

// A simple 64-bit hash over 8-byte words (multiply, rotate, xor-shift): fast enough to run at
// memory speed, and any change to the data changes it with overwhelming probability.
uint64_t hash_bytes(const unsigned char* data, size_t n, uint64_t seed) {
  uint64_t h = seed ^ 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h ^= w * 0x87c37b91114253d5ull;
    h = (h << 31) | (h >> 33);
    h *= 0x4cf5ad432745937full;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, data + i, n - i);
  h ^= tail * 0x87c37b91114253d5ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

struct File {
  int fd = -1;
  explicit File(const std::string& path, int flags) : fd(::open(path.c_str(), flags)) {}
  ~File() {
    if (fd >= 0) ::close(fd);
  }
};

bool read_at(int fd, unsigned char* out, size_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

// Hashes of the blocks i with i % ranks == rank (others left 0), summed over ranks by the caller.
std::vector<uint64_t> my_block_hashes(int fd, uint64_t user_block, uint64_t size,
                                      uint64_t block_size, int rank, int ranks, bool* ok) {
  const uint64_t payload = size - user_block;
  const uint64_t blocks = (payload + block_size - 1) / block_size;
  std::vector<uint64_t> hashes(blocks, 0);
  std::vector<unsigned char> buffer;
  *ok = true;
  for (uint64_t b = static_cast<uint64_t>(rank); b < blocks; b += static_cast<uint64_t>(ranks)) {
    const uint64_t begin = user_block + b * block_size;
    const uint64_t n = std::min(block_size, size - begin);
    buffer.resize(n);
    if (!read_at(fd, buffer.data(), n, begin)) {
      *ok = false;
      return hashes;
    }
    hashes[b] = hash_bytes(buffer.data(), n, b);
  }
  return hashes;
}

uint64_t block_size_for(uint64_t payload, uint64_t user_block) {
  const uint64_t capacity = (user_block - 8 * (kHeaderWords + 1)) / 8;
  uint64_t block = kMinBlock;
  while ((payload + block - 1) / block > capacity) block *= 2;
  return block;
}

}  // namespace

uint64_t integrity_user_block_size(uint64_t expected_bytes) {
  const uint64_t blocks = expected_bytes / kMinBlock + 8;
  uint64_t size = 4096;
  while (size < 8 * (kHeaderWords + 1 + blocks)) size *= 2;
  return size;
}

std::string seal_file(const std::string& path, uint64_t user_block, MPI_Comm comm,
                      Watchdog& watchdog) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  const uint64_t size = file_size(path);
  const uint64_t block_size = block_size_for(size - user_block, user_block);
  bool ok = size > user_block;
  std::vector<uint64_t> hashes;
  {
    BlockingRegion region(watchdog, "reading " + path + " back to checksum it", kLocalRegion,
                          WaitKind::Io);
    File file(path, O_RDONLY);
    ok = ok && file.fd >= 0;
    if (ok) hashes = my_block_hashes(file.fd, user_block, size, block_size, rank, ranks, &ok);
  }
  const std::string unreadable =
      ok ? "" : fmt::format("{}: cannot read the checkpoint back to checksum it", path);
  const Agreement read = agree(watchdog, comm, unreadable, "reading the checkpoint back");
  if (!read.ok()) return read.message;
  std::vector<uint64_t> all(hashes.size(), 0);
  // Each block is hashed by exactly one rank, the others contribute 0.
  watched_reduce(watchdog, hashes.data(), all.data(), static_cast<int>(hashes.size()), MPI_UINT64_T,
                 MPI_SUM, 0, comm, "the checkpoint's block checksums");
  std::string error;
  if (rank == 0) {
    BlockingRegion region(watchdog, "writing the integrity header of " + path, kLocalRegion,
                          WaitKind::Io);
    std::vector<uint64_t> header = {0, user_block, block_size, size, all.size()};
    std::memcpy(&header[0], kMagic, 8);
    header.insert(header.end(), all.begin(), all.end());
    header.push_back(
        hash_bytes(reinterpret_cast<const unsigned char*>(header.data()), header.size() * 8, 0));
    ZM_ASSERT(header.size() * 8 <= user_block, "integrity header of {} bytes in a {}-byte block",
              header.size() * 8, user_block);
    File file(path, O_WRONLY);
    const size_t bytes = header.size() * 8;
    if (file.fd < 0 || ::pwrite(file.fd, header.data(), bytes, 0) != static_cast<ssize_t>(bytes) ||
        ::fsync(file.fd) != 0)
      error = fmt::format("{}: cannot write the integrity header: {}", path, std::strerror(errno));
  }
  return agree(watchdog, comm, error, "sealing the checkpoint").message;
}

namespace {

// This rank's view of the file: "" when the header is sound and the blocks this rank checks
// match their hashes, else the reason.
std::string local_problem(Watchdog& watchdog, const std::string& path, int rank, int ranks) {
  BlockingRegion region(watchdog, "verifying " + path, kLocalRegion, WaitKind::Io);
  const uint64_t size = file_size(path);
  File file(path, O_RDONLY);
  uint64_t head[kHeaderWords] = {};
  if (file.fd < 0) return fmt::format("{}: cannot open the checkpoint", path);
  if (size < 8 * (kHeaderWords + 1) ||
      !read_at(file.fd, reinterpret_cast<unsigned char*>(head), sizeof(head), 0) ||
      std::memcmp(head, kMagic, 8) != 0)
    return fmt::format("{}: not a zeromini checkpoint (no integrity header; {} bytes)", path, size);
  const uint64_t user_block = head[1], block_size = head[2], expected_size = head[3],
                 blocks = head[4];
  if (expected_size != size)
    return fmt::format("{}: truncated or extended: {} bytes, the checkpoint was {} bytes", path,
                       size, expected_size);
  const std::string corrupted_header = fmt::format("{}: corrupted integrity header", path);
  if (block_size < kMinBlock || blocks > size / 8 || blocks == 0 ||
      (kHeaderWords + blocks + 1) * 8 > user_block || user_block < 4096 ||
      (user_block & (user_block - 1)) != 0 || user_block >= size)
    return corrupted_header;
  std::vector<uint64_t> header(kHeaderWords + blocks + 1);
  if (!read_at(file.fd, reinterpret_cast<unsigned char*>(header.data()), header.size() * 8, 0) ||
      hash_bytes(reinterpret_cast<const unsigned char*>(header.data()), (header.size() - 1) * 8,
                 0) != header.back())
    return corrupted_header;
  if ((size - user_block + block_size - 1) / block_size != blocks) return corrupted_header;
  bool ok = true;
  const auto mine = my_block_hashes(file.fd, user_block, size, block_size, rank, ranks, &ok);
  if (!ok) return fmt::format("{}: read error while verifying", path);
  for (uint64_t b = static_cast<uint64_t>(rank); b < blocks; b += static_cast<uint64_t>(ranks))
    if (mine[b] != header[kHeaderWords + b])
      return fmt::format("{}: corrupted: bytes {}..{} fail their checksum (block {} of {})", path,
                         user_block + b * block_size,
                         std::min(size, user_block + (b + 1) * block_size) - 1, b, blocks);
  return "";
}

}  // namespace

bool has_integrity_header(const std::string& path) {
  char magic[8] = {};
  File file(path, O_RDONLY);
  return file.fd >= 0 && read_at(file.fd, reinterpret_cast<unsigned char*>(magic), 8, 0) &&
         std::memcmp(magic, kMagic, 8) == 0;
}

std::string verify_file(const std::string& path, MPI_Comm comm, Watchdog& watchdog) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  // Every rank returns the first rank's problem (the header checks are identical everywhere; the
  // block checks are spread over the ranks).
  return agree(watchdog, comm, local_problem(watchdog, path, rank, ranks),
               "verifying the checkpoint")
      .message;
}

}  // namespace zm
