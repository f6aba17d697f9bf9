// The analytic model behind `zeromini plan`: memory per rank, bytes moved per step and an
// estimated step time, for any stage and rank count, without MPI and without allocating. Memory
// sums the buffers a run allocates (run_buffers), so it is what a run allocates, byte for byte;
// traffic sums the collectives a step posts (run_traffic) with the communicator's ring_bytes().
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "comm/communicator.hpp"
#include "comm/mesh_comms.hpp"
#include "core/deck.hpp"
#include "core/memory.hpp"
#include "core/zero_mesh.hpp"
#include "model/flops.hpp"
#include "plan/machine.hpp"
#include "zero/schedule.hpp"

namespace zm {

// Memory models: fp32 for train.precision = "fp32" or "tf32"; mixed for "bf16" (the ZeRO paper's
// 2 + 2 + 12 bytes per parameter).
const char* memory_model_name(Precision precision);  // "fp32" | "mixed"

struct MemoryPlan {
  std::array<double, kMemCategories> bytes{};  // per rank, by category
  double model_states() const;                 // parameters + gradients + optimizer
  double total() const;                        // device memory: every category but Host
  double host() const { return bytes[static_cast<size_t>(MemCategory::Host)]; }  // host memory
  double storage() const { return bytes[static_cast<size_t>(MemCategory::Storage)]; }
};

struct PlanPoint {
  int stage = 0;
  int64_t ranks = 1;
  int part = 0;  // the part priced (plan_part)
  Precision precision = Precision::FP32;
  int64_t params = 0;         // real vocabulary, the whole model (however it is cut)
  int64_t padded_params = 0;  // one rank's slices, padded vocabulary and partition (Psi')
  MemoryPlan memory;
  ZeroMesh mesh;                                  // the shard groups at this rank count
  std::array<double, kCommOps> bytes_per_step{};  // per rank, by collective
  std::array<std::array<double, kCommOps>, kCommLevels> bytes_per_level{};  // [level][op]
  double bytes_at_level(CommLevel level) const;
  double flops_per_step = 0;        // per rank: hardware FLOPs (model/flops.hpp), as priced
  double model_flops_per_step = 0;  // per rank: model FLOPs
  // The predicted step time (only with a machine).
  double compute_seconds = 0;
  double pass_seconds = 0;  // passes around compressed collectives (memory-bound)
  double comm_seconds = 0;
  double host_bytes_per_node = 0;  // memory.host() x the ranks on a node
  // What modules priced (plan/plan_extensions.hpp): their figures by name, and the seconds they
  // add to the serial step and to the overlapped one.
  std::map<std::string, double> figures;
  double added_serial_seconds = 0;
  double added_exposed_seconds = 0;
  // Seconds a module adds once per run, outside its steps (the evaluations).
  double added_run_seconds = 0;
  // Device work (compute and passes) overlapped with communication, or not, plus the modules'.
  double step_seconds_overlapped = 0;
  double step_seconds_serial = 0;
  // Model FLOP/s per device at the overlapped step time.
  double predicted_flops_per_second() const {
    return step_seconds_overlapped > 0 ? model_flops_per_step / step_seconds_overlapped : NAN;
  }
  // Device memory per rank within the device's, host memory per node within the machine's [host]
  // memory (true without [host] where nothing is in host memory), and storage per node within
  // the capacity a module's table gives (storage_capacity_per_node); fits = all three.
  bool device_fits = true;
  bool host_fits = true;
  bool storage_fits = true;
  bool fits = true;
  int64_t largest_layers = 0;  // deepest model of the same width that fits (0: none)
  int64_t largest_params = 0;
};

// All priced in the deck's train.precision. The mesh of `ranks` ranks: "node" means
// zero.ranks_per_node when set, else the machine's devices per node, else all ranks (one node).
ZeroMesh plan_zero_mesh(const Deck& deck, int stage, int64_t ranks, const Machine* machine);
// Of a model held in parts (plan/run_extensions.hpp), the part whose rank needs the most device
// memory, which decides the fit: the rank a plan prices (0 for a whole model).
int plan_part(const Deck& deck, int stage, const ZeroMesh& mesh);
// `part`: the rank's coordinate along the parts' dimension; -1: plan_part's.
MemoryPlan plan_memory(const Deck& deck, int stage, const ZeroMesh& mesh, int part = -1);
// Bytes per rank and step by collective, at each level ([level][op]).
using LevelTraffic = std::array<std::array<double, kCommOps>, kCommLevels>;
LevelTraffic plan_traffic(const Deck& deck, int stage, const ZeroMesh& mesh, int part = -1);
// Everything for one point; machine may be nullptr (no time or fit estimates).
PlanPoint plan_point(const Deck& deck, int stage, int64_t ranks, const Machine* machine);

// The time of `collectives` on `machine`, one after another, as the step's are priced: each on
// the link its ring crosses (an alpha-beta ring model), and the passes around compressed ones at
// the device's memory bandwidth.
struct CollectiveSeconds {
  double comm = 0;
  double passes = 0;
};
CollectiveSeconds collectives_seconds(const PlannedCollectives& collectives, const ZeroMesh& mesh,
                                      const Machine& machine);

// What a model must fit in: device memory per rank, and host memory and storage per node shared
// by the ranks on a node (no limit where the machine gives none).
struct MemoryLimits {
  double device_bytes = 0;
  double host_bytes_per_node = HUGE_VAL;
  double storage_bytes_per_node = HUGE_VAL;
  int64_t ranks_per_node = 1;
};
// The ranks that share a node at this mesh (its ranks_per_node, at most the world).
int64_t ranks_on_a_node(const ZeroMesh& mesh);
// The machine's limits for a run on `mesh`.
MemoryLimits memory_limits(const Machine& machine, const ZeroMesh& mesh);
// The deepest model of the deck's width (everything else of the deck kept) that fits `limits` at
// `stage` on `mesh`, device and host memory and storage: one more block (one per part, for a model
// held in parts) does not. 0 when not even one does.
int64_t largest_fitting_layers(const Deck& deck, int stage, const ZeroMesh& mesh,
                               const MemoryLimits& limits);

}  // namespace zm
