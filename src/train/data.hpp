// Training data: the tokens of each micro-batch, and the sources other readers of the data take
// (a forward-only pass between steps, Trainer::forward_only_loss).
//
// Sequence g of optimizer step s is the same whatever the rank count: rank r's micro-step a of
// step s takes the B sequences g = ((s * grad_accum + a) * ranks + r) * B + b, so that a run at
// N ranks with micro_batch B sees the same global batch as a run at 1 rank with micro_batch N*B
// (or with grad_accum N). The data position is therefore just the step number. A forward-only
// pass reads its source the same way: its micro-batch e on rank r is g = (e * ranks + r) * B + b,
// so every pass over a source reads the same sequences, and the same ones at any rank count with
// the same global batch.
#pragma once

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
};

// The synthetic data (data.source = "synthetic"): a fixed random Markov chain of the deck's seed.
// A sequence's first token is drawn uniformly from the vocabulary, and each token is followed by
// one of kSuccessors tokens drawn uniformly (two may coincide), so that the loss falls from
// ln(vocab) towards the chain's entropy (at most ln kSuccessors) as the model learns it.
struct MarkovChain {
  static constexpr int kSuccessors = 4;
  int64_t vocab = 0;
  uint64_t seed = 0;  // the deck's seed, mixed
  // Token `token`'s successor number `choice` (0 .. kSuccessors - 1).
  uint64_t successor(uint64_t token, uint64_t choice) const;
};
MarkovChain markov_chain(const Deck& deck);

// The training split: the chain's sequences from 0 on ("synthetic"), else the token shard
// data.source, less the last `reserved_tail` (a fraction) of its tokens, which another reader
// keeps (RunExtensions::reserved_data_tail).
std::unique_ptr<DataSource> make_data_source(const Deck& deck, double reserved_tail = 0.0);

// Sources for other readers of the data. The chain's sequences numbered from `first` on
// (training reads those from 0), described as `description`.
std::unique_ptr<DataSource> chain_source(const Deck& deck, int64_t first, std::string description);
// The tokens of a token shard: all of them, or those before (Head) or in (Tail) its last
// floor(count x `tail`) tokens (tail_tokens); `what` names the part in describe(), `key` the deck
// key that gave the path (in every message about the file).
enum class ShardPart { Whole, Head, Tail };
std::unique_ptr<DataSource> token_shard_source(const std::string& path, const Deck& deck,
                                               ShardPart part, double tail,
                                               const std::string& what, const std::string& key);
// The tokens of a shard of `count` tokens in its last `tail` (a fraction).
int64_t tail_tokens(int64_t count, double tail);

// Before any rank reads a token: data.source is a token shard where it is not synthetic
// (core/token_shard checks). Throws zm::Error naming the key.
void check_data(const Deck& deck);

int64_t first_sequence(int64_t step, int64_t micro_step, int64_t grad_accum, int ranks, int rank,
                       int64_t B);
// The first sequence of a forward-only pass's micro-batch `batch` on `rank` of `ranks`
// (data-parallel).
int64_t forward_only_sequence(int64_t batch, int ranks, int rank, int64_t B);

}  // namespace zm
