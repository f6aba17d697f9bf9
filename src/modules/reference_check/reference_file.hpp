// A reference file: the losses a correct build trains on one deck, the settings that decide
// them and the tolerance a check allows. `zeromini run --write-reference FILE` writes one from a
// run; `zeromini run --check-reference FILE` reads it, refuses a run with other settings before
// training, and compares the run's losses after it (io/reference_settings.hpp,
// io/reference_losses.hpp).
//
// The file is TOML. format_reference() writes it with a header comment that describes every
// table, so that a reference explains itself; inputs/references/ holds the committed ones.
// This file needs toml++ and no Kokkos header: it is host code in every build.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zm {

// One setting that decides the losses, as TOML value text in one canonical spelling (see the
// *_setting_text functions), so that the run's and the reference's compare as text.
struct ReferenceSetting {
  std::string key;    // "model.layers", "train.lr", or a derived one ("global_batch")
  std::string value;  // "2", "0.01", "\"fp32\"", "true"
  std::string note;   // why it is there or what it counts (a comment in the file); may be ""
};

// The losses of one ZeRO stage at the referenced steps.
struct ReferenceStage {
  int stage = 0;
  std::vector<double> loss;  // one per Reference::steps, in its order
};

struct Reference {
  static constexpr int64_t kFormat = 1;  // the file's `format`; another is refused
  std::string deck;                      // the deck it was made from, as given on the command line
  std::string command;                   // the command that made it
  std::string build;                     // the build that made it (revision, Kokkos, ranks)
  std::vector<ReferenceSetting> settings;
  double tolerance = 0;                // relative: |got - expected| <= tolerance * |expected|
  std::string tolerance_argument;      // why that tolerance (written as a comment; not read back)
  std::vector<int64_t> steps;          // 1-based, increasing
  std::vector<ReferenceStage> stages;  // increasing stage numbers

  // The stage's losses, or nullptr when the reference has none for it.
  const ReferenceStage* find_stage(int stage) const;
};

// The canonical TOML text of a setting's value: integers in decimal, floats in the shortest
// spelling that reads back to the same double (always with a '.' or an exponent), strings quoted.
std::string integer_setting_text(int64_t value);
std::string float_setting_text(double value);
std::string bool_setting_text(bool value);
std::string string_setting_text(const std::string& value);

// The file's text: header comment (what it is, the command, how to check, the format), then the
// tables.
std::string format_reference(const Reference& reference);

// Reads and checks a reference file: a missing or non-regular file, TOML that does not parse,
// a missing or mistyped key, steps that are not increasing and positive, a stage whose losses do
// not match the steps, or a tolerance outside (0, 1) throw zm::Error naming the file and the key.
Reference read_reference(const std::string& path);
// The same from text; `name` stands for the file in messages.
Reference parse_reference(const std::string& text, const std::string& name);

}  // namespace zm
