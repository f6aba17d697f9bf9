// Text helpers shared by the TOML (resolved deck) and JSON (summary) writers.
#pragma once

#include <string>

namespace zm {

// `text` as a double-quoted string with ", \, control characters escaped: valid as a TOML basic
// string and as a JSON string.
std::string quoted(const std::string& text);

// `value` rounded to an integer with thousands separators: 1234567 -> "1,234,567".
std::string thousands(double value);

}  // namespace zm
