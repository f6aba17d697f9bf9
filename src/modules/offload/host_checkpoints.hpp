// model.checkpoints = "host" (ZeRO-Infinity's activation checkpoints in host memory): under
// model.recompute = "blocks" each block's output waits for its recomputation in host memory
// (pinned in CUDA builds) instead of device memory; the device keeps two, those of the last two
// blocks (model/checkpoint_home.hpp says which and when). The copies run on the rank's copy
// stream (host_transfer.hpp): each block's output out after its forward, overlapped with the next
// block's forward, and back one block ahead of its recomputation, overlapped with the block
// after it. They are part of the run's host copies (transfer_figures.hpp), listed with the
// tier's for the planner (run_transfers), which prices the part neither block hides.
#pragma once

#include <memory>
#include <vector>

#include "core/deck.hpp"
#include "model/checkpoint_home.hpp"
#include "modules/offload/host_copies.hpp"
#include "plan/machine.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/planner.hpp"

namespace zm {

// Whether the deck keeps the checkpoints on the host (where it recomputes blocks).
bool checkpoints_on_host(const Deck& deck);
// Fails, naming file:line, where "host" is set without model.recompute = "blocks" (a run's check).
void check_checkpoints(const Deck& deck);
// The home a run's model copies its checkpoints to (nullptr: the device keeps them).
std::shared_ptr<CheckpointHome> checkpoint_home(const Deck& deck);

// The copies of one step: each block's output but the last two's, out and back, every micro-step.
std::vector<ScheduledTransfer> checkpoint_copies(const Deck& deck);

// The planner: the copies' bytes and time, and what the blocks' compute does not hide: the copy
// out of block l against block l + 1's forward, the copy back of block l - 2 against block l's
// recomputation and backward (three forwards' work), each block's share of the step's compute
// from its FLOPs (model/flops.hpp).
void price_checkpoints(const Deck& deck, int stage, const Machine* machine, PlanPoint& point);
// The CSV columns checkpoint_copy_bytes (per step, both ways), checkpoint_copy_s (all of them at
// the link's rate) and checkpoint_exposed_s (what the overlapped step adds), at the end.
PlanColumns checkpoint_columns();

}  // namespace zm
