// What ZeRO-Offload (offload.hpp) adds to a step, priced from the same host-device copies the
// run makes (its copy list, host_copies.hpp: run_copies) on a machine's [host] side.
//
// The model follows the run (host_tier.cpp: HostAdamW) copy for copy. One copy
// of b bytes takes b / link bandwidth + link latency; the copies run one after another on one
// stream, both directions included. After backward, unit by unit:
//
//   D2H(0); for u: wait D2H(u); post D2H(u + 1); AdamW(u) on the host; H2D(u); wait
//
// so unit u costs max(AdamW(u), D2H(u + 1)) + H2D(u): the next unit's gradients travel while the
// host updates this one, and the update goes back (waited) before the unit's update gather. In
// all: optimizer = D2H(0) + sum over u of [max(AdamW(u), D2H(u + 1)) + H2D(u)], added after
// backward and overlapped with no compute. Summed over units this is at least the aggregate form
// D2H(first unit) + max(AdamW, D2H of the rest) + H2D, and equal to it where one side dominates in
// every unit. With zero.offload_params AdamW writes the host shard itself (no H2D), and every
// per-unit gather first stages the shard host -> device, waited before the gather: staging =
// the sum of those copies, serial too. Where the gradient shard itself lives on the host (stages
// 2-3 with one shard group), each micro-step's reduced shard is copied to the host as backward
// completes the unit: streaming = the sum of those copies. With one micro-step and nothing to add
// on the host (no fp32 sum) each copy goes straight into the shard on the copy stream, unwaited
// until its receive buffer is taken again, so the overlapped step hides it behind backward
// (exposed_seconds); otherwise each is waited and the host adds it, serial with backward. The
// optimizer step then fetches nothing (its D2H terms are zero) and only updates and copies back.
//
// AdamW(u) = the unit's optimizer elements held by the rank / the host's rate for the rank. The
// machine file gives the rate per device with every device of the node updating; the node's rate
// is shared by the ranks on it, so fewer ranks on a node than devices (a single device) each get
// devices per node / ranks on the node times that rate.
#pragma once

#include <cstdint>

#include "core/deck.hpp"
#include "core/zero_mesh.hpp"
#include "modules/offload/host_copies.hpp"
#include "plan/machine.hpp"

namespace zm {

struct OffloadCost {
  PlannedTransfers transfers;      // per step per rank, by direction (run_transfers)
  double transfer_seconds = 0;     // every copy at the link's rate, + latency per copy
  int64_t host_elements = 0;       // optimizer elements the rank's host AdamW updates per step
  double host_rate = 0;            // parameters/s of the host's AdamW for this rank
  double host_update_seconds = 0;  // host_elements / host_rate
  double optimizer_seconds = 0;    // the offloaded optimizer step (model above)
  double staging_seconds = 0;      // offload_params: the shard staged before each gather
  double streaming_seconds = 0;    // gradient shard on the host: its copies in backward
  // Whether those copies run beside backward unwaited (their entries in the copy list say where
  // they are waited: one micro-step with nothing to add on the host, each straight into the shard);
  // else each is waited, and the host adds.
  bool streaming_overlaps = false;
  // Everything one after another (the serial step's part).
  double step_seconds() const { return optimizer_seconds + staging_seconds + streaming_seconds; }
  // What the overlapped step adds, with backward taking `backward_seconds` on the device: the
  // streamed copies hidden behind backward where they overlap it.
  double exposed_seconds(double backward_seconds) const {
    const double streamed =
        streaming_overlaps
            ? (streaming_seconds > backward_seconds ? streaming_seconds - backward_seconds : 0.0)
            : streaming_seconds;
    return optimizer_seconds + staging_seconds + streamed;
  }
};

// Fails, naming the machine file, where offload applies at `stage` and the machine has no
// [host]: the copies and the host's update cannot be priced there, and are not free.
void require_host_side(const Deck& deck, int stage, const Machine& machine);

// The cost of offload at `stage` (all zero where it does not apply); the machine needs [host]
// where it does (require_host_side).
OffloadCost price_offload(const Deck& deck, int stage, const ZeroMesh& mesh,
                          const Machine& machine);

}  // namespace zm
