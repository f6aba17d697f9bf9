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
#include <functional>
#include <limits>
#include <memory>
#include <string>

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

// Data files: what data.source (or another deck key naming data) may name besides "synthetic",
// read by a module (add_data_file_reader). A file's parts: all of its tokens, or those before
// (Head) or in (Tail) its last tail_tokens(count, tail) tokens.
enum class DataPart { Whole, Head, Tail };
int64_t tail_tokens(int64_t count, double tail);
struct DataFileReader {
  // Whether it reads `path`; unset: every path.
  std::function<bool(const std::string& path)> reads;
  // Checks the file without reading its tokens (that it holds a sequence of model.seq_len + 1);
  // returns its token count. Errors (zm::Error) name the file and `key`, the key that gave it.
  std::function<int64_t(const std::string& path, const Deck& deck, const std::string& key)> check;
  // Its part's sequences; `what` names the part in describe().
  std::function<std::unique_ptr<DataSource>(const std::string& path, const Deck& deck,
                                            DataPart part, double tail, const std::string& what,
                                            const std::string& key)>
      open;
};
void add_data_file_reader(DataFileReader reader);
// The reader of `path`, the file deck key `key` names; where this build has none, throws zm::Error
// naming the key, where it was set and the CMake option of the module that reads data files.
const DataFileReader& data_file_reader(const std::string& path, const Deck& deck,
                                       const std::string& key);

// The training split: the chain's sequences from 0 on ("synthetic"), else the data file
// data.source, less the last `reserved_tail` (a fraction) of its tokens, which another reader
// keeps (RunExtensions::reserved_data_tail).
std::unique_ptr<DataSource> make_data_source(const Deck& deck, double reserved_tail = 0.0);
// The chain's sequences numbered from `first` on (training reads those from 0), for other
// readers of the data, described as `description`.
std::unique_ptr<DataSource> chain_source(const Deck& deck, int64_t first, std::string description);

// Before any rank reads a token: data.source is a file its reader accepts where it is not
// synthetic. Throws zm::Error naming the key.
void check_data(const Deck& deck);

int64_t first_sequence(int64_t step, int64_t micro_step, int64_t grad_accum, int ranks, int rank,
                       int64_t B);
// The first sequence of a forward-only pass's micro-batch `batch` on `rank` of `ranks`
// (data-parallel).
int64_t forward_only_sequence(int64_t batch, int ranks, int rank, int64_t B);

}  // namespace zm
