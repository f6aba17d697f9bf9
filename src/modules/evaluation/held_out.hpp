// The held-out split evaluation reads, and the lowest loss any model can reach on it where the
// data says (its loss floor).
//
//   data.val_source = a token shard    that shard, whole
//   "" with data.source a token shard  the shard's last data.val_fraction of tokens, which
//                                      training then leaves out (RunExtensions::reserved_data_tail)
//   "" with synthetic data             the chain's sequences numbered from 2^62 on, which training
//                                      never reaches
//
// An evaluation reads it as any forward-only pass reads its source (train/data.hpp): its batch e
// on data-parallel rank r is g = (e * ranks + r) * B + b, so every evaluation reads the same
// sequences, and the same ones at any rank count with the same global batch.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>

#include "core/deck.hpp"
#include "train/data.hpp"

namespace zm {

// The chain's held-out sequences start here: training's sequence numbers grow by the global
// batch per step and would need 2^62 / (1024 x 1024) > 4e12 steps of a million sequences to
// reach it.
constexpr int64_t kHeldOutSequences = int64_t{1} << 62;

struct HeldOutSplit {
  std::unique_ptr<DataSource> data;
  // The lowest mean loss any model can reach on it (the entropy of the next token given the ones
  // before it), where it is known (synthetic data); NaN otherwise.
  double loss_floor = std::nan("");
};
HeldOutSplit held_out_split(const Deck& deck);

// The chain's loss floor over sequences of T tokens.
double chain_loss_floor(const MarkovChain& chain, int64_t T);

// Before any rank reads a token (evaluation on): the held-out split leaves both splits a sequence
// at least, and it holds the distinct sequences one evaluation reads at `data_parallel_ranks`
// (train.eval_batches x ranks x micro_batch). Throws zm::Error naming the keys.
void check_held_out(const Deck& deck, int64_t data_parallel_ranks);

}  // namespace zm
