// The deck schema: one KeySpec per key. The core's keys are in deck_schema.cpp; a module adds its
// own through core/deck_keys.hpp.
#pragma once

#include "core/deck.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace zm::deck_detail {

// A value as it came from TOML (file or --set), before it is checked against a KeySpec.
struct RawValue {
  enum class Type { Integer, Float, Boolean, String, Other };
  Type type = Type::Other;
  int64_t integer = 0;
  double number = 0.0;
  bool boolean = false;
  std::string text;      // the string value, or for Other a description of what was found
  std::string as_found;  // how to print the value in an error message
};

enum class Kind { Integer, Float, Boolean, String, Choice, Stage, ShardSize, Custom };

// The longest string a key accepts unless its KeySpec says otherwise: PATH_MAX, as longer paths
// cannot be opened anyway, and without a limit a megabyte of text would fail in HDF5, far from
// the key.
constexpr size_t kMaxStringBytes = 4096;

struct KeySpec {
  std::string section;
  std::string key;
  Kind kind = Kind::Integer;
  std::string doc;
  double min = 0, max = 0;  // Integer/Float bounds (inclusive unless flagged)
  bool min_exclusive = false, max_exclusive = false;
  std::vector<std::string> choices;                 // Choice
  bool allow_empty = false;                         // String: "" is a valid value
  size_t max_string_bytes = kMaxStringBytes;        // any string given to this key
  std::function<void(Deck&, const RawValue&)> set;  // called after the value was validated
  std::function<std::string(const Deck&)> get;      // TOML text of the current value
  // Custom: an integer or a string in a form of the key's own, kept as its text; `check` says
  // what is wrong with a value ("" for nothing) and `expects` is expected()'s text.
  std::function<std::string(const RawValue&)> check;
  std::string expects;
  std::string module;          // the module owning it; "" for the core's
  ModuleValue module_default;  // a module key's default (Deck::value)

  std::string full_name() const { return section + "." + key; }
  std::string expected() const;  // "an integer in 1..1024", "one of "mpi", "nccl", "auto""
};

// Every key: each core section's, then the modules' keys of it, then the modules' own sections;
// and the sections in that order.
const std::vector<KeySpec>& schema();
const std::vector<std::string>& sections();
// Adds a module's keys (core/deck_keys.hpp), each after the last key of its section.
void add_keys(const std::vector<KeySpec>& keys);

// Checks a value against its spec; on success returns "" and on failure the reason, phrased to
// follow "<key> = <value>: ".
std::string check_value(const KeySpec& spec, const RawValue& value);
// Checks the length of a string value (whatever the key's kind, so that a huge string is never
// printed back); "" or the reason, phrased to follow "<key>: ".
std::string check_length(const KeySpec& spec, const RawValue& value);

// A key of `kind` with its documentation; the caller sets the rest.
KeySpec key_spec(std::string section, std::string key, Kind kind, std::string doc);
// `spec` with its Integer/Float bounds.
KeySpec bounded(KeySpec spec, double min, bool min_exclusive, double max, bool max_exclusive);
// The value a raw value valid for a key of `kind` stands for, as the deck keeps it (a module key's
// in Deck::module_values), and that value's TOML text.
ModuleValue typed_value(Kind kind, const RawValue& value);
std::string toml_text(Kind kind, const ModuleValue& value);

}  // namespace zm::deck_detail
