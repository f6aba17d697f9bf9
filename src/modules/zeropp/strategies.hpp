// ZeRO++'s collectives as strategies of the step's schedule (zero/collective_strategy.hpp):
//
//   role               ZeRO++                     strategy (name in plan --schedule)
//   GroupReduction     qgZ within the shard group quantized_all_to_all, or in two hops by node
//                                                 quantized_all_to_all_by_node
//   ReplicaReduction   qgZ across the groups      quantized_exchange: an all-to-all of sub-shard
//                                                 segments (secondary shards), else an all-gather
//                                                 of the shard's segment
//   UnitGather         qwZ                        int8_all_gather
//   UpdateGather       qwZ across the replicas    int8_all_gather (secondary shards under mixed
//                                                 precision: the fp32 masters stay unquantized)
//
// The quantized reductions complete at their post (the dequantize-and-sum needs the segments);
// both levels share one state (quantized_gradients.hpp). The int8 gathers quantize at the post
// and dequantize once the gather has arrived (int8_gather.hpp).
#pragma once

#include <memory>

#include "modules/zeropp/options.hpp"
#include "zero/collective_strategy.hpp"

namespace zm {

// The strategies of a run under `options` (the module's keys); none where it quantizes nothing.
std::shared_ptr<const StrategyProvider> zeropp_strategies(const ZeroppOptions& options);

}  // namespace zm
