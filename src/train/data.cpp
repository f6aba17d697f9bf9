#include "train/data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/error.hpp"
#include "io/token_shard.hpp"

namespace zm {

namespace {

// splitmix64: a good 64-bit mix, used as a counter-based generator.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The chain's held-out sequences start here: training's sequence numbers grow by the global
// batch per step and would need 2^62 / (1024 x 1024) > 4e12 steps of a million sequences to
// reach it.
constexpr int64_t kHeldOutSequences = int64_t{1} << 62;

class MarkovData : public DataSource {
 public:
  static constexpr int kSuccessors = 4;

  // `offset`: added to every sequence number (the held-out split's kHeldOutSequences).
  MarkovData(int64_t vocab, int64_t T, uint64_t seed, int64_t offset)
      : vocab_(vocab), T_(T), seed_(mix(seed)), offset_(offset) {}

  void sequences(int64_t first, int64_t B, int* inputs, int* targets) const override {
    for (int64_t b = 0; b < B; ++b) {
      const uint64_t sequence = static_cast<uint64_t>(offset_ + first + b);
      uint64_t token = mix(seed_ ^ mix(sequence)) % static_cast<uint64_t>(vocab_);
      for (int64_t t = 0; t <= T_; ++t) {
        if (t < T_) inputs[b * T_ + t] = static_cast<int>(token);
        if (t > 0) targets[b * T_ + t - 1] = static_cast<int>(token);
        const uint64_t choice =
            mix(mix(sequence * 0x100000001b3ull + static_cast<uint64_t>(t)) ^ seed_) % kSuccessors;
        token = successor(token, choice);
      }
    }
  }
  std::string describe() const override {
    return fmt::format(
        "synthetic Markov chain ({} successors per token; loss floor at most ln {} = {:.3f})",
        kSuccessors, kSuccessors, 1.3862944);
  }

  // A target is the successor of the token before it, one of kSuccessors drawn uniformly (two
  // may coincide): the best prediction given token x has the entropy H(x) of x's successors.
  // The first token of a sequence is uniform over the vocabulary, the token at position t has
  // the distribution p_t = p_0 P^t, and the floor is the mean over the T targets of
  // sum_x p_t(x) H(x). p_t settles within a few dozen steps; the rest repeat the last term.
  double loss_floor() const override {
    const size_t V = static_cast<size_t>(vocab_);
    std::vector<std::array<uint64_t, kSuccessors>> next(V);
    std::vector<double> entropy(V, 0.0);
    for (size_t x = 0; x < V; ++x) {
      for (int c = 0; c < kSuccessors; ++c) next[x][c] = successor(x, static_cast<uint64_t>(c));
      for (int c = 0; c < kSuccessors; ++c) {
        if (std::find(next[x].begin(), next[x].begin() + c, next[x][c]) != next[x].begin() + c)
          continue;  // counted with its first occurrence
        const double p =
            static_cast<double>(std::count(next[x].begin(), next[x].end(), next[x][c])) /
            kSuccessors;
        entropy[x] -= p * std::log(p);
      }
    }
    std::vector<double> p(V, 1.0 / static_cast<double>(V)), q(V);
    double sum = 0.0;
    for (int64_t t = 0; t < T_; ++t) {
      double term = 0.0;
      for (size_t x = 0; x < V; ++x) term += p[x] * entropy[x];
      std::fill(q.begin(), q.end(), 0.0);
      for (size_t x = 0; x < V; ++x)
        for (int c = 0; c < kSuccessors; ++c) q[next[x][c]] += p[x] / kSuccessors;
      double change = 0.0;
      for (size_t x = 0; x < V; ++x) change += std::fabs(q[x] - p[x]);
      p.swap(q);
      if (change < 1e-14) {  // settled: every later position has the same term
        sum += term * static_cast<double>(T_ - t);
        return sum / static_cast<double>(T_);
      }
      sum += term;
    }
    return sum / static_cast<double>(T_);
  }

 private:
  uint64_t successor(uint64_t token, uint64_t choice) const {
    return mix(seed_ + token * kSuccessors + choice) % static_cast<uint64_t>(vocab_);
  }

