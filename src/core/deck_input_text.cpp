#include "core/deck_input_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace zm::deck_detail {

namespace {

// A value as it is quoted back in a message: whole unless it is very long.
std::string shown(const std::string& text) {
  constexpr size_t kLongest = 64;
  if (text.size() <= kLongest) return text;
  return fmt::format("{}... ({} characters)", text.substr(0, kLongest - 4), text.size());
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

const char* digits_of_base(int base) {
  return base == 16  ? "0123456789abcdefABCDEF"
         : base == 8 ? "01234567"
         : base == 2 ? "01"
                     : "0123456789";
}

std::string integer_out_of_range(const std::string& text, const std::string& digits, int base,
                                 bool negative) {
  const std::string signed_digits = (negative ? "-" : "") + digits;
  errno = 0;
  char* end = nullptr;
  std::strtoll(signed_digits.c_str(), &end, base);
  if (*end != '\0' || errno != ERANGE) return "";
  return fmt::format(
      "{} is out of range for a 64-bit integer ({} is {})", shown(text),
      negative ? "smallest" : "largest",
      negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
}

std::string float_out_of_range(const std::string& text, const std::string& number) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  // Underflow (1e-400) is not refused: it reads as zero, or as the nearest subnormal, as TOML does.
  if (*end != '\0' || errno != ERANGE || !std::isinf(value)) return "";
  // The bound is DBL_MAX, 1.7976931348623157e308.
  return fmt::format("{} is out of range for a number ({} is about {}1.8e308)", shown(text),
                     value < 0 ? "smallest" : "largest", value < 0 ? "-" : "");
}

}  // namespace

std::string number_out_of_range(const std::string& text) {
  std::string number;  // without TOML's digit separators
  for (char c : text)
    if (c != '_') number += c;
  const bool negative = !number.empty() && number[0] == '-';
  const size_t start = !number.empty() && (number[0] == '-' || number[0] == '+') ? 1 : 0;
  if (start >= number.size() || !std::isdigit(static_cast<unsigned char>(number[start]))) return "";
  int base = 10;
  if (number.size() > start + 1 && number[start] == '0') {
    const char prefix = number[start + 1];
    base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : prefix == 'b' ? 2 : 10;
  }
  const std::string digits = number.substr(base == 10 ? start : start + 2);
  if (digits.empty()) return "";
  if (digits.find_first_not_of(digits_of_base(base)) == std::string::npos)
    return integer_out_of_range(text, digits, base, negative);
  if (base != 10 || digits.find_first_not_of("0123456789.eE+-") != std::string::npos) return "";
  return float_out_of_range(text, number);
}

std::string bare_value_problem(const std::string& name, const std::string& text) {
  // An apostrophe inside a word (o'brien) is a bare string; a value that starts with a quote, or
  // holds a double quote, was meant as a TOML string that the shell or the user left broken.
  const bool starts_quoted = !text.empty() && (text[0] == '"' || text[0] == '\'');
  if (!starts_quoted && text.find('"') == std::string::npos) return "";
  const char quote = starts_quoted ? text[0] : '"';
  const std::string advice = fmt::format("write {0}=\"value\" or {0}=value", name);
  if (std::count(text.begin(), text.end(), quote) % 2 == 1)
    return fmt::format("unbalanced quote in the value ({})", advice);
  return fmt::format(
      "misplaced quote in the value: TOML takes quotes only around the whole value ({}; a value "
      "that holds '\"' goes in single quotes, {}='a\"b')",
      advice, name);
}

std::string out_of_range_on_line(const std::string& toml_text, size_t line) {
  std::istringstream in(toml_text);
  std::string row;
  std::string section;
  for (size_t number = 1; std::getline(in, row); ++number) {
    const std::string text = trim(row);
    if (number < line) {
      if (text.size() > 1 && text[0] == '[' && text[1] != '[')
        section = trim(text.substr(1, text.find(']') - 1));
      continue;
    }
    const auto equals = text.find('=');
    if (equals == std::string::npos) return "";
    const std::string key = trim(text.substr(0, equals));
    const std::string value = trim(text.substr(equals + 1, text.find('#') - equals - 1));
    const std::string problem = number_out_of_range(value);
    if (problem.empty()) return "";
    return fmt::format("{}: {}", section.empty() ? key : section + "." + key, problem);
  }
  return "";
}

std::string override_origin(const std::string& assignment) {
  constexpr size_t kLongest = 200, kShown = 60;
  if (assignment.size() <= kLongest) return "--set " + assignment;
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(assignment[cut]) & 0xC0) == 0x80) --cut;
  return "--set " + assignment.substr(0, cut) + "...";
}

}  // namespace zm::deck_detail
