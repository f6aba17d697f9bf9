// `zeromini plan --largest`: the largest model of a deck's width that fits one device, for each
// device count x stage x zero.shard_size {all, node} x model.recompute {none, blocks}.
//
// "Largest" is the deepest: the deck's width, heads, vocabulary, sequence length, batch and
// precision are kept, and the layer count grows until the per-device memory of the same buffer
// lists the run allocates (plan_memory) no longer fits the machine's device memory. The step time
// is the planner's estimate at that depth (recomputed forward included).
#pragma once

#include <cstdint>
#include <vector>

#include "core/deck.hpp"
#include "core/shard_layout.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace zm {

// One of the four options of a cell: sharding over all ranks or within a node, and recomputation.
struct LargestOption {
  bool shard_node = false;  // zero.shard_size = "node" (else 0: all ranks)
  bool recompute = false;   // model.recompute = "blocks" (else "none")
};
constexpr LargestOption kLargestOptions[] = {
    {false, false}, {false, true}, {true, false}, {true, true}};

struct LargestModel {
  int64_t devices = 1;
  int stage = 0;
  LargestOption option;
  // False when the shard groups cannot tile the devices (a node's ranks do not divide them);
  // nothing below is meaningful then.
  bool possible = true;
  ShardLayout shards;
  int64_t layers = 0;  // the deepest that fits; 0: not even one block fits
  PlanPoint point;     // the plan at that depth (parameters, memory, traffic, time); layers > 0
};

// The deck with an option applied: its zero.shard_size and model.recompute.
Deck with_option(const Deck& deck, const LargestOption& option);

// Every devices x stage x option, in that order (options as in kLargestOptions).
std::vector<LargestModel> plan_largest_models(const Deck& deck, const Machine& machine,
                                              const std::vector<int64_t>& devices,
                                              const std::vector<int>& stages);

}  // namespace zm
