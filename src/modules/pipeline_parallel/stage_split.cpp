#include "modules/pipeline_parallel/stage_split.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include "core/error.hpp"

namespace zm::pipeline {

namespace {

// The counts of a list such as "5,7" (spaces allowed around them); "" or what is wrong.
std::string parse_counts(const std::string& text, std::vector<int64_t>& counts) {
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    if (first == std::string::npos) return fmt::format("an empty entry in \"{}\"", text);
    const std::string digits = item.substr(first, last - first + 1);
    char* end = nullptr;
    errno = 0;
    const long long count = std::strtoll(digits.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || count < 1)
      return fmt::format("\"{}\" is not a positive block count", digits);
    counts.push_back(count);
  }
  if (counts.empty()) return "no block counts";
  return "";
}

}  // namespace

std::string check_block_list(const deck_detail::RawValue& value) {
  if (value.type == deck_detail::RawValue::Type::Integer)
    return value.integer >= 1 ? "" : "out of range";
  if (value.type != deck_detail::RawValue::Type::String) return "not a string";
  if (value.text.empty()) return "";
  std::vector<int64_t> counts;
  return parse_counts(value.text, counts);
}

int64_t split_depth(const Deck& deck) {
  std::vector<int64_t> counts;
  const std::string list = deck.value<std::string>(kLayersKey);
  if (list.empty() || !parse_counts(list, counts).empty()) return 0;
  return std::accumulate(counts.begin(), counts.end(), int64_t{0});
}

std::vector<int64_t> stage_blocks(const Deck& deck, int64_t pp) {
  const int64_t layers = deck.model.layers;
  const std::string list = deck.value<std::string>(kLayersKey);
  if (list.empty()) {
    if (pp < 1 || layers % pp != 0)
      fail(
          "{}: parallel.pp = {} must divide model.layers = {} (set at {}) for equal stages, or "
          "{} must give each stage's blocks",
          deck.where("parallel.pp"), pp, layers, deck.where("model.layers"), kLayersKey);
    return std::vector<int64_t>(static_cast<size_t>(pp), layers / pp);
  }
  std::vector<int64_t> counts;
  const std::string problem = parse_counts(list, counts);
  if (!problem.empty())
    fail("{}: {} = \"{}\": {}", deck.where(kLayersKey), kLayersKey, list, problem);
  if (static_cast<int64_t>(counts.size()) != pp)
    fail("{}: {} = \"{}\" gives {} stages, but parallel.pp = {} (set at {})",
         deck.where(kLayersKey), kLayersKey, list, counts.size(), pp, deck.where("parallel.pp"));
  const int64_t sum = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  // A deeper model of the same split (`zeromini plan --largest` tries depths in multiples of it).
  if (layers % sum != 0)
    fail("{}: {} = \"{}\" holds {} blocks, but model.layers = {} (set at {}) is not a multiple",
         deck.where(kLayersKey), kLayersKey, list, sum, layers, deck.where("model.layers"));
  for (int64_t& count : counts) count *= layers / sum;
  return counts;
}

}  // namespace zm::pipeline
