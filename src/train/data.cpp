#include "train/data.hpp"

#include <fmt/format.h>

#include <cmath>

#include "io/token_shard.hpp"
#include "kernels/counter_rng.hpp"

namespace zm {

namespace {

using kernels::splitmix64;

class MarkovData : public DataSource {
 public:
  // `offset`: added to every sequence number (0 for training).
  MarkovData(const MarkovChain& chain, int64_t T, int64_t offset, std::string description)
      : chain_(chain), T_(T), offset_(offset), description_(std::move(description)) {}

  void sequences(int64_t first, int64_t B, int* inputs, int* targets) const override {
    for (int64_t b = 0; b < B; ++b) {
      const uint64_t sequence = static_cast<uint64_t>(offset_ + first + b);
      uint64_t token =
          splitmix64(chain_.seed ^ splitmix64(sequence)) % static_cast<uint64_t>(chain_.vocab);
      for (int64_t t = 0; t <= T_; ++t) {
        if (t < T_) inputs[b * T_ + t] = static_cast<int>(token);
        if (t > 0) targets[b * T_ + t - 1] = static_cast<int>(token);
        const uint64_t choice =
            splitmix64(splitmix64(sequence * 0x100000001b3ull + static_cast<uint64_t>(t)) ^
                       chain_.seed) %
            MarkovChain::kSuccessors;
        token = chain_.successor(token, choice);
      }
    }
  }
  std::string describe() const override { return description_; }

 private:
  MarkovChain chain_;
  int64_t T_;
  int64_t offset_;
  std::string description_;
};

using Tokens = std::vector<uint16_t>;

// Sequences of T tokens (and their next tokens) from tokens [begin, end) of a shard.
class ShardData : public DataSource {
 public:
  ShardData(std::string path, std::shared_ptr<const Tokens> tokens, int64_t begin, int64_t end,
            int64_t T, std::string what)
      : path_(std::move(path)),
        tokens_(std::move(tokens)),
        begin_(begin),
        end_(end),
        T_(T),
        what_(std::move(what)) {}

  void sequences(int64_t first, int64_t B, int* inputs, int* targets) const override {
    // Sequence g starts at (g * T) modulo the last start that leaves T + 1 tokens.
    const int64_t starts = end_ - begin_ - T_;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t start = begin_ + ((first + b) * T_) % starts;
      for (int64_t t = 0; t < T_; ++t) {
        inputs[b * T_ + t] = (*tokens_)[static_cast<size_t>(start + t)];
        targets[b * T_ + t] = (*tokens_)[static_cast<size_t>(start + t + 1)];
      }
    }
  }
  std::string describe() const override {
    if (begin_ == 0 && end_ == static_cast<int64_t>(tokens_->size()))
      return fmt::format("token shard {} ({} tokens)", path_, tokens_->size());
    return fmt::format("token shard {}, {} tokens [{}, {}) of {}", path_, what_, begin_, end_,
                       tokens_->size());
  }
  // Sequence g < this count starts at g * T and ends inside the range without wrapping.
  int64_t distinct_sequences() const override { return (end_ - begin_ - 1) / T_; }

 private:
  std::string path_;
  std::shared_ptr<const Tokens> tokens_;
  int64_t begin_, end_, T_;
  std::string what_;
};

}  // namespace

uint64_t MarkovChain::successor(uint64_t token, uint64_t choice) const {
  return splitmix64(seed + token * kSuccessors + choice) % static_cast<uint64_t>(vocab);
}

MarkovChain markov_chain(const Deck& deck) {
  return {deck.model.vocab, splitmix64(static_cast<uint64_t>(deck.train.seed))};
}

int64_t tail_tokens(int64_t count, double tail) {
  return static_cast<int64_t>(std::floor(static_cast<double>(count) * tail));
}

std::unique_ptr<DataSource> chain_source(const Deck& deck, int64_t first, std::string description) {
  return std::make_unique<MarkovData>(markov_chain(deck), deck.model.seq_len, first,
                                      std::move(description));
}

std::unique_ptr<DataSource> token_shard_source(const std::string& path, const Deck& deck,
                                               ShardPart part, double tail, const std::string& what,
                                               const std::string& key) {
  const int64_t T = deck.model.seq_len;
  auto tokens = std::make_shared<const Tokens>(read_token_shard(path, deck.model.vocab, T, key));
  const int64_t count = static_cast<int64_t>(tokens->size());
  const int64_t split = part == ShardPart::Whole ? count : count - tail_tokens(count, tail);
  const int64_t begin = part == ShardPart::Tail ? split : 0;
  const int64_t end = part == ShardPart::Head ? split : count;
  return std::make_unique<ShardData>(path, std::move(tokens), begin, end, T, what);
}

std::unique_ptr<DataSource> make_data_source(const Deck& deck, double reserved_tail) {
  if (deck.data.source == "synthetic")
    return chain_source(
        deck, 0,
        fmt::format("synthetic Markov chain ({} successors per token)", MarkovChain::kSuccessors));
  return token_shard_source(deck.data.source, deck,
                            reserved_tail > 0 ? ShardPart::Head : ShardPart::Whole, reserved_tail,
                            "the training split", "data.source");
}

void check_data(const Deck& deck) {
  if (deck.data.source != "synthetic")
    check_token_shard(deck.data.source, deck.model.seq_len, "data.source");
}

int64_t first_sequence(int64_t step, int64_t micro_step, int64_t grad_accum, int ranks, int rank,
                       int64_t B) {
  return ((step * grad_accum + micro_step) * ranks + rank) * B;
}

int64_t forward_only_sequence(int64_t batch, int ranks, int rank, int64_t B) {
  return (batch * ranks + rank) * B;
}

}  // namespace zm
