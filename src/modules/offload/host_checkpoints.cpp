#include "modules/offload/host_checkpoints.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "model/flops.hpp"
#include "model/layout.hpp"
#include "modules/offload/host_transfer.hpp"
#include "plan/run_extensions.hpp"
#include "zero/engine.hpp"

namespace zm {

namespace {

// The copies go on the rank's copy stream with the tier's: a checkpoint's wait also waits for a
// gradient copy in flight, which the tier would wait for before its buffer is reused anyway.
class HostCheckpoints final : public CheckpointHome {
 public:
  MemCategory category() const override { return MemCategory::Host; }
  void copy(bool to_home, void* to, const void* from, size_t bytes, int unit) override {
    this_rank_copies().copy(to_home ? TransferDirection::ToHost : TransferDirection::ToDevice, to,
                            from, bytes, unit);
  }
  void wait() override { this_rank_copies().wait(); }
};

}  // namespace

// Where the model keeps no checkpoints (no recomputation) the key changes nothing: a plan that
// varies model.recompute (plan --largest) prices it where it applies; a run refuses it.
bool checkpoints_on_host(const Deck& deck) {
  return deck.value<std::string>("model.checkpoints") == "host" && deck.model.recomputes_blocks();
}

void check_checkpoints(const Deck& deck) {
  if (deck.value<std::string>("model.checkpoints") == "host" && !deck.model.recomputes_blocks())
    fail(
        "{}: model.checkpoints = \"host\" keeps what model.recompute = \"blocks\" keeps between "
        "the forward and the recomputation (each block's output); model.recompute is \"{}\", "
        "which keeps every activation on the device. Expected model.recompute = \"blocks\", or "
        "model.checkpoints = \"device\"",
        deck.where("model.checkpoints"), deck.model.recompute);
}

std::shared_ptr<CheckpointHome> checkpoint_home(const Deck& deck) {
  if (!checkpoints_on_host(deck)) return nullptr;
  return std::make_shared<HostCheckpoints>();
}

std::vector<ScheduledTransfer> checkpoint_copies(const Deck& deck) {
  std::vector<ScheduledTransfer> copies;
  if (!checkpoints_on_host(deck)) return copies;
  const ParamLayout layout(deck.model);
  const int64_t elements = deck.train.micro_batch * deck.model.seq_len * deck.model.dim;
  const int bytes = element_bytes(deck.train.policy().compute);
  for (int l = 0; l + 2 < static_cast<int>(deck.model.layers); ++l)
    for (const TransferDirection direction :
         {TransferDirection::ToHost, TransferDirection::ToDevice})
      copies.push_back({direction == TransferDirection::ToHost ? TransferRole::CheckpointToHost
                                                               : TransferRole::CheckpointToDevice,
                        direction, layout.block_unit(l), elements, bytes, deck.train.grad_accum,
                        StepPoint::Acquire});
  return copies;
}

void price_checkpoints(const Deck& deck, int stage, const Machine* machine, PlanPoint& p) {
  if (!checkpoints_on_host(deck)) return;
  const std::vector<ScheduledTransfer> copies = checkpoint_copies(deck);
  p.figures["checkpoint_copy_bytes"] = planned_copies(copies).total_bytes();
  if (machine == nullptr || copies.empty()) return;
  if (!machine->host)
    fail(
        "{}: model.checkpoints = \"host\" copies each block's output to host memory and back; "
        "the machine file {} has no [host] table to price the copies with (link, "
        "link_bandwidth_gbs, as in inputs/machines/dgx-h100.toml)",
        deck.where("model.checkpoints"), machine->path.empty() ? machine->name : machine->path);
  const HostSide& host = *machine->host;
  // One block's forward per token, as a share of what the step computes: the FLOP count's
  // recomputed forward (model/flops.hpp), which recomputation adds once per block.
  const AttentionKernels& attention = attention_kernels(run_extensions(deck, stage));
  ModelConfig kept = deck.model;
  kept.recompute = "none";
  const double hardware = flops_per_token(deck.model, attention).hardware();
  const double block_forward = (hardware - flops_per_token(kept, attention).hardware()) /
                               static_cast<double>(deck.model.layers);
  const double micro_steps = static_cast<double>(deck.train.grad_accum);
  const double forward_s = p.compute_seconds * block_forward / hardware / micro_steps;
  const double one = copies.front().bytes() / host.link_bandwidth + host.link_latency;
  const double per_direction = static_cast<double>(copies.size() / 2) * micro_steps;
  const double serial = 2.0 * per_direction * one;
  const double exposed =
      per_direction * (std::max(0.0, one - forward_s) + std::max(0.0, one - 3.0 * forward_s));
  p.figures["checkpoint_copy_s"] = serial;
  p.figures["checkpoint_exposed_s"] = exposed;
  p.added_serial_seconds += serial;
  p.added_exposed_seconds += exposed;
}

PlanColumns checkpoint_columns() {
  PlanColumns columns;
  columns.at = PlanColumnsAt::AtEnd;
  columns.shown = [](const Deck& deck, const std::vector<PlanPoint>&) {
    return checkpoints_on_host(deck);
  };
  columns.header = ",checkpoint_copy_bytes,checkpoint_copy_s,checkpoint_exposed_s";
  columns.row = [](const Deck&, const PlanPoint& p, bool have_machine) {
    const auto figure = [&](const char* name) {
      const auto found = p.figures.find(name);
      return found == p.figures.end() ? 0.0 : found->second;
    };
    return fmt::format(",{:.0f}", figure("checkpoint_copy_bytes")) +
           (have_machine ? fmt::format(",{:.6g},{:.6g}", figure("checkpoint_copy_s"),
                                       figure("checkpoint_exposed_s"))
                         : ",,");
  };
  return columns;
}

}  // namespace zm
