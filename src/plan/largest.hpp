// `zeromini plan --largest`: the largest model of a deck's width that fits one device, for each
// device count x the values of the plan's axes (plan/plan_extensions.hpp) x stage x sharding
// {all, node, hpZ node} x model.recompute {none, blocks}, and optionally x ZeRO-Offload {none,
// optimizer, optimizer + parameters}.
//
// "Largest" is the deepest: the deck's width, heads, vocabulary, sequence length, batch and
// precision are kept, and the layer count grows until the per-device memory of the same buffer
// lists the run allocates (plan_memory) no longer fits the machine's device memory. The step time
// is the planner's estimate at that depth (recomputed forward included). Where the model is cut
// over model dimensions the devices are model-parallel groups times the data-parallel ranks, and
// the parameters are the whole model's.
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

// Where a cell keeps the optimizer state (core/offload.hpp): as the deck says, or the offload
// axis's none, optimizer (zero.offload_optimizer = "host", stages 1-3) and optimizer + parameters
// (zero.offload_params = "host" too, stage 3 without hpZ).
enum class LargestOffload { AsDeck, None, Optimizer, OptimizerAndParams };
// The offload axis, in order.
constexpr LargestOffload kOffloadAxis[] = {LargestOffload::None, LargestOffload::Optimizer,
                                           LargestOffload::OptimizerAndParams};

// One option of a cell: a sharding, recomputation or not, and an offload setting.
struct LargestOption {
  LargestSharding sharding = LargestSharding::All;
  bool recompute = false;  // model.recompute = "blocks" (else "none")
  LargestOffload offload = LargestOffload::AsDeck;
};
constexpr LargestOption kLargestOptions[] = {
    {LargestSharding::All, false}, {LargestSharding::All, true},  {LargestSharding::Node, false},
    {LargestSharding::Node, true}, {LargestSharding::Hpz, false}, {LargestSharding::Hpz, true}};

// The options of a cell: kLargestOptions at the deck's offload settings, or with the offload axis
// each of them at every offload setting (offload outermost).
std::vector<LargestOption> largest_options(bool offload_axis);

struct LargestModel {
  int64_t devices = 1;
  std::vector<int64_t> axes;  // the deck's value of each plan axis (plan_axes())
  int stage = 0;
  LargestOption option;
  // False for hpZ below stage 3, offload of the optimizer at stage 0 and of the parameters below
  // stage 3 or with hpZ, which have no such option; nothing below is meaningful then.
  bool applies = true;
  // False when the shard groups cannot tile the devices (a node's ranks do not divide them) or
  // the model-parallel groups cannot; nothing below is meaningful then.
  bool possible = true;
  ZeroMesh mesh;
  int64_t layers = 0;  // the deepest that fits; 0: not even one block fits
  PlanPoint point;     // the plan at that depth (parameters, memory, traffic, time); layers > 0
};

// The deck with an option applied: its zero.shard_size, zero.secondary_shard_size,
// model.recompute and (unless AsDeck) zero.offload_optimizer and zero.offload_params.
Deck with_option(const Deck& deck, const LargestOption& option);

// Every devices x deck x stage x option, in that order (options as largest_options(offload_axis)
// lists them): `decks` are the deck at each point of the plan's axes. A cell that offloads needs
// the machine's [host] (else fails, naming the file).
std::vector<LargestModel> plan_largest_models(const std::vector<Deck>& decks,
                                              const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages,
                                              bool offload_axis = false);
// The same for the deck alone.
std::vector<LargestModel> plan_largest_models(const Deck& deck, const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages,
                                              bool offload_axis = false);

// The ZeRO paper's "maximum theoretical model size" (Table 2): the parameters Psi of the whole
// model whose model states alone (parameters, gradients, optimizer state; no activations or
// buffers) take `bytes` per rank at `stage` on `mesh`, at the deck's proportions:
// bytes x Psi / (model-state bytes per rank). Continuous in Psi, unlike the layer count.
double max_params_for_model_states(const Deck& deck, int stage, const ZeroMesh& mesh, double bytes);

}  // namespace zm
