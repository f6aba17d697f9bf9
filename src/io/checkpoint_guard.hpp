// What modules add around a checkpoint file (io/checkpoint.hpp).
//
// A guard: room of its own at the start of the file (an HDF5 user block), a step once the file is
// written and closed (before it is renamed into place), a check of the whole file before HDF5
// opens it, and one of each dataset before it is read. Without one, files are as HDF5 leaves them.
//
// Room on disk: held on rank 0 before the file's first byte is written and handed over part by
// part, so that a disk that fills up stops the write at its start, where every rank stops
// together.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace zm {

class Watchdog;

struct CheckpointGuard {
  // Bytes reserved at the start of a file of about `approximate_bytes` (a power of two >= 512,
  // as HDF5 requires of a user block).
  std::function<uint64_t(uint64_t approximate_bytes)> header_bytes;
  // Collective over `comm`: the closed file `path`, created with `header_bytes` in front; "" or
  // what failed, the same on every rank.
  std::function<std::string(const std::string& path, uint64_t header_bytes, MPI_Comm comm,
                            Watchdog& watchdog)>
      written;
  // Collective over `comm` (MPI_COMM_SELF for one reader): "" when the file may be opened, else
  // why not, the same on every rank. `any_file`: any HDF5 file may come (results among them);
  // only one that carries the guard's header is checked.
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

// One checkpoint write's room, rank 0's. The file's parts, in the order written: the header (the
// guard's bytes and HDF5's superblock, part 0), then each dataset's data (part 1 + i).
class CheckpointRoom {
 public:
  virtual ~CheckpointRoom() = default;
  // Before the file is created in `dir`: "" when there is room (held), else why not.
  virtual std::string hold(const std::string& dir, uint64_t header_bytes,
                           const std::vector<uint64_t>& dataset_bytes) = 0;
  // The file's size as estimated when room was held.
  virtual uint64_t estimated_bytes() const = 0;
  // Part `part` is about to be written: its room handed over.
  virtual void before_part(size_t part) = 0;
  // The parts are written (HDF5's metadata comes with the flush and the close): all handed over.
  virtual void release_all() = 0;
};

// At most one maker (a second is a programming error).
void set_checkpoint_room(std::function<std::unique_ptr<CheckpointRoom>()> make);
// A room for one write, or nullptr without a maker.
std::unique_ptr<CheckpointRoom> make_checkpoint_room();

}  // namespace zm
