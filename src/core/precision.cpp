#include "core/precision.hpp"

namespace zm {

namespace {
struct Spelling {
  Precision precision;
  const char* name;
};
constexpr Spelling kSpellings[] = {
    {Precision::FP32, "fp32"}, {Precision::TF32, "tf32"}, {Precision::BF16, "bf16"}};
}  // namespace

const char* precision_name(Precision precision) {
  for (const Spelling& s : kSpellings)
    if (s.precision == precision) return s.name;
  return "fp32";
}

bool parse_precision(const std::string& text, Precision& precision) {
  for (const Spelling& s : kSpellings)
    if (text == s.name) {
      precision = s.precision;
      return true;
    }
  return false;
}

}  // namespace zm
