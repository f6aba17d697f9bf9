#include "core/deck.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <fstream>
#include <iterator>

#include "core/deck_input_text.hpp"
#include "core/deck_keys.hpp"
#include "core/deck_schema.hpp"
#include "core/error.hpp"
#include "core/modules.hpp"
#include "core/regular_file.hpp"
#include "core/text.hpp"

namespace zm {

using deck_detail::KeySpec;
using deck_detail::RawValue;

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean 'x'?)" when a known name is close to what was written, else "".
std::string suggestion(const std::string& written, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, written.size() / 3) + 1;
  for (const auto& name : known) {
    size_t d = edit_distance(written, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

std::vector<std::string> keys_of(const std::string& section) {
  std::vector<std::string> out;
  for (const auto& spec : deck_detail::schema())
    if (spec.section == section) out.push_back(spec.key);
  return out;
}

std::vector<std::string> all_full_names() {
  std::vector<std::string> out;
  for (const auto& spec : deck_detail::schema()) out.push_back(spec.full_name());
  return out;
}

// The right key in the wrong place (another section, or outside any) is a common slip.
std::string key_elsewhere(const std::string& key) {
  for (const auto& spec : deck_detail::schema())
    if (spec.key == key) return fmt::format(" (did you mean '{}'?)", spec.full_name());
  return suggestion(key, all_full_names());
}

// The spec of key `full_name` ("section.key"). Unknown, it fails: naming the CMake option where
// the key is a module's this build lacks, else with `hint()`, a suggestion.
template <typename Hint>
const KeySpec& known_key(const std::string& where, const std::string& full_name, Hint&& hint) {
  for (const auto& spec : deck_detail::schema())
    if (spec.full_name() == full_name) return spec;
  const ModuleInfo* module = module_of_key(full_name);
  if (module != nullptr && !module->built)
    fail(
        "{}: {} belongs to the module {} ({}), which this build lacks: configure with -D{}=ON and "
        "build again, or remove the key",
        where, full_name, module->name, module->description, module->option);
  fail("{}: unknown key '{}'{}", where, full_name, hint());
}

// A section only a module this build lacks uses.
bool absent_module_section(const std::string& section) {
  for (const ModuleInfo& module : modules())
    for (const std::string& key : module.keys)
      if (!module.built && key.rfind(section + ".", 0) == 0) return true;
  return false;
}

std::string location(const std::string& file, const toml::source_region& where) {
  if (where.begin.line == 0) return file;
  return fmt::format("{}:{}:{}", file, where.begin.line, where.begin.column);
}

RawValue raw_from_node(const toml::node& node) {
  RawValue v;
  if (auto i = node.as_integer()) {
    v.type = RawValue::Type::Integer;
    v.integer = i->get();
    v.as_found = fmt::format("{}", v.integer);
  } else if (auto f = node.as_floating_point()) {
    v.type = RawValue::Type::Float;
    v.number = f->get();
    v.as_found = fmt::format("{}", v.number);
  } else if (auto b = node.as_boolean()) {
    v.type = RawValue::Type::Boolean;
    v.boolean = b->get();
    v.as_found = v.boolean ? "true" : "false";
  } else if (auto s = node.as_string()) {
    v.type = RawValue::Type::String;
    v.text = s->get();
    v.as_found = quoted(v.text);
  } else {
    v.type = RawValue::Type::Other;
    v.text = node.is_table() ? "a table" : node.is_array() ? "an array" : "a date or time";
    v.as_found = v.text;
  }
  return v;
}

void apply(Deck& deck, const KeySpec& spec, const RawValue& value, const std::string& where) {
  // Before anything that prints the value back.
  const std::string too_long = deck_detail::check_length(spec, value);
  if (!too_long.empty()) fail("{}: {}: {}", where, spec.full_name(), too_long);
  std::string problem = deck_detail::check_value(spec, value);
  if (!problem.empty()) fail("{}: {} = {}: {}", where, spec.full_name(), value.as_found, problem);
  spec.set(deck, value);
  deck.origin[spec.full_name()] = where;
}

void apply_table(Deck& deck, const toml::table& root, const std::string& file) {
  const auto& known_sections = deck_detail::sections();
  for (auto&& [name, node] : root) {
    const std::string section(name.str());
    const std::string where = location(file, name.source());
    if (std::find(known_sections.begin(), known_sections.end(), section) == known_sections.end() &&
        !absent_module_section(section)) {
      if (!node.is_table()) {
        // A key outside any section: maybe the user forgot the [section] header.
        fail(
            "{}: '{}' is outside any section; keys belong in [model], [train], [zero], "
            "[comm], [data] or [output]{}",
            where, section, key_elsewhere(section));
      }
      fail("{}: unknown section [{}]{}", where, section, suggestion(section, known_sections));
    }
    const toml::table* table = node.as_table();
    if (!table) fail("{}: '{}' must be a section ([{}]), found a value", where, section, section);
    for (auto&& [key_name, value_node] : *table) {
      const std::string key(key_name.str());
      const std::string key_where = location(file, key_name.source());
      const KeySpec& spec = known_key(key_where, section + "." + key, [&] {
        const std::string hint = suggestion(key, keys_of(section));
        return hint.empty() ? key_elsewhere(key) : hint;
      });
      apply(deck, spec, raw_from_node(value_node), key_where);
    }
  }
}

// A --set value is read as TOML (7, 3e-4, true, "x"); a bare word that is not TOML is a string,
// so that --set data.source=shards/train.bin needs no quotes. What TOML refused because it is a
// number out of range, or a quote left open, is an error rather than a string.
RawValue override_value(const std::string& where, const std::string& name,
                        const std::string& text) {
  try {
    toml::table parsed = toml::parse("v = " + text, std::string_view("--set"));
    if (parsed.size() == 1 && parsed.get("v")) return raw_from_node(*parsed.get("v"));
  } catch (const toml::parse_error&) {
  }
  std::string problem = deck_detail::number_out_of_range(text);
  if (problem.empty()) problem = deck_detail::bare_value_problem(name, text);
  if (!problem.empty()) fail("{}: {}", where, problem);
  RawValue value;
  value.type = RawValue::Type::String;
  value.text = text;
  value.as_found = quoted(text);
  return value;
}

void apply_override(Deck& deck, const std::string& assignment) {
  const std::string where = deck_detail::override_origin(assignment);
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) fail("{}: expected section.key=value", where);
  const std::string name = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (name.find('.') == std::string::npos)
    fail("{}: '{}' is not of the form section.key{}", where, name,
         suggestion(name, all_full_names()));
  const KeySpec& spec = known_key(where, name, [&] { return suggestion(name, all_full_names()); });
  apply(deck, spec, override_value(where, name, text), where);
}

void cross_check(const Deck& deck, BuildChecks build_checks) {
  const BuildFeatures features = build_features();
  const ModelConfig& m = deck.model;
  if (m.dim % m.heads != 0)
    fail("{}: model.heads = {} must divide model.dim = {} (set at {})", deck.where("model.heads"),
         m.heads, m.dim, deck.where("model.dim"));
  if (m.dim % m.tiles != 0)
    fail("{}: model.tiles = {} must divide model.dim = {} (set at {})", deck.where("model.tiles"),
         m.tiles, m.dim, deck.where("model.dim"));
  run_deck_checks(deck, build_checks);
  if (deck.train.warmup > deck.train.steps && deck.train.steps > 0 &&
      deck.origin.count("train.warmup"))
    fail("{}: train.warmup = {} exceeds train.steps = {}; expected 0..{}",
         deck.where("train.warmup"), deck.train.warmup, deck.train.steps, deck.train.steps);
  if (build_checks == BuildChecks::Skip) return;
  if (deck.comm.backend == "nccl" && !features.nccl)
    fail(
        "{}: comm.backend = \"nccl\": this build has no NCCL backend (it needs a Kokkos with "
        "CUDA); expected \"mpi\" or \"auto\"",
        deck.where("comm.backend"));
  const PrecisionPolicy policy = deck.train.policy();
  if (policy.compute == Element::BF16 && !features.bf16)
    fail(
        "{}: train.precision = \"bf16\": this build's Kokkos ({}) has no bfloat16 type; "
        "bf16 needs Kokkos >= 4. Expected \"fp32\"",
        deck.where("train.precision"), features.kokkos_version);
  if (policy.gemm_math == GemmMath::TF32 && !features.cuda)
    fail("{}: train.precision = \"tf32\": TF32 tensor cores need a CUDA build; expected \"fp32\"",
         deck.where("train.precision"));
}

toml::table parse_toml(const std::string& toml_text, const std::string& name) {
  try {
    return toml::parse(toml_text, std::string_view(name));
  } catch (const toml::parse_error& err) {
    const std::string where = location(name, err.source());
    // toml++ reports a number too large for its type as a syntax error ("could not be
    // interpreted"); the user needs to hear that it is out of range, and for which key.
    const std::string out_of_range =
        deck_detail::out_of_range_on_line(toml_text, err.source().begin.line);
    if (!out_of_range.empty()) fail("{}: {}", where, out_of_range);
    fail("{}: TOML syntax error: {}", where, err.description());
  }
}

bool has_keys(const toml::table& root) {
  for (auto&& [name, node] : root)
    if (!node.is_table() || !node.as_table()->empty()) return true;
  return false;
}

Deck deck_from_table(const toml::table& root, const std::string& name,
                     const std::vector<std::string>& overrides, BuildChecks build_checks) {
  Deck deck;
  deck.path = name;
  apply_table(deck, root, name);
  for (const auto& assignment : overrides) apply_override(deck, assignment);
  cross_check(deck, build_checks);
  return deck;
}

// The lines `line` makes of each key of the schema, each section's under its "[section]" line.
template <typename Line>
std::string by_section(Line&& line) {
  std::string out, current;
  for (const auto& spec : deck_detail::schema()) {
    if (spec.section != current) {
      out += fmt::format("{}[{}]\n", current.empty() ? "" : "\n", spec.section);
      current = spec.section;
    }
    out += line(spec);
  }
  return out;
}

}  // namespace

