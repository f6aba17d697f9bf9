#include "io/checkpoint_guard.hpp"

#include <utility>

#include "core/error.hpp"

namespace zm {

namespace {

CheckpointGuard& registered_guard() {
  static CheckpointGuard registered;
  return registered;
}

std::function<std::unique_ptr<CheckpointRoom>()>& room_maker() {
  static std::function<std::unique_ptr<CheckpointRoom>()> registered;
  return registered;
}

}  // namespace

void set_checkpoint_guard(CheckpointGuard guard) {
  ZM_ASSERT(!registered_guard().written, "a second checkpoint guard");
  registered_guard() = std::move(guard);
}

uint64_t checkpoint_header_bytes(uint64_t approximate_bytes) {
  const CheckpointGuard& guard = registered_guard();
  return guard.header_bytes ? guard.header_bytes(approximate_bytes) : 0;
}

std::string guard_written_checkpoint(const std::string& path, uint64_t header_bytes, MPI_Comm comm,
                                     Watchdog& watchdog) {
  const CheckpointGuard& guard = registered_guard();
  return guard.written ? guard.written(path, header_bytes, comm, watchdog) : "";
}

std::string check_checkpoint_file(const std::string& path, MPI_Comm comm, Watchdog& watchdog,
                                  bool any_file) {
  const CheckpointGuard& guard = registered_guard();
  return guard.check_file ? guard.check_file(path, comm, watchdog, any_file) : "";
}

void check_checkpoint_dataset(hid_t set, const std::string& path, const std::string& name) {
  const CheckpointGuard& guard = registered_guard();
  if (guard.check_dataset) guard.check_dataset(set, path, name);
}

void set_checkpoint_room(std::function<std::unique_ptr<CheckpointRoom>()> make) {
  ZM_ASSERT(!room_maker(), "a second maker of checkpoint rooms");
  room_maker() = std::move(make);
}

std::unique_ptr<CheckpointRoom> make_checkpoint_room() {
  return room_maker() ? room_maker()() : nullptr;
}

}  // namespace zm
