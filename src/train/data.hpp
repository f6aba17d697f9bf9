// Training data: the tokens of each micro-batch, and the held-out split evaluation reads.
//
// Sequence g of optimizer step s is the same whatever the rank count: rank r's micro-step a of
// step s takes the B sequences g = ((s * grad_accum + a) * ranks + r) * B + b, so that a run at
// N ranks with micro_batch B sees the same global batch as a run at 1 rank with micro_batch N*B
// (or with grad_accum N). The data position is therefore just the step number. Evaluation reads
// the held-out split the same way: its batch e on rank r is g = (e * ranks + r) * B + b, so every
// evaluation reads the same sequences, and the same ones at any rank count with the same global
// batch.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/deck.hpp"

namespace zm {

class DataSource {
 public:
  static constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

  virtual ~DataSource() = default;
  // Fills inputs and targets (B*T each) with sequence indices first_sequence .. +B-1.
  virtual void sequences(int64_t first_sequence, int64_t B, int* inputs, int* targets) const = 0;
  virtual std::string describe() const = 0;
  // Distinct sequences the source holds before sequences() wraps around (kUnbounded: never).
  virtual int64_t distinct_sequences() const { return kUnbounded; }
  // The lowest mean loss any model can reach on this data (the entropy of the next token given
  // the ones before it), where it is known; NaN otherwise.
  virtual double loss_floor() const { return std::nan(""); }
};

// The training split: "synthetic", a fixed random Markov chain (each token has 4 possible
// successors), so that the loss falls from ln(vocab) towards the chain's entropy (at most ln 4)
// as the model learns it; a token shard otherwise, less its held-out tail when evaluation holds
// one out (data.val_source = "" with train.eval_every > 0).
std::unique_ptr<DataSource> make_data_source(const Deck& deck);

// The held-out split (data.val_source; or the tail of data.source; or, with synthetic data, the
// chain's sequences from 2^62 on, which training never reaches). nullptr without evaluation.
std::unique_ptr<DataSource> make_validation_source(const Deck& deck);

// Before any rank reads a token: every shard the deck names is one (core/token_shard checks),
// the held-out split leaves both splits a sequence at least, and it holds the distinct sequences
// one evaluation reads at `data_parallel_ranks` (train.eval_batches x ranks x micro_batch).
// Throws zm::Error naming the keys.
void check_data(const Deck& deck, int64_t data_parallel_ranks);

int64_t first_sequence(int64_t step, int64_t micro_step, int64_t grad_accum, int ranks, int rank,
                       int64_t B);
// The first sequence of evaluation batch `batch` on `rank` of `ranks` (data-parallel).
int64_t validation_sequence(int64_t batch, int ranks, int rank, int64_t B);

}  // namespace zm
