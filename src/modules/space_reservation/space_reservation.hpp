// Disk space held for a write before it starts, and handed over piece by piece as it proceeds.
//
// A checkpoint is written collectively through HDF5, whose ranks fall out of step when one of
// them hits a full disk inside a collective write: the job could then only end by the watchdog.
// So the space is taken first, in a hidden file of the expected size (fallocate), and each part
// of the file is given its share back (the hidden file shrinks) just before the ranks write it.
// Another writer that fills the disk meanwhile finds no room in what is held; the write fails,
// if at all, at the start, where every rank fails together.
#pragma once

#include <cstdint>
#include <string>

namespace zm {

class SpaceReservation {
 public:
  SpaceReservation() = default;
  ~SpaceReservation() { release_all(); }
  SpaceReservation(const SpaceReservation&) = delete;
  SpaceReservation& operator=(const SpaceReservation&) = delete;

  // Takes `bytes` in `dir`: "" when held (or when the file system cannot allocate ahead and
  // statvfs says there is room), else a message with what is needed and what is free.
  std::string reserve(const std::string& dir, uint64_t bytes);
  // Gives back `bytes` of what is held (all that is left if less), for the write about to start.
  void release(uint64_t bytes);
  void release_all();

  static constexpr const char* kFileName = ".space-reservation";

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t held_ = 0;
};

}  // namespace zm
