#include "train/data.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/modules.hpp"
#include "core/registry.hpp"
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

ZM_REGISTRY(DataFileReader, add_data_file_reader, data_file_readers)

const DataFileReader& data_file_reader(const std::string& path, const Deck& deck,
                                       const std::string& key) {
  for (const DataFileReader& reader : data_file_readers())
    if (!reader.reads || reader.reads(path)) return reader;
  const std::string option = option_providing("data files");
  fail("{}: {} = \"{}\" names a data file, and this build reads none: expected \"synthetic\"{}",
       deck.where(key), key, path,
       option.empty() ? "" : ", or configure with -D" + option + "=ON and build again");
}

std::unique_ptr<DataSource> make_data_source(const Deck& deck, double reserved_tail) {
  if (deck.data.source == "synthetic")
    return chain_source(
        deck, 0,
        fmt::format("synthetic Markov chain ({} successors per token)", MarkovChain::kSuccessors));
  return data_file_reader(deck.data.source, deck, "data.source")
      .open(deck.data.source, deck, reserved_tail > 0 ? DataPart::Head : DataPart::Whole,
            reserved_tail, "the training split", "data.source");
}

void check_data(const Deck& deck) {
  if (deck.data.source != "synthetic")
    data_file_reader(deck.data.source, deck, "data.source")
        .check(deck.data.source, deck, "data.source");
}

int64_t first_sequence(int64_t step, int64_t micro_step, int64_t grad_accum, int ranks, int rank,
                       int64_t B) {
  return ((step * grad_accum + micro_step) * ranks + rank) * B;
}

int64_t forward_only_sequence(int64_t batch, int ranks, int rank, int64_t B) {
  return (batch * ranks + rank) * B;
}

}  // namespace zm
