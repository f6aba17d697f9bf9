// ZeRO-Offload as the run applies it: which model state a stage keeps in host memory under
// zero.offload_optimizer and zero.offload_params. The one place that maps the keys and the stage
// onto "on the host"; the tier, its copies and the planner ask it.
//
//   offload_optimizer = "host"  stages 1-3  fp32 master, Adam m and v of the rank's optimizer
//                                           shard on the host; AdamW runs there on the reduced
//                                           gradients brought from the device
//   offload_params = "host"     stage 3     the rank's parameter shard on the host too (AdamW
//                                           writes it there); each gather stages it to the device;
//                                           a store's value (with the same offload_optimizer)
//                                           keeps it with the state, read for each gather
//   (with offload_optimizer)    stages 2-3  the gradient shard on the host too: each micro-step's
//                                           reduced shard copied there as backward completes the
//                                           unit (one shard group: under hybrid sharding or with
//                                           secondary shards the reduction across the groups runs
//                                           on the device shard after the group's, so it stays);
//                                           a store's files instead where the store's own key
//                                           asks (zero.nvme_gradients)
//
// A run refuses the keys where they do not apply (register.cpp); the planner prices them only at
// the stages where they do.
#pragma once

#include <string>

#include "core/deck.hpp"
#include "core/stage_spec.hpp"
#include "core/zero_mesh.hpp"
#include "modules/offload/host_state_store.hpp"

namespace zm {

// The module's keys.
struct OffloadSettings {
  bool optimizer = false;         // zero.offload_optimizer = "host" or a store's value
  std::string store;              // that value where a module's store keeps the state (not "host")
  HostStoreMaker make_store;      // that store's, with the deck's settings
  StoreBuffers store_buffers;     // likewise
  bool params = false;            // zero.offload_params = "host" or a store's value
  bool params_in_store = false;   // the store's value (kept with the state: MemCategory::Storage)
  bool grads_in_store = false;    // the store keeps the gradient shard too (its own key)
  bool secondary_shards = false;  // zero.secondary_shard_size set (its check refuses params then)
  bool any() const { return optimizer || params; }
};
OffloadSettings offload_settings(const Deck& deck);

struct Offload {
  bool optimizer = false;  // master, m, v and the update on the host
  bool params = false;     // the parameter shard on the host (implies optimizer)
  bool gradients =
      false;  // the gradient shard on the host, streamed in backward (implies optimizer)
  bool any() const { return optimizer; }
};

// Where the stage's state lives on `mesh`: the optimizer state at the stages that shard it; the
// parameter shard with it at the stage that gathers it, unless the mesh holds secondary shards
// (refilled by a gather across the groups, on the device); the gradient shard with it at the
// stages that keep only the shard, with one shard group (else the reduction across the groups
// runs on the device shard after the group's).
inline Offload offload_of(const OffloadSettings& settings, const StageSpec& spec,
                          const ZeroMesh& mesh) {
  Offload offload;
  offload.optimizer = settings.optimizer && spec.shards_states();
  offload.params =
      offload.optimizer && settings.params && spec.gathers_parameters() && !mesh.sub_sharded();
  offload.gradients = offload.optimizer && spec.shards_gradients() && mesh.groups() == 1;
  return offload;
}

// Whether the stage keeps anything on the host (the optimizer state decides, whatever the mesh).
inline bool offloads(const OffloadSettings& settings, const StageSpec& spec) {
  return settings.optimizer && spec.shards_states();
}

}  // namespace zm
