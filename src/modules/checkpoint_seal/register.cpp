// The module's registration (core/modules.hpp): the checkpoint guard (io/checkpoint_guard.hpp).
#include <string>
#include <utility>

#include "io/checkpoint_guard.hpp"
#include "modules/checkpoint_seal/file_integrity.hpp"

namespace zm {

void register_module_checkpoint_seal() {
  CheckpointGuard guard;
  guard.header_bytes = integrity_user_block_size;
  guard.written = seal_file;
  guard.check_file = [](const std::string& path, MPI_Comm comm, Watchdog& watchdog,
                        bool any_file) -> std::string {
    if (any_file && !has_integrity_header(path)) return "";  // not a checkpoint
    return verify_file(path, comm, watchdog);
  };
  guard.check_dataset = validate_storage;
  set_checkpoint_guard(std::move(guard));
}

}  // namespace zm