Deck parse_deck(const std::string& toml_text, const std::string& name,
                const std::vector<std::string>& overrides, BuildChecks build_checks) {
  return deck_from_table(parse_toml(toml_text, name), name, overrides, build_checks);
}

Deck load_deck(const std::string& path, const std::vector<std::string>& overrides,
               BuildChecks build_checks) {
  // Before the open, which would wait forever on a FIFO.
  require_regular_file(path, "deck");
  std::ifstream probe(path);
  if (!probe) fail("{}: cannot open the deck file (is it readable?)", path);
  std::string text((std::istreambuf_iterator<char>(probe)), std::istreambuf_iterator<char>());
  const toml::table root = parse_toml(text, path);
  // Only a file: decks built in memory (tests, tools) may rely on the defaults alone.
  if (!has_keys(root))
    fail(
        "{}: the deck is empty (no keys); every key has a default, but an empty deck is most "
        "likely the wrong file. Run 'zeromini schema' to list the keys.",
        path);
  return deck_from_table(root, path, overrides, build_checks);
}

std::string Deck::resolved_toml() const {
  return fmt::format("# resolved deck (from {}; defaults filled in)\n", path) +
         by_section([&](const KeySpec& spec) {
           return fmt::format("{} = {}\n", spec.key, spec.get(*this));
         });
}

std::string Deck::where(const std::string& key) const {
  auto it = origin.find(key);
  if (it != origin.end()) return it->second;
  return path + " (default)";
}

std::vector<int> Deck::stages() const {
  if (zero.all_stages) return {0, 1, 2, 3};
  return {zero.stage};
}

std::string describe_schema() {
  const Deck defaults;
  return by_section([&](const KeySpec& spec) {
    const std::string module = spec.module.empty() ? "" : " (module " + spec.module + ")";
    return fmt::format("  {:<18} default {:<14} {}{}\n  {:<18} expected {}\n", spec.key,
                       spec.get(defaults), spec.doc, module, "", spec.expected());
  });
}

}  // namespace zm
