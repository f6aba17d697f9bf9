// Text helpers shared by the TOML (resolved deck) and JSON (summary) writers.
#pragma once

#include <cstddef>
#include <string>

namespace zm {

// `text` as a double-quoted string with ", \, control characters escaped: valid as a TOML basic
// string and as a JSON string.
std::string quoted(const std::string& text);

// `value` rounded to an integer with thousands separators: 1234567 -> "1,234,567".
std::string thousands(double value);

// The name of enumerator `e` in a table listing every enumerator's in order ("?" past its end).
template <typename Enum, size_t N>
const char* enum_name(const char* const (&names)[N], Enum e) {
  const auto i = static_cast<size_t>(e);
  return i < N ? names[i] : "?";
}

}  // namespace zm
