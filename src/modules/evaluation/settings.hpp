// The module's deck keys: their schema, and their values read once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/deck_keys.hpp"

namespace zm {

struct EvaluationSettings {
  int64_t every = 0;          // train.eval_every: steps between evaluations (0: none)
  int64_t batches = 4;        // train.eval_batches: micro-batches per data-parallel rank
  double target_loss = 0;     // train.target_loss (0: no target)
  std::string val_source;     // data.val_source: a token shard, or "" (data.source's tail)
  double val_fraction = 0.1;  // data.val_fraction: the tail of data.source held out
  bool evaluates() const { return every > 0; }
  bool targets() const { return target_loss > 0; }
};

std::vector<KeySpec> evaluation_keys();
EvaluationSettings evaluation_settings(const Deck& deck);

// Whether training leaves data.source's tail to the held-out split: evaluation on a token shard
// with no data.val_source.
bool holds_out_tail(const Deck& deck);

// The deck's settings against each other (core/validate.hpp): a target needs evaluations, and a
// held-out shard is not the training shard. Throws zm::Error naming where the keys were set.
void check_evaluation(const Deck& deck);

}  // namespace zm
