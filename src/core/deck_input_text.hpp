// Reading values as users type them, where TOML's own answer is not enough: numbers too large for
// their type (toml++ calls 1e400 a syntax error, and a --set value TOML refuses would otherwise be
// taken as a string), quotes the shell left unbalanced, and assignments too long to print back.
// Internal to src/core; it needs no toml++, so nvcc can compile it.
#pragma once

#include <cstddef>
#include <string>

namespace zm::deck_detail {

// "" unless `text` is a number in TOML's syntax (1e400, -12, 0x1F, 1_000) that its type cannot
// hold; then why, e.g. "1e400 is out of range for a number (largest is about 1.8e308)".
std::string number_out_of_range(const std::string& text);

// For a --set value that is not TOML: "" when it may be taken as a bare string, else why not (an
// unbalanced or misplaced quote). `name` is the key, used in the example of what to write.
std::string bare_value_problem(const std::string& name, const std::string& text);

// For a TOML syntax error at (1-based) `line` of a deck: when that line assigns a number that is
// out of range, "<section.key>: <why>"; else "".
std::string out_of_range_on_line(const std::string& toml_text, size_t line);

// "--set <assignment>", cut short when the assignment is too long to print in full.
std::string override_origin(const std::string& assignment);

}  // namespace zm::deck_detail
