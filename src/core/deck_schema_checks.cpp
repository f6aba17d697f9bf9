// What each deck key accepts: the expected-value text of its errors, and the checks of a raw
// value's type, range and length against the key's spec (the table is in deck_schema.cpp).
#include "core/deck_schema.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/stage_spec.hpp"
#include "core/text.hpp"

namespace zm::deck_detail {

std::string KeySpec::expected() const {
  auto bound = [&](double v) {
    if (kind == Kind::Integer) return fmt::format("{}", static_cast<int64_t>(v));
    return fmt::format("{}", v);
  };
  switch (kind) {
    case Kind::Integer:
      if (max >= 9e18) return fmt::format("an integer >= {}", bound(min));
      return fmt::format("an integer in {}..{}", bound(min), bound(max));
    case Kind::Float: {
      std::string lo = fmt::format("{}{}", min_exclusive ? "(" : "[", bound(min));
      std::string hi = max >= std::numeric_limits<double>::max()
                           ? "inf)"
                           : fmt::format("{}{}", bound(max), max_exclusive ? ")" : "]");
      return fmt::format("a number in {}, {}", lo, hi);
    }
    case Kind::Boolean:
      return "true or false";
    case Kind::String:
      return "a string";
    case Kind::Choice: {
      std::string list;
      for (size_t i = 0; i < choices.size(); ++i) list += (i ? ", " : "") + quoted(choices[i]);
      return "one of " + list;
    }
    case Kind::Stage:
      return "an integer in 0..3 or \"all\"";
    case Kind::ShardSize:
      return "an integer >= 0 or \"node\"";
    case Kind::Custom:
      return expects;
  }
  return "";
}

static std::string type_name(const RawValue& v) {
  if (v.type == RawValue::Type::Other) return v.text;
  static const char* const kNames[] = {"an integer", "a floating-point number", "a boolean",
                                       "a string"};
  return enum_name(kNames, v.type);
}

std::string check_length(const KeySpec& spec, const RawValue& v) {
  if (v.type != RawValue::Type::String || v.text.size() <= spec.max_string_bytes) return "";
  return fmt::format("a string of {} bytes is longer than the limit of {} bytes", v.text.size(),
                     spec.max_string_bytes);
}

std::string check_value(const KeySpec& spec, const RawValue& v) {
  auto wrong_type = [&] {
    return fmt::format("expected {}, found {}", spec.expected(), type_name(v));
  };
  auto out_of_range = [&] { return fmt::format("out of range: expected {}", spec.expected()); };
  switch (spec.kind) {
    case Kind::Integer:
      if (v.type != RawValue::Type::Integer) return wrong_type();
      if (v.integer < spec.min || static_cast<double>(v.integer) > spec.max) return out_of_range();
      return "";
    case Kind::Float: {
      if (v.type != RawValue::Type::Integer && v.type != RawValue::Type::Float) return wrong_type();
      const double x = std::get<double>(typed_value(Kind::Float, v));
      if (!std::isfinite(x)) return out_of_range();
      if (x < spec.min || (spec.min_exclusive && x == spec.min)) return out_of_range();
      if (x > spec.max || (spec.max_exclusive && x == spec.max)) return out_of_range();
      return "";
    }
    case Kind::Boolean:
      return v.type == RawValue::Type::Boolean ? "" : wrong_type();
    case Kind::String:
      if (v.type != RawValue::Type::String) return wrong_type();
      if (v.text.empty() && !spec.allow_empty) return "expected a non-empty string";
      return "";
    case Kind::Choice:
      if (v.type != RawValue::Type::String) return wrong_type();
      for (const auto& c : spec.choices)
        if (c == v.text) return "";
      return fmt::format("expected {}", spec.expected());
    case Kind::Stage:
      if (v.type == RawValue::Type::String) {
        if (v.text == "all") return "";
        return fmt::format("expected {}", spec.expected());
      }
      if (v.type != RawValue::Type::Integer) return wrong_type();
      if (v.integer < kStageSpecs.front().stage || v.integer > kStageSpecs.back().stage)
        return out_of_range();
      return "";
    case Kind::ShardSize:
      if (v.type == RawValue::Type::String)
        return v.text == "node" ? "" : fmt::format("expected {}", spec.expected());
      if (v.type != RawValue::Type::Integer) return wrong_type();
      return v.integer >= 0 && v.integer <= 1000000000 ? "" : out_of_range();
    case Kind::Custom: {
      if (v.type != RawValue::Type::Integer && v.type != RawValue::Type::String)
        return wrong_type();
      const std::string error = spec.check(v);
      return error.empty() ? "" : fmt::format("{}: expected {}", error, spec.expected());
    }
  }
  return "";
}

}  // namespace zm::deck_detail
