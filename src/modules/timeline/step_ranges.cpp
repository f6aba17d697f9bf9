#include "modules/timeline/step_ranges.hpp"

#include <fmt/format.h>

#include <cctype>
#include <string>
#include <vector>

namespace zm {

namespace {

// A positive decimal number at text[pos...]; advances pos. False if there is none or it is
// too large.
bool read_step(const std::string& text, size_t& pos, int64_t& value) {
  const size_t begin = pos;
  value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (pos - begin >= 15) return false;
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  return pos > begin && value >= 1;
}

}  // namespace

std::string parse_step_ranges(const std::string& text, std::vector<StepRange>* out) {
  out->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    StepRange range;
    if (!read_step(text, pos, range.first))
      return fmt::format("no step number (from 1) at character {}", pos + 1);
    range.last = range.first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (!read_step(text, pos, range.last))
        return fmt::format("no step number (from 1) at character {}", pos + 1);
      if (range.last < range.first)
        return fmt::format("the range {}-{} runs backwards", range.first, range.last);
    }
    out->push_back(range);
    if (pos == text.size()) return "";
    if (text[pos] != ',') return fmt::format("unexpected '{}' at character {}", text[pos], pos + 1);
    ++pos;
  }
  return "";
}

std::string check_step_list(const deck_detail::RawValue& value) {
  if (value.type == deck_detail::RawValue::Type::Integer)
    return value.integer >= 1 ? "" : "out of range";
  std::vector<StepRange> ranges;
  return parse_step_ranges(value.text, &ranges);
}

}  // namespace zm
