// The module's registration (core/modules.hpp): its deck keys and the run's NVMe figures
// (nvme_figures.hpp). The NVMe tier itself is a store of
// the offload module's host AdamW (with_offload/nvme_store.cpp: zero.offload_optimizer = "nvme");
// the swap files and I/O engines (swap_file.hpp, async_io.hpp) are measured by zeromini-bench's
// NvmeIo and tested by tests/modules/zero_infinity.
#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "io/stage_figures.hpp"
#include "modules/zero_infinity/nvme_figures.hpp"
#include "modules/zero_infinity/nvme_settings.hpp"
#include "modules/zero_infinity/swap_file.hpp"
#include "plan/machine.hpp"

namespace zm {

namespace {

const char* const kModule = "zero_infinity";

std::vector<KeySpec> keys() {
  return {
      deck_keys::string(
          kModule, "zero", "nvme_dir", "", true,
          "with zero.offload_optimizer = \"nvme\": the directory of each rank's swap file, on a "
          "drive of the node (one file per rank, made at the start, removed at exit, never read "
          "after a crash: a run resumes from its checkpoint)"),
      deck_keys::choice(kModule, "zero", "nvme_engine", "auto", {"auto", "io_uring", "threads"},
                        "how the swap files are read and written: \"io_uring\" (liburing), "
                        "\"threads\" (pread/pwrite in a pool), \"auto\" io_uring where the "
                        "kernel allows it, else the threads (the run says which)"),
      deck_keys::integer(
          kModule, "zero", "nvme_buffers", 3, 2, 64,
          "the host staging slots of the swap files, each of the largest unit's state: the "
          "unit being updated, the one before it being written, the units after it being read "
          "ahead (at least one); more read further ahead, at a slot's host memory each"),
      deck_keys::integer(
          kModule, "zero", "nvme_block_kib", 0, 0, 1 << 20,
          "the largest request of a swap file transfer in KiB, a multiple of 4 (the O_DIRECT "
          "alignment); a unit's transfer is that many requests in flight at once; 0: one "
          "request per transfer"),
      deck_keys::boolean(
          kModule, "zero", "nvme_gradients", false,
          "with zero.offload_optimizer = \"nvme\" at stages 2-3 (one shard group): the reduced "
          "gradient shard in the swap files too instead of host memory, each micro-step's sum "
          "written there as backward completes its unit (a later micro-step's read and added "
          "first), read with the state for the update"),
  };
}

}  // namespace

NvmeSettings nvme_settings(const Deck& deck) {
  NvmeSettings settings;
  settings.dir = deck.value<std::string>("zero.nvme_dir");
  settings.where = deck.where("zero.nvme_dir");
  const std::string engine = deck.value<std::string>("zero.nvme_engine");
  settings.engine = engine == "io_uring"  ? nvme::IoEngine::Uring
                    : engine == "threads" ? nvme::IoEngine::Threads
                                          : nvme::IoEngine::Auto;
  settings.buffers = static_cast<int>(deck.value<int64_t>("zero.nvme_buffers"));
  settings.block_bytes = deck.value<int64_t>("zero.nvme_block_kib") * 1024;
  settings.gradients = deck.value<bool>("zero.nvme_gradients");
  return settings;
}

void check_nvme_settings(const Deck& deck) {
  const NvmeSettings settings = nvme_settings(deck);
  if (settings.dir.empty())
    fail(
        "{}: zero.offload_optimizer = \"nvme\" needs zero.nvme_dir, the directory of the swap "
        "files on each node; expected e.g. zero.nvme_dir = \"/local/nvme/$USER\"",
        deck.where("zero.offload_optimizer"));
  if (settings.block_bytes % nvme::kAlignment != 0)
    fail(
        "{}: zero.nvme_block_kib = {}: a request's size must keep the transfers' {}-byte "
        "alignment (O_DIRECT). Expected a multiple of 4, or 0",
        deck.where("zero.nvme_block_kib"), settings.block_bytes / 1024, nvme::kAlignment);
  const PrecisionPolicy policy = deck.train.policy();
  if (settings.gradients && policy.mixed() && !policy.widens_reduce() && deck.train.grad_accum > 1)
    fail(
        "{}: zero.nvme_gradients with train.precision = \"bf16\" and train.grad_accum = {}: the "
        "micro-steps' bf16 sums add up in an fp32 sum on the host, which the swap files do not "
        "hold. Expected train.reduce_precision = \"fp32\" (the sum reduced and kept in fp32), "
        "train.grad_accum = 1, or zero.nvme_gradients = false",
        deck.where("zero.nvme_gradients"), deck.train.grad_accum);
  try {
    nvme::check_swap_directory(settings.dir);
  } catch (const Error& e) {
    fail("{}: zero.nvme_dir = \"{}\": {}", deck.where("zero.nvme_dir"), settings.dir, e.what());
  }
}

void register_module_zero_infinity() {
  add_deck_keys(keys());
  add_validation([](const Deck& deck, const RunShape&, Validation) {
    const std::string optimizer = module_setting(deck, "zero.offload_optimizer", "none");
    if (deck.value<bool>("zero.nvme_gradients") && optimizer != "nvme")
      fail(
          "{}: zero.nvme_gradients puts the gradient shard in the optimizer state's swap files; "
          "zero.offload_optimizer is \"{}\". Expected zero.offload_optimizer = \"nvme\" with it",
          deck.where("zero.nvme_gradients"), optimizer);
  });
  // A machine file's [nvme] table: what `zeromini plan` prices the swap files with.
  add_machine_key({"nvme.capacity_per_node_tb", true, false,
                   "the NVMe capacity of one node for the swap files in TB (1e12 bytes)"});
  add_machine_key({"nvme.read_bandwidth_gbs", true, false,
                   "the node's drives' aggregate read bandwidth in GB/s"});
  add_machine_key({"nvme.write_bandwidth_gbs", true, false,
                   "the node's drives' aggregate write bandwidth in GB/s"});
  add_machine_key({"nvme.drives", false, true, ""});
  // The planner's fit condition for the state the swap files hold (MemCategory::Storage).
  add_storage_capacity(
      [](const Machine& machine) { return machine.number("nvme.capacity_per_node_tb", 1e12); });
  add_training_extension(make_nvme_figures);
  add_stage_description(describe_nvme);
}

}  // namespace zm