  int64_t vocab_, T_;
  uint64_t seed_;
  int64_t offset_;
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

// With evaluation and no data.val_source, a shard's last val_fraction of tokens are held out.
bool holds_out_tail(const Deck& deck) {
  return deck.train.evaluates() && deck.data.val_source.empty() && deck.data.source != "synthetic";
}

// Where the held-out tail of a shard of `count` tokens starts.
int64_t tail_begin(const Deck& deck, int64_t count) {
  return count -
         static_cast<int64_t>(std::floor(static_cast<double>(count) * deck.data.val_fraction));
}

}  // namespace

std::unique_ptr<DataSource> make_data_source(const Deck& deck) {
  const int64_t V = deck.model.vocab, T = deck.model.seq_len;
  if (deck.data.source == "synthetic")
    return std::make_unique<MarkovData>(V, T, static_cast<uint64_t>(deck.train.seed), 0);
  auto tokens = std::make_shared<const Tokens>(read_token_shard(deck.data.source, V, T));
  const int64_t count = static_cast<int64_t>(tokens->size());
  const int64_t end = holds_out_tail(deck) ? tail_begin(deck, count) : count;
  return std::make_unique<ShardData>(deck.data.source, std::move(tokens), 0, end, T,
                                     "the training split");
}

std::unique_ptr<DataSource> make_validation_source(const Deck& deck) {
  if (!deck.train.evaluates()) return nullptr;
  const int64_t V = deck.model.vocab, T = deck.model.seq_len;
  const std::string& path = deck.data.val_source.empty() ? deck.data.source : deck.data.val_source;
  if (path == "synthetic")
    return std::make_unique<MarkovData>(V, T, static_cast<uint64_t>(deck.train.seed),
                                        kHeldOutSequences);
  auto tokens = std::make_shared<const Tokens>(read_token_shard(path, V, T));
  const int64_t count = static_cast<int64_t>(tokens->size());
  const int64_t begin = holds_out_tail(deck) ? tail_begin(deck, count) : 0;
  return std::make_unique<ShardData>(path, std::move(tokens), begin, count, T,
                                     "the held-out split");
}

void check_data(const Deck& deck, int64_t data_parallel_ranks) {
  const int64_t T = deck.model.seq_len;
  int64_t count = 0;
  if (deck.data.source != "synthetic") count = check_token_shard(deck.data.source, T);
  if (!deck.train.evaluates()) return;
  int64_t held = 0;  // tokens of the held-out split
  std::string split;
  if (holds_out_tail(deck)) {
    held = count - tail_begin(deck, count);
    const int64_t kept = count - held;
    if (held < T + 1 || kept < T + 1)
      fail(
          "{}: data.val_fraction = {} holds out {} of the {} tokens of {} for evaluation, "
          "leaving {} for training; each split needs one sequence of model.seq_len + 1 = {} "
          "tokens at least. Expected a data.val_fraction that leaves both that many, or a "
          "data.val_source",
          deck.where("data.val_fraction"), deck.data.val_fraction, held, count, deck.data.source,
          kept, T + 1);
    split = fmt::format("the last {} tokens of {} (data.val_fraction = {})", held, deck.data.source,
                        deck.data.val_fraction);
  } else if (!deck.data.val_source.empty() && deck.data.val_source != "synthetic") {
    held = check_token_shard(deck.data.val_source, T);
    split = fmt::format("{} ({} tokens)", deck.data.val_source, held);
  } else {
    return;  // the chain's held-out sequences never run out
  }
  const int64_t distinct = (held - 1) / T;
  const int64_t needed = deck.train.eval_batches * data_parallel_ranks * deck.train.micro_batch;
  if (needed > distinct)
    fail(
        "{}: one evaluation reads train.eval_batches x data-parallel ranks x train.micro_batch = "
        "{} x {} x {} = {} sequences of {} tokens, and the held-out split, {}, holds {}. Expected "
        "train.eval_batches <= {}, or a larger held-out split",
        deck.where("train.eval_batches"), deck.train.eval_batches, data_parallel_ranks,
        deck.train.micro_batch, needed, T, split, distinct,
        distinct / (data_parallel_ranks * deck.train.micro_batch));
}

int64_t first_sequence(int64_t step, int64_t micro_step, int64_t grad_accum, int ranks, int rank,
                       int64_t B) {
  return ((step * grad_accum + micro_step) * ranks + rank) * B;
}

int64_t validation_sequence(int64_t batch, int ranks, int rank, int64_t B) {
  return (batch * ranks + rank) * B;
}

}  // namespace zm
