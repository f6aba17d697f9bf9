// What a module adds around a checkpoint file (io/checkpoint.hpp) to guard it: room of its own at
// the start of the file (an HDF5 user block), a step once the file is written and closed (before
// it is renamed into place), a check of the whole file before the HDF5 library opens it, and one
// of each dataset before it is read. Without a guard a checkpoint is written and read as HDF5
// leaves it (still atomically: written under a temporary name, fsynced and renamed).
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

namespace zm {

class Watchdog;

struct CheckpointGuard {
  // Bytes reserved at the start of a file of about `approximate_bytes` (a power of two >= 512,
  // as HDF5 requires of a user block).
  std::function<uint64_t(uint64_t approximate_bytes)> header_bytes;
  // Collective over `comm`: the closed file `path`, created with `header_bytes` in front. Returns
  // "" or what failed, the same on every rank.
  std::function<std::string(const std::string& path, uint64_t header_bytes, MPI_Comm comm,
                            Watchdog& watchdog)>
      written;
  // Collective over `comm` (MPI_COMM_SELF for one reader): "" when the file may be opened, else
  // why not (naming the file), the same on every rank. `any_file`: the file may be any HDF5 file
  // (zeromini's own results among them): only a file that carries the guard's header is checked.
  std::function<std::string(const std::string& path, MPI_Comm comm, Watchdog& watchdog,
                            bool any_file)>
      check_file;
  // One rank: the dataset `name` of the open checkpoint `path`, before it is read; throws
  // zm::Error to refuse the file.
  std::function<void(hid_t set, const std::string& path, const std::string& name)> check_dataset;
};

// At most one guard (a second is a programming error).
void set_checkpoint_guard(CheckpointGuard guard);

// The guard's parts, or what a file without a guard gets (0 bytes, "", nothing checked).
uint64_t checkpoint_header_bytes(uint64_t approximate_bytes);
std::string guard_written_checkpoint(const std::string& path, uint64_t header_bytes, MPI_Comm comm,
                                     Watchdog& watchdog);
std::string check_checkpoint_file(const std::string& path, MPI_Comm comm, Watchdog& watchdog,
                                  bool any_file = false);
void check_checkpoint_dataset(hid_t set, const std::string& path, const std::string& name);

}  // namespace zm
