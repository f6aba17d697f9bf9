#include "modules/reference_check/reference_file.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <optional>

#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "core/text.hpp"

namespace zm {

namespace {

constexpr int kStages = 4;

std::string stage_key(int stage) {
  return fmt::format("stage{}", stage);
}

// A list of numbers as a TOML array, each in its shortest exact spelling.
template <typename T>
std::string toml_array(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", values[i]);
  return out + "]";
}

// The header: what the file is, how it was made and how to check a build with it, and what each
// table means. Lines of `text` are prefixed with "# ".
std::string comment(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? end : end - start);
    out += line.empty() ? "#\n" : "# " + line + "\n";
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string check_command(const std::string& command) {
  const std::string write = "--write-reference";
  std::string out = command;
  const size_t at = out.find(write);
  if (at != std::string::npos) out.replace(at, write.size(), "--check-reference");
  return out;
}

std::string header(const Reference& r) {
  std::string text = fmt::format(
      "zeromini reference: the losses a correct build trains on {}.\n"
      "\n"
      "Made by:   {}\n"
      "Made with: {}\n"
      "Check a build with the same command, --check-reference in place of --write-reference:\n"
      "  {}\n"
      "(at any zero.stage this file has losses for, and at any rank count that keeps the global\n"
      "batch below, through train.micro_batch or train.grad_accum).\n"
      "\n",
      r.deck, r.command, r.build, check_command(r.command));
  text +=
      "[settings]  The settings that decide the losses. A run whose settings differ is refused\n"
      "            before training (exit status 2), naming the key, this file's value and the\n"
      "            run's. What changes how a run is carried out but not what it computes is not\n"
      "            here and may differ: zero.stage and the other zero keys but quantization,\n"
      "            parallel.tp (beyond the global batch), model.recompute, model.attention,\n"
      "            model.classifier_chunk, comm.*, output.*, the Kokkos backend and its threads\n"
      "            (src/io/reference_settings.cpp says why for each).\n"
      "[tolerance] relative: a loss passes when |got - expected| <= relative x |expected|.\n";
  if (!r.tolerance_argument.empty()) {
    std::string indented;
    size_t start = 0;
    while (start < r.tolerance_argument.size()) {
      const size_t end = r.tolerance_argument.find('\n', start);
      indented += "            " + r.tolerance_argument.substr(start, end - start) + "\n";
      if (end == std::string::npos) break;
      start = end + 1;
    }
    text += indented;
  }
  text +=
      "[losses]    The loss (the mean over the global batch) after each of `steps` (1-based),\n"
      "            for each ZeRO stage (stageN). A run compares the stages it trains, after\n"
      "            training; a loss outside the tolerance is a miss: the run names the stage, the\n"
      "            step, both losses and their relative difference, and exits with status 7.";
  return comment(text);
}

[[noreturn]] void bad(const std::string& name, const std::string& key, const std::string& what) {
  fail("{}: {}: {} (a reference file is written by `zeromini run --write-reference`)", name, key,
       what);
}

// The canonical text of a setting's value in the file, or "" for a value of another kind.
std::string node_text(const toml::node& node) {
  if (auto i = node.as_integer()) return integer_setting_text(i->get());
  if (auto f = node.as_floating_point()) return float_setting_text(f->get());
  if (auto b = node.as_boolean()) return bool_setting_text(b->get());
  if (auto s = node.as_string()) return string_setting_text(s->get());
  return "";
}

// [settings], its sub-tables flattened to dotted keys ("model.layers").
void read_settings(const toml::table& table, const std::string& prefix, const std::string& name,
                   std::vector<ReferenceSetting>& out) {
  for (auto&& [key, node] : table) {
    const std::string full = prefix + std::string(key.str());
    if (const toml::table* sub = node.as_table()) {
      read_settings(*sub, full + ".", name, out);
      continue;
    }
    const std::string text = node_text(node);
    if (text.empty()) bad(name, "settings." + full, "expected a number, a boolean or a string");
    out.push_back({full, text, ""});
  }
}

const toml::node& require(const toml::table& table, const std::string& key,
                          const std::string& name) {
  const toml::node* node = table.get(key);
  if (!node) bad(name, key, "missing");
  return *node;
}

std::string require_string(const toml::table& table, const std::string& key,
                           const std::string& name) {
  const auto* value = require(table, key, name).as_string();
  if (!value) bad(name, key, "expected a string");
  return value->get();
}

const toml::table& require_table(const toml::table& table, const std::string& key,
                                 const std::string& name) {
  const auto* sub = require(table, key, name).as_table();
  if (!sub) bad(name, key, "expected a table");
  return *sub;
}

void read_losses(const toml::table& losses, const std::string& name, Reference& r) {
  const auto* steps = require(losses, "steps", name).as_array();
  if (!steps || steps->empty()) bad(name, "losses.steps", "expected a non-empty array of steps");
  for (const toml::node& node : *steps) {
    const auto* step = node.as_integer();
    if (!step || step->get() < 1 || (!r.steps.empty() && step->get() <= r.steps.back()))
      bad(name, "losses.steps", "expected increasing step numbers from 1");
    r.steps.push_back(step->get());
  }
  for (auto&& [key, node] : losses) {
    if (key.str() == "steps") continue;
    int stage = -1;
    for (int s = 0; s < kStages; ++s)
      if (key.str() == stage_key(s)) stage = s;
    const std::string where = "losses." + std::string(key.str());
    if (stage < 0) bad(name, where, "unknown key: expected steps, stage0, stage1, stage2, stage3");
    const auto* values = node.as_array();
    if (!values || values->size() != r.steps.size())
      bad(name, where, fmt::format("expected {} losses, one per step", r.steps.size()));
    ReferenceStage losses_of_stage{stage, {}};
    for (const toml::node& value : *values) {
      const std::optional<double> loss = value.value<double>();
      if (!loss || !std::isfinite(*loss) || *loss <= 0)
        bad(name, where, "expected positive finite losses");
      losses_of_stage.loss.push_back(*loss);
    }
    r.stages.push_back(losses_of_stage);
  }
  if (r.stages.empty()) bad(name, "losses", "no stage's losses (stage0 .. stage3)");
  std::sort(r.stages.begin(), r.stages.end(),
            [](const ReferenceStage& a, const ReferenceStage& b) { return a.stage < b.stage; });
}

}  // namespace

const ReferenceStage* Reference::find_stage(int stage) const {
  for (const ReferenceStage& s : stages)
    if (s.stage == stage) return &s;
  return nullptr;
}

std::string integer_setting_text(int64_t value) {
  return fmt::format("{}", value);
}

std::string float_setting_text(double value) {
  // Shortest text that reads back to the same double, with a '.' or an exponent so that TOML
  // reads it back as a float.
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

std::string bool_setting_text(bool value) {
  return value ? "true" : "false";
}

std::string string_setting_text(const std::string& value) {
  return quoted(value);
}

std::string format_reference(const Reference& r) {
  std::string out = header(r);
  out += fmt::format("format = {}\ndeck = {}\ncommand = {}\nbuild = {}\n", Reference::kFormat,
                     quoted(r.deck), quoted(r.command), quoted(r.build));
  out += "\n[settings]\n";
  for (const ReferenceSetting& s : r.settings) {
    const std::string line = fmt::format("{} = {}", s.key, s.value);
    out += s.note.empty() ? line + "\n" : fmt::format("{:<30}  # {}\n", line, s.note);
  }
  out += fmt::format("\n[tolerance]\nrelative = {}\n", float_setting_text(r.tolerance));
  out += fmt::format("\n[losses]\nsteps = {}\n", toml_array(r.steps));
  for (const ReferenceStage& s : r.stages)
    out += fmt::format("{} = {}\n", stage_key(s.stage), toml_array(s.loss));
  return out;
}

Reference parse_reference(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(name));
  } catch (const toml::parse_error& err) {
    fail("{}:{}:{}: TOML syntax error in the reference file: {}", name, err.source().begin.line,
         err.source().begin.column, err.description());
  }
  Reference r;
  const auto* format = require(root, "format", name).as_integer();
  if (!format || format->get() != Reference::kFormat)
    bad(name, "format",
        fmt::format("expected {}, the format this zeromini reads", Reference::kFormat));
  r.deck = require_string(root, "deck", name);
  r.command = require_string(root, "command", name);
  r.build = require_string(root, "build", name);
  read_settings(require_table(root, "settings", name), "", name, r.settings);
  const std::optional<double> tolerance =
      require(require_table(root, "tolerance", name), "relative", name).value<double>();
  if (!tolerance || !(*tolerance > 0 && *tolerance < 1))
    bad(name, "tolerance.relative", "expected a number between 0 and 1 (exclusive)");
  r.tolerance = *tolerance;
  read_losses(require_table(root, "losses", name), name, r);
  return r;
}

Reference read_reference(const std::string& path) {
  // Before the open, which would wait forever on a FIFO.
  require_regular_file(path, "reference file (--check-reference)");
  std::ifstream in(path);
  if (!in) fail("{}: cannot open the reference file (--check-reference; is it readable?)", path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_reference(text, path);
}

}  // namespace zm
