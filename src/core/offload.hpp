// ZeRO-Offload as the run applies it: which model state a stage keeps in host memory under the
// deck's zero.offload_optimizer and zero.offload_params. The one place that maps the keys and
// the stage onto "on the host"; the planner asks it, and zero_options (plan/run_options.hpp) asks
// it once per stage for the ZeRO layer's engine and schedule (ZeroOptions::offload).
//
//   offload_optimizer = "host"  stages 1-3  fp32 master, Adam m and v of the rank's optimizer
//                                           shard on the host; AdamW runs there on the reduced
//                                           gradients brought from the device
//   offload_params = "host"     stage 3     the rank's parameter shard on the host too (AdamW
//                                           writes it there); each gather stages it to the device
//   (with offload_optimizer)    stages 2-3  the gradient shard on the host too: each micro-step's
//                                           reduced shard copied there as backward completes the
//                                           unit (one shard group: under hybrid sharding or hpZ the
//                                           reduction across the groups runs on the device shard
//                                           after the group's, so it stays there)
//
// A run refuses the keys where they do not apply (core/validate.cpp); the planner prices them
// only at the stages where they do, as it does qwZ and qgZ.
#pragma once

#include "core/deck.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"

namespace zm {

struct Offload {
  bool optimizer = false;  // master, m, v and the update on the host
  bool params = false;     // the parameter shard on the host (implies optimizer)
  bool gradients = false;  // the gradient shard on the host, streamed in backward (implies optimizer)
  bool any() const { return optimizer; }
};

// Whether a path that keeps only the gradient shard (stages 2-3) streams it to the host.
inline bool streams_gradients(const Deck& deck, const ZeroMesh& mesh) {
  return deck.zero.offload_optimizer == "host" && mesh.groups() == 1;
}

// Where the stage's state lives, apart from the gradients (which need the mesh: below).
inline Offload offload_of(const Deck& deck, const StageSpec& spec) {
  Offload offload;
  offload.optimizer = deck.zero.offload_optimizer == "host" && spec.shards_states();
  offload.params = offload.optimizer && deck.zero.offload_params == "host" &&
                   spec.gathers_parameters() && deck.zero.secondary_shard_size == 0;
  return offload;
}

inline Offload offload_of(const Deck& deck, const StageSpec& spec, const ZeroMesh& mesh) {
  Offload offload = offload_of(deck, spec);
  offload.gradients =
      offload.optimizer && spec.shards_gradients() && streams_gradients(deck, mesh);
  return offload;
}

}  // namespace zm
