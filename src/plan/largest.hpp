// `zeromini plan --largest`: the largest model of a deck's width that fits one device, for each
// device count x tensor-parallel degree x stage x sharding {all, node, hpZ node} x
// model.recompute {none, blocks}.
//
// "Largest" is the deepest: the deck's width, heads, vocabulary, sequence length, batch and
// precision are kept, and the layer count grows until the per-device memory of the same buffer
// lists the run allocates (plan_memory) no longer fits the machine's device memory. The step time
// is the planner's estimate at that depth (recomputed forward included). At tp > 1 the devices are
// tp-rank groups times the data-parallel ranks, and the parameters are the whole model's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/deck.hpp"
#include "core/zero_mesh.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm {

// How a cell shards the model states: over every device (zero.shard_size = 0), within a node
// (zero.shard_size = "node", replicated across nodes), or hpZ (zero.secondary_shard_size =
// "node", stage 3 only: parameters within a node, the optimizer state over every device).
enum class LargestSharding { All, Node, Hpz };

// One of the six options of a cell: a sharding, and recomputation or not.
struct LargestOption {
  LargestSharding sharding = LargestSharding::All;
  bool recompute = false;  // model.recompute = "blocks" (else "none")
};
constexpr LargestOption kLargestOptions[] = {
    {LargestSharding::All, false}, {LargestSharding::All, true},  {LargestSharding::Node, false},
    {LargestSharding::Node, true}, {LargestSharding::Hpz, false}, {LargestSharding::Hpz, true}};

struct LargestModel {
  int64_t devices = 1;
  int64_t tp = 1;  // parallel.tp
  int stage = 0;
  LargestOption option;
  // False for hpZ below stage 3, which has no such option; nothing below is meaningful then.
  bool applies = true;
  // False when the shard groups cannot tile the devices (a node's ranks do not divide them) or
  // tp does not divide the devices; nothing below is meaningful then.
  bool possible = true;
  ZeroMesh mesh;
  int64_t layers = 0;  // the deepest that fits; 0: not even one block fits
  PlanPoint point;     // the plan at that depth (parameters, memory, traffic, time); layers > 0
};

// The deck with an option applied: its zero.shard_size, zero.secondary_shard_size and
// model.recompute.
Deck with_option(const Deck& deck, const LargestOption& option);

// Every devices x tp x stage x option, in that order (options as in kLargestOptions); every tp
// must divide the heads, the MLP width and the padded vocabulary (else fails).
std::vector<LargestModel> plan_largest_models(const Deck& deck, const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int64_t>& tps,
                                              const std::vector<int>& stages);
// The same at the deck's parallel.tp.
std::vector<LargestModel> plan_largest_models(const Deck& deck, const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages);

// The ZeRO paper's "maximum theoretical model size" (Table 2): the parameters Psi of the whole
// model whose model states alone (parameters, gradients, optimizer state; no activations or
// buffers) take `bytes` per rank at `stage` on `mesh`, at the deck's proportions:
// bytes x Psi / (model-state bytes per rank). Continuous in Psi, unlike the layer count.
double max_params_for_model_states(const Deck& deck, int stage, const ZeroMesh& mesh, double bytes);

}  // namespace zm
