// The module's registration (core/modules.hpp): the room held for each checkpoint write
// (io/checkpoint_guard.hpp, CheckpointRoom), and the file that holds it among what a run killed
// mid-write leaves behind (io/output_dir.hpp).
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "io/checkpoint_guard.hpp"
#include "io/output_dir.hpp"
#include "modules/space_reservation/space_reservation.hpp"

namespace zm {

namespace {

// The file beyond its datasets' bytes: HDF5's object header per dataset, and the superblock,
// groups and attributes (the deck) once. Measured on the tiny, quickstart and l6d384 decks: 2.7 to
// 3.0 KiB per dataset, everything included; the figures below hold that with room to spare, and
// the estimate adds kDataMarginPercent of the data bytes on top (a file system's allocation
// granularity, HDF5's free-space slack).
constexpr uint64_t kBytesPerDataset = 4u << 10;
constexpr uint64_t kFixedBytes = 64u << 10;
constexpr uint64_t kDataMarginPercent = 10;

// A checkpoint's room: the whole file's estimated size, taken before it is written, each part's
// share handed over just before the ranks write it.
class ReservedRoom final : public CheckpointRoom {
 public:
  std::string hold(const std::string& dir, uint64_t header_bytes,
                   const std::vector<uint64_t>& dataset_bytes) override {
    header_ = header_bytes;
    datasets_ = dataset_bytes;
    const uint64_t data = std::accumulate(datasets_.begin(), datasets_.end(), uint64_t(0));
    estimated_ = header_ + data + data * kDataMarginPercent / 100 +
                 datasets_.size() * kBytesPerDataset + kFixedBytes;
    return space_.reserve(dir, estimated_);
  }
  uint64_t estimated_bytes() const override { return estimated_; }
  void before_part(size_t part) override {
    space_.release(part == 0 ? header_ + kFixedBytes / 2 : datasets_[part - 1] + kBytesPerDataset);
  }
  void release_all() override { space_.release_all(); }

 private:
  SpaceReservation space_;
  uint64_t header_ = 0, estimated_ = 0;
  std::vector<uint64_t> datasets_;
};

}  // namespace

void register_module_space_reservation() {
  set_checkpoint_room([] { return std::make_unique<ReservedRoom>(); });
  add_leftover_file(SpaceReservation::kFileName);
}

}  // namespace zm
