// The reader of token shards the core's data.source (and the evaluation module's
// data.val_source) may name: train/data.hpp's DataFileReader.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "modules/token_shards/token_shard.hpp"
#include "train/data.hpp"

namespace zm {

namespace {

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

std::unique_ptr<DataSource> open_shard(const std::string& path, const Deck& deck, DataPart part,
                                       double tail, const std::string& what,
                                       const std::string& key) {
  const int64_t T = deck.model.seq_len;
  auto tokens = std::make_shared<const Tokens>(read_token_shard(path, deck.model.vocab, T, key));
  const int64_t count = static_cast<int64_t>(tokens->size());
  const int64_t split = part == DataPart::Whole ? count : count - tail_tokens(count, tail);
  const int64_t begin = part == DataPart::Tail ? split : 0;
  const int64_t end = part == DataPart::Head ? split : count;
  return std::make_unique<ShardData>(path, std::move(tokens), begin, end, T, what);
}

}  // namespace

void register_module_token_shards() {
  DataFileReader reader;
  reader.check = [](const std::string& path, const Deck& deck, const std::string& key) {
    return check_token_shard(path, deck.model.seq_len, key);
  };
  reader.open = open_shard;
  add_data_file_reader(std::move(reader));
}

}  // namespace zm
