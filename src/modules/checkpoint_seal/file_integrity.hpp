// Whole-file integrity for checkpoints, checked before the HDF5 library parses anything.
//
// HDF5 verifies dataset contents (Fletcher32) but parses its own metadata trustingly: a damaged
// object header can make libhdf5 read out of bounds or try absurd allocations (the fuzz test found
// both in HDF5 1.10). So a checkpoint carries, in an HDF5 user block (bytes HDF5 reserves for the
// application at the start of the file), a header with the file's size and a 64-bit hash of every
// fixed-size block of the rest of the file. Loading verifies it first; a file that is truncated,
// corrupted anywhere, or not a zeromini checkpoint is refused before HDF5 opens it.
//
// Layout of the user block (little-endian 64-bit words): "ZMCKPT01", user block size, block size,
// file size, block count, one hash per block, then a hash of all of the above.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>

namespace zm {

class Watchdog;

// Bytes to reserve as the HDF5 user block for a file of about `expected_bytes` (a power of two
// >= 4096, as HDF5 requires, large enough for the block hashes).
uint64_t integrity_user_block_size(uint64_t expected_bytes);

// Collective over `comm`, under `watchdog`: hashes the closed file's blocks (shared among the
// ranks) and writes the header into its user block. The file must have been created with that user
// block size. Returns "" or what failed, the same on every rank.
std::string seal_file(const std::string& path, uint64_t user_block_size, MPI_Comm comm,
                      Watchdog& watchdog);

// Collective over `comm` (or MPI_COMM_SELF for one reader), under `watchdog`: "" when the file is
// intact, else the reason (naming the file). Every rank returns the same answer.
std::string verify_file(const std::string& path, MPI_Comm comm, Watchdog& watchdog);

// One rank: whether the file starts with the header's magic (a sealed file, intact or not).
bool has_integrity_header(const std::string& path);

// The storage zeromini writes, checked before any data of the dataset `name` is read: little-endian
// fp32, chunked, Fletcher32 as the only filter, and every stored chunk exactly one chunk of data
// plus its 4-byte checksum. A file that differs (damaged metadata, or not written by zeromini) is
// refused here (zm::Error) rather than handed to the HDF5 library's read path.
void validate_storage(hid_t set, const std::string& path, const std::string& name);

}  // namespace zm
