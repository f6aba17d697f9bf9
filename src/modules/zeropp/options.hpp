// What ZeRO++'s compression is asked to do (the module's deck keys, mapped once in register.cpp),
// with the two settings of the run's ZeRO options its exchanges need (the precision policy and
// whether collectives overlap), copied in when a schedule's strategies are made.
#pragma once

#include <cstdint>

#include "core/deck.hpp"
#include "core/precision.hpp"

namespace zm {

struct ZeroppOptions {
  // qwZ, zero.quantize_weights = "int8": stage 3's unit gathers (and, with secondary shards under
  // mixed precision, the gather of the updated sub-shards across the replicas) move int8 blocks.
  bool quantize_weights = false;
  // zero.quantize_block: elements per block with one fp32 scale (qwZ's and qgZ's).
  int64_t quantize_block = 2048;
  // qgZ, zero.quantize_grads != "none": the gradient reductions as quantized all-to-alls, of
  // codes of grad_bits (8 for "int8", 4 for "int4").
  bool quantize_grads = false;
  int grad_bits = 8;
  bool error_feedback = false;       // zero.error_feedback: qgZ keeps each rank's residual
  bool stochastic_rounding = false;  // zero.grad_rounding = "stochastic": qgZ's codes drawn
  int64_t seed = 1337;               // train.seed: keys qgZ's stochastic rounding

  // From the run's ZeRO options (zero/zero_options.hpp).
  PrecisionPolicy policy;  // the reduce type of the exchanges, mixed precision for qwZ's replicas
  bool overlap = true;     // two packed buffers for the replica gather, else one

  bool any() const { return quantize_weights || quantize_grads; }
};

// The module's keys of `deck`, mapped once (register.cpp); policy and overlap stay defaults.
ZeroppOptions zeropp_options(const Deck& deck);

}  // namespace zm
