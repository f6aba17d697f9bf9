#include "core/text.hpp"

#include <fmt/format.h>

namespace zm {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    else
      out += c;
  }
  return out + "\"";
}

std::string thousands(double value) {
  std::string digits = fmt::format("{:.0f}", value);
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    out += digits[i];
    if (digits[i] != '-' && (n - i - 1) % 3 == 0 && i + 1 < n) out += ',';
  }
  return out;
}

}  // namespace zm
