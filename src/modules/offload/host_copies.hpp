// The copies between device memory and host memory that one step makes under ZeRO-Offload, as
// data: every rank moves the same count (a padded piece), so that one entry describes it on every
// rank; each says when it is made and where it is waited. The tier's parts post exactly these
// (host_tier.cpp) and the planner prices the same list (offload_cost.hpp), so that planned ==
// measured holds for the copies as the step schedule (zero/schedule.hpp) makes it hold for the
// collectives. The list is built after the schedule's collectives, whose unit gathers the staged
// parameter shard follows.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/zero_mesh.hpp"
#include "modules/offload/host_transfer.hpp"
#include "modules/offload/offload.hpp"
#include "zero/schedule.hpp"

namespace zm {

enum class TransferRole {
  GradientsToHost,   // the unit's reduced gradients of this rank's optimizer piece, before AdamW;
                     // with the gradient shard on the host, the shard every micro-step
  UpdateToDevice,    // the piece's updated parameters after the host's AdamW (in the compute type)
  ShardToDevice,     // the parameter shard kept off the device, before each gather of its unit
  CheckpointToHost,  // model.checkpoints = "host": a block's output after its forward
  CheckpointToDevice,  // and back, one block ahead of its recomputation (host_checkpoints.hpp)
};
struct ScheduledTransfer {
  TransferRole role;
  TransferDirection direction;
  int unit;
  int64_t elements;
  int element_bytes;
  int64_t per_step;  // copies in one optimizer step
  // When: GroupReduced (in backward, once the unit's reduction is complete), UnitUpdated (in the
  // optimizer step, around the unit's host update) or Prefetch (before each gather of the unit).
  StepPoint at;
  // Where it is waited: where it is made (Posted), or later (BucketReuse: when its source is
  // taken again, or backward's end), the copy going on beside the step meanwhile. The parts wait
  // where this says, and the planner hides the copy behind backward where it is not Posted.
  StepPoint waited = StepPoint::Posted;
  int64_t per_forward_only = 0;  // copies in one forward-only micro-batch
  double bytes() const { return static_cast<double>(elements) * element_bytes; }
};
// A step's copies per rank, by direction, for the planner.
struct PlannedTransfers {
  std::array<double, kTransferDirections> bytes{};
  std::array<int64_t, kTransferDirections> calls{};
  double total_bytes() const { return bytes[0] + bytes[1]; }
};

// Where each kind of state lives, read back from the homes the tier gave (ZeroOptions::homes).
Offload offload_in(const StateHomes& homes);

// The copies of one step at `spec` (none where the options keep everything on the device), in
// the order a step makes them unit by unit; `collectives`: the step schedule's.
std::vector<ScheduledTransfer> host_copies(const StageSpec& spec, const ScheduleContext& context,
                                           const std::vector<ScheduledCollective>& collectives);
// Those of a run of `deck` at `stage` on `mesh`.
std::vector<ScheduledTransfer> run_copies(const Deck& deck, int stage, const ZeroMesh& mesh);
// Unit u's copy of `role`, asserting it exists.
const ScheduledTransfer& copy_of(const std::vector<ScheduledTransfer>& copies, int unit,
                                 TransferRole role);
// The copies one step makes, and one forward-only micro-batch, for the planner.
PlannedTransfers planned_copies(const std::vector<ScheduledTransfer>& copies);
PlannedTransfers planned_forward_only_copies(const std::vector<ScheduledTransfer>& copies);
// Every copy a rank of the run makes in one step: planned_copies of run_copies and of the
// checkpoints' (host_checkpoints.hpp).
PlannedTransfers run_transfers(const Deck& deck, int stage, const ZeroMesh& mesh);

const char* transfer_role_name(TransferRole role);
// `zeromini plan --schedule`'s lines: one per copy of unit `unit`, after the collectives'.
std::vector<std::string> describe_copies(const std::vector<ScheduledTransfer>& copies, int unit);

}  // namespace zm
