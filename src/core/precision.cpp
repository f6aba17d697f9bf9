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

PrecisionPolicy make_precision_policy(Precision shorthand, ReducePrecision reduce) {
  PrecisionPolicy policy;
  if (shorthand == Precision::BF16) {
    policy.param = Element::BF16;
    policy.compute = Element::BF16;
  }
  policy.reduce = reduce == ReducePrecision::FP32 ? Element::FP32 : policy.compute;
  policy.master = Element::FP32;  // AdamW always updates fp32 weights
  policy.gemm_math = shorthand == Precision::TF32 ? GemmMath::TF32 : GemmMath::FP32;
  return policy;
}

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

const char* reduce_precision_name(ReducePrecision reduce) {
  return reduce == ReducePrecision::FP32 ? "fp32" : "compute";
}

bool parse_reduce_precision(const std::string& text, ReducePrecision& reduce) {
  if (text != "compute" && text != "fp32") return false;
  reduce = text == "fp32" ? ReducePrecision::FP32 : ReducePrecision::Compute;
  return true;
}

}  // namespace zm
