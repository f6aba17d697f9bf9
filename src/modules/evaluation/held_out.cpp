#include "modules/evaluation/held_out.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "modules/evaluation/settings.hpp"

namespace zm {

HeldOutSplit held_out_split(const Deck& deck) {
  const EvaluationSettings s = evaluation_settings(deck);
  const std::string& path = s.val_source.empty() ? deck.data.source : s.val_source;
  const char* key = s.val_source.empty() ? "data.source" : "data.val_source";
  HeldOutSplit split;
  if (path == "synthetic") {
    split.data = chain_source(
        deck, kHeldOutSequences,
        fmt::format(
            "synthetic Markov chain ({} successors per token; loss floor at most ln {} = {:.3f})",
            MarkovChain::kSuccessors, MarkovChain::kSuccessors, 1.3862944));
    split.loss_floor = chain_loss_floor(markov_chain(deck), deck.model.seq_len);
    return split;
  }
  split.data = data_file_reader(path, deck, key)
                   .open(path, deck, holds_out_tail(deck) ? DataPart::Tail : DataPart::Whole,
                         s.val_fraction, "the held-out split", key);
  return split;
}

// A target is the successor of the token before it, one of kSuccessors drawn uniformly (two may
// coincide): the best prediction given token x has the entropy H(x) of x's successors. The first
// token of a sequence is uniform over the vocabulary, the token at position t has the
// distribution p_t = p_0 P^t, and the floor is the mean over the T targets of
// sum_x p_t(x) H(x). p_t settles within a few dozen steps; the rest repeat the last term.
double chain_loss_floor(const MarkovChain& chain, int64_t T) {
  constexpr int kSuccessors = MarkovChain::kSuccessors;
  const size_t V = static_cast<size_t>(chain.vocab);
  std::vector<std::array<uint64_t, kSuccessors>> next(V);
  std::vector<double> entropy(V, 0.0);
  for (size_t x = 0; x < V; ++x) {
    for (int c = 0; c < kSuccessors; ++c) next[x][c] = chain.successor(x, static_cast<uint64_t>(c));
    for (int c = 0; c < kSuccessors; ++c) {
      if (std::find(next[x].begin(), next[x].begin() + c, next[x][c]) != next[x].begin() + c)
        continue;  // counted with its first occurrence
      const double p =
          static_cast<double>(std::count(next[x].begin(), next[x].end(), next[x][c])) / kSuccessors;
      entropy[x] -= p * std::log(p);
    }
  }
  std::vector<double> p(V, 1.0 / static_cast<double>(V)), q(V);
  double sum = 0.0;
  for (int64_t t = 0; t < T; ++t) {
    double term = 0.0;
    for (size_t x = 0; x < V; ++x) term += p[x] * entropy[x];
    std::fill(q.begin(), q.end(), 0.0);
    for (size_t x = 0; x < V; ++x)
      for (int c = 0; c < kSuccessors; ++c) q[next[x][c]] += p[x] / kSuccessors;
    double change = 0.0;
    for (size_t x = 0; x < V; ++x) change += std::fabs(q[x] - p[x]);
    p.swap(q);
    if (change < 1e-14) {  // settled: every later position has the same term
      sum += term * static_cast<double>(T - t);
      return sum / static_cast<double>(T);
    }
    sum += term;
  }
  return sum / static_cast<double>(T);
}

void check_held_out(const Deck& deck, int64_t data_parallel_ranks) {
  const EvaluationSettings s = evaluation_settings(deck);
  if (!s.evaluates()) return;
  const int64_t T = deck.model.seq_len;
  int64_t held = 0;  // tokens of the held-out split
  std::string split;
  if (holds_out_tail(deck)) {
    const int64_t count = data_file_reader(deck.data.source, deck, "data.source")
                              .check(deck.data.source, deck, "data.source");
    held = tail_tokens(count, s.val_fraction);
    const int64_t kept = count - held;
    if (held < T + 1 || kept < T + 1)
      fail(
          "{}: data.val_fraction = {} holds out {} of the {} tokens of {} for evaluation, "
          "leaving {} for training; each split needs one sequence of model.seq_len + 1 = {} "
          "tokens at least. Expected a data.val_fraction that leaves both that many, or a "
          "data.val_source",
          deck.where("data.val_fraction"), s.val_fraction, held, count, deck.data.source, kept,
          T + 1);
    split = fmt::format("the last {} tokens of {} (data.val_fraction = {})", held, deck.data.source,
                        s.val_fraction);
  } else if (!s.val_source.empty() && s.val_source != "synthetic") {
    held = data_file_reader(s.val_source, deck, "data.val_source")
               .check(s.val_source, deck, "data.val_source");
    split = fmt::format("{} ({} tokens)", s.val_source, held);
  } else {
    return;  // the chain's held-out sequences never run out
  }
  const int64_t distinct = (held - 1) / T;
  const int64_t needed = s.batches * data_parallel_ranks * deck.train.micro_batch;
  if (needed > distinct)
    fail(
        "{}: one evaluation reads train.eval_batches x data-parallel ranks x train.micro_batch = "
        "{} x {} x {} = {} sequences of {} tokens, and the held-out split, {}, holds {}. Expected "
        "train.eval_batches <= {}, or a larger held-out split",
        deck.where("train.eval_batches"), s.batches, data_parallel_ranks, deck.train.micro_batch,
        needed, T, split, distinct, distinct / (data_parallel_ranks * deck.train.micro_batch));
}

}  // namespace zm
