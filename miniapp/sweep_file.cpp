#include "sweep_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "core/regular_file.hpp"
#include "core/text.hpp"

namespace zm::cli {

namespace {

namespace fs = std::filesystem;

constexpr int64_t kMaxCount = 2147483647;  // nodes, ranks per node, repeat, steps, batches

// The keys of a sweep file's top level: the settings and tables, then the deck axes.
std::vector<std::string> top_keys() {
  std::vector<std::string> keys = {"name",           "description",  "deck",    "stages",  "nodes",
                                   "ranks_per_node", "models",       "repeat",  "repeats", "steps",
                                   "micro_batch",    "global_batch", "scaling", "set",     "slurm",
                                   "local"};
  for (const SweepAxis* axis : {&kShardAxis, &kRecomputeAxis, &kTpAxis, &kQuantizeWeightsAxis,
                                &kQuantizeGradsAxis, &kErrorFeedbackAxis})
    keys.push_back(axis->key);
  return keys;
}

using Entry = std::pair<const toml::key*, const toml::node*>;

// A table's entries in the file's order (toml++ keeps them sorted by key).
std::vector<Entry> in_file_order(const toml::table& table) {
  std::vector<Entry> entries;
  for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    const toml::source_position &x = a.first->source().begin, &y = b.first->source().begin;
    return std::tie(x.line, x.column) < std::tie(y.line, y.column);
  });
  return entries;
}

// A value as TOML writes it (strings in double quotes), for messages.
std::string shown(const toml::node& node) {
  if (const toml::value<std::string>* text = node.as_string()) return zm::quoted(text->get());
  std::ostringstream out;
  node.visit([&out](auto&& value) { out << value; });
  return out.str();
}

// The items of a value that may be one item or an array of them.
std::vector<const toml::node*> items(const toml::node& node) {
  std::vector<const toml::node*> out;
  if (const toml::array* array = node.as_array())
    for (const toml::node& item : *array) out.push_back(&item);
  else
    out.push_back(&node);
  return out;
}

class SweepReader {
 public:
  SweepReader(const std::string& path, const std::string& root) : path_(path), root_(root) {}
  Sweep read();

 private:
  std::string where(const toml::source_region& region) const {
    if (region.begin.line == 0) return path_;
    return fmt::format("{}:{}:{}", path_, region.begin.line, region.begin.column);
  }
  template <typename... Args>
  [[noreturn]] void error(const toml::node& at, fmt::format_string<Args...> format,
                          Args&&... args) const {
    fail("{}: {}", where(at.source()), fmt::format(format, std::forward<Args>(args)...));
  }

  void check_keys(const toml::table& table, const std::vector<std::string>& known,
                  const std::string& what) const;
  const toml::table& table(const toml::node* node, const std::string& key) const;
  std::string text(const toml::node& node, const std::string& key) const;
  std::vector<std::string> texts(const toml::node& node, const std::string& key) const;
  std::vector<std::string> overrides(const toml::node* node, const std::string& key) const;
  int64_t count(const toml::node& node, const std::string& key, bool in_list) const;
  std::vector<int64_t> counts(const toml::node& node, const std::string& key) const;
  std::vector<int> stages(const toml::node& node) const;
  std::vector<std::string> axis(const toml::table& top, const SweepAxis& spec) const;
  std::string resolve(const toml::node& node, const std::string& key) const;
  void read_top(const toml::table& top);
  void read_repeat(const toml::table& top);
  void read_scaling(const toml::table& top);
  void read_models(const toml::node* node);
  SweepModel read_model(const toml::node& node, size_t index) const;
  void read_slurm(const toml::node* node);
  void read_env(const toml::table& env);
  void read_local(const toml::node* node);

  std::string path_, root_;
  Sweep sweep_;
};

void SweepReader::check_keys(const toml::table& table, const std::vector<std::string>& known,
                             const std::string& what) const {
  for (const auto& [key, node] : in_file_order(table)) {
    if (std::find(known.begin(), known.end(), key->str()) != known.end()) continue;
    std::vector<std::string> sorted = known;
    std::sort(sorted.begin(), sorted.end());
    fail("{}: {}unknown key '{}' (known: {})", where(key->source()), what, key->str(),
         fmt::join(sorted, ", "));
  }
}

const toml::table& SweepReader::table(const toml::node* node, const std::string& key) const {
  static const toml::table empty;
  if (!node) return empty;
  if (!node->is_table()) error(*node, "{}: expected a table, found {}", key, shown(*node));
  return *node->as_table();
}

std::string SweepReader::text(const toml::node& node, const std::string& key) const {
  if (!node.is_string()) error(node, "{} = {}: expected a string", key, shown(node));
  return node.as_string()->get();
}

std::vector<std::string> SweepReader::texts(const toml::node& node, const std::string& key) const {
  std::vector<std::string> out;
  for (const toml::node* item : items(node)) {
    if (!item->is_string())
      error(*item, "{}: {} is not a string (expected a string or a list of strings)", key,
            shown(*item));
    out.push_back(item->as_string()->get());
  }
  return out;
}

std::vector<std::string> SweepReader::overrides(const toml::node* node,
                                                const std::string& key) const {
  if (!node) return {};
  std::vector<std::string> out = texts(*node, key);
  for (size_t i = 0; i < out.size(); ++i)
    if (!is_override(out[i]))
      error(*items(*node)[i], "{}: {} is not an override (section.key=value)", key,
            zm::quoted(out[i]));
  return out;
}

int64_t SweepReader::count(const toml::node& node, const std::string& key, bool in_list) const {
  const toml::value<int64_t>* value = node.as_integer();
  const std::string what =
      in_list ? fmt::format("{}: {}", key, shown(node)) : fmt::format("{} = {}", key, shown(node));
  if (!value || value->get() < 1)
    error(node, "{}: expected {}", what, in_list ? "integers >= 1" : "an integer >= 1");
  if (value->get() > kMaxCount) error(node, "{}: too large (at most {})", what, kMaxCount);
  return value->get();
}

std::vector<int64_t> SweepReader::counts(const toml::node& node, const std::string& key) const {
  std::vector<int64_t> out;
  for (const toml::node* item : items(node)) {
    const int64_t value = count(*item, key, true);
    if (std::find(out.begin(), out.end(), value) != out.end())
      error(*item, "{}: {} is listed twice", key, value);
    out.push_back(value);
  }
  if (out.empty()) error(node, "{}: expected integers >= 1, found an empty list", key);
  return out;
}

std::vector<int> SweepReader::stages(const toml::node& node) const {
  std::vector<int> out;
  for (const toml::node* item : items(node)) {
    const toml::value<int64_t>* number = item->as_integer();
    int stage = 0;
    if (number && number->get() >= 0 && number->get() <= 3)
      stage = static_cast<int>(number->get());
    else if (item->value<std::string>() == "all")
      stage = kAllStages;
    else
      error(*item, "stages: {} is not a ZeRO stage (0..3 or \"all\")", shown(*item));
    if (std::find(out.begin(), out.end(), stage) != out.end())
      error(*item, "stages: {} is listed twice", shown(*item));
    out.push_back(stage);
  }
  if (out.empty()) error(node, "stages: expected ZeRO stages (0..3 or \"all\"), found none");
  return out;
}

// A deck axis's values (one value or a list, none twice), spelt as --set takes them; none when
// the file does not give the key. Read after the models: no `set` may give the axis's deck key.
std::vector<std::string> SweepReader::axis(const toml::table& top, const SweepAxis& spec) const {
  const toml::node* node = top.get(spec.key);
  std::vector<std::string> out;
  if (!node) return out;
  for (const toml::node* item : items(*node)) {
    const toml::value<int64_t>* number = item->as_integer();
    const std::optional<std::string> word = item->value<std::string>();
    const bool valid = number
                           ? number->get() >= spec.min_integer && number->get() <= spec.max_integer
                       : !word ? item->is_boolean() && spec.booleans
                               : std::count(spec.words.begin(), spec.words.end(), *word) > 0;
    if (!valid) error(*item, "{}: {} is not {}", spec.key, shown(*item), spec.expected);
    const std::string value = word ? *word : shown(*item);
    if (std::find(out.begin(), out.end(), value) != out.end())
      error(*item, "{}: {} is listed twice", spec.key, shown(*item));
    out.push_back(value);
  }
  if (out.empty()) error(*node, "{}: expected {}, found an empty list", spec.key, spec.expected);
  const std::string set = override_of(sweep_, spec.deck_key);
  if (!set.empty())
    error(*node, "{}: {} is an axis here, so a set cannot give it too (found {})", spec.key,
          spec.deck_key, zm::quoted(set));
  return out;
}

// A path as given when absolute, else relative to the current directory, the sweep file's
// directory or the repository, the first where it exists.
std::string SweepReader::resolve(const toml::node& node, const std::string& key) const {
  const std::string name = text(node, key);
  if (fs::path(name).is_absolute()) return name;
  std::vector<fs::path> bases = {fs::current_path(), fs::absolute(path_).parent_path()};
  if (!root_.empty()) bases.push_back(fs::absolute(root_));
  for (const fs::path& base : bases) {
    std::error_code ignored;
    if (fs::exists(base / name, ignored)) return (base / name).lexically_normal().string();
  }
  error(node, "{} = {}: no such file (looked in the current directory, beside the sweep file{})",
        key, zm::quoted(name), root_.empty() ? "" : " and in " + fs::absolute(root_).string());
}

Sweep SweepReader::read() {
  toml::table top;
  require_regular_file(path_, "sweep file");  // before the open: a FIFO would block it
  try {
    top = toml::parse_file(path_);
  } catch (const toml::parse_error& err) {
    if (err.source().begin.line == 0)
      fail("{}: cannot read the sweep file: {}", path_, err.description());
    fail("{}: TOML syntax error: {}", where(err.source()), err.description());
  }
  check_keys(top, top_keys(), "");
  read_top(top);
  read_scaling(top);
  read_models(top.get("models"));
  sweep_.shard_sizes = axis(top, kShardAxis);
  sweep_.recompute = axis(top, kRecomputeAxis);
  sweep_.tp = axis(top, kTpAxis);
  sweep_.quantize_weights = axis(top, kQuantizeWeightsAxis);
  sweep_.quantize_grads = axis(top, kQuantizeGradsAxis);
  sweep_.error_feedback = axis(top, kErrorFeedbackAxis);
  read_slurm(top.get("slurm"));
  read_local(top.get("local"));
  check_sweep_size(sweep_, path_);
  return sweep_;
}

void SweepReader::read_top(const toml::table& top) {
  const toml::node* name = top.get("name");
  sweep_.name = name ? text(*name, "name") : fs::path(path_).stem().string();
  if (!is_name(sweep_.name, ".-"))
    fail("{}: name = {}{}: use letters, digits, '.', '_', '-'",
         name ? where(name->source()) : path_, zm::quoted(sweep_.name),
         name ? "" : " (the file's name)");
  const toml::node* deck = top.get("deck");
  if (!deck) fail("{}: deck: required (the input deck every point starts from)", path_);
  sweep_.deck = resolve(*deck, "deck");
  if (const toml::node* node = top.get("description"))
    sweep_.description = text(*node, "description");
  if (const toml::node* node = top.get("stages")) sweep_.stages = stages(*node);
  if (const toml::node* node = top.get("nodes")) sweep_.nodes = counts(*node, "nodes");
  if (const toml::node* node = top.get("ranks_per_node"))
    sweep_.ranks_per_node = counts(*node, "ranks_per_node");
  read_repeat(top);
  if (const toml::node* node = top.get("steps")) sweep_.steps = count(*node, "steps", false);
  sweep_.set = overrides(top.get("set"), "set");
}

// repeat = N, or its older spelling repeats = N; not both.
void SweepReader::read_repeat(const toml::table& top) {
  const toml::node* repeat = top.get("repeat");
  const toml::node* repeats = top.get("repeats");
  if (repeat && repeats) {
    const toml::source_position at = repeat->source().begin;
    error(*repeats,
          "repeats = {}: repeat = {} is given too (line {}); repeats is the older spelling of "
          "repeat, so give one of them",
          shown(*repeats), shown(*repeat), at.line);
  }
  if (repeat) sweep_.repeats = count(*repeat, "repeat", false);
  if (repeats) sweep_.repeats = count(*repeats, "repeats", false);
}

void SweepReader::read_scaling(const toml::table& top) {
  const toml::node* micro = top.get("micro_batch");
  const toml::node* global = top.get("global_batch");
  const toml::node* scaling = top.get("scaling");
  if (micro) sweep_.micro_batch = count(*micro, "micro_batch", false);
  if (global) sweep_.global_batch = count(*global, "global_batch", false);
  if (scaling) {
    sweep_.scaling = text(*scaling, "scaling");
    if (sweep_.scaling != "weak" && sweep_.scaling != "strong")
      error(*scaling,
            "scaling = {}: expected \"weak\" (fixed batch per rank) or \"strong\" (fixed global "
            "batch, global_batch = N)",
            shown(*scaling));
  }
  const bool strong = sweep_.scaling == "strong";
  if (strong && !global)
    error(*scaling,
          "scaling = \"strong\" needs global_batch (sequences per optimizer step, divided among "
          "the ranks)");
  if (!strong && global) error(*global, "global_batch is for scaling = \"strong\"");
  if (strong && micro)
    error(*micro,
          "micro_batch is for scaling = \"weak\"; with \"strong\" each rank gets global_batch / "
          "ranks sequences");
}

void SweepReader::read_models(const toml::node* node) {
  if (!node) {
    sweep_.models.push_back({"base", {}, sweep_.deck});
    return;
  }
  const toml::array* list = node->as_array();
  if (!list || list->empty())
    error(*node,
          "models: expected a list of tables, e.g. [{{name = \"small\", set = "
          "[\"model.layers=4\"]}}]");
  for (size_t i = 0; i < list->size(); ++i) sweep_.models.push_back(read_model(*list->get(i), i));
}

SweepModel SweepReader::read_model(const toml::node& node, size_t index) const {
  const std::string key = fmt::format("models[{}]", index);
  const toml::table* entry = node.as_table();
  const toml::node* name = entry ? entry->get("name") : nullptr;
  if (!name) error(node, "{}: expected a table with a name, e.g. {{name = \"small\"}}", key);
  check_keys(*entry, {"name", "set", "deck"}, key + ": ");
  SweepModel model;
  model.name = text(*name, key + ".name");
  if (!is_name(model.name, "."))
    error(*name,
          "{}.name = {}: use letters, digits, '.', '_' (no '-': it separates the parts of a "
          "point's name)",
          key, zm::quoted(model.name));
  for (const SweepModel& other : sweep_.models)
    if (other.name == model.name)
      error(*name, "{}.name = {}: the name is used twice", key, zm::quoted(model.name));
  model.set = overrides(entry->get("set"), key + ".set");
  const toml::node* deck = entry->get("deck");
  model.deck = deck ? resolve(*deck, key + ".deck") : sweep_.deck;
  return model;
}

void SweepReader::read_slurm(const toml::node* node) {
  const toml::table& slurm = table(node, "slurm");
  check_keys(slurm,
             {"partition", "time", "account", "qos", "constraint", "template", "launcher",
              "srun_mpi", "extra", "env"},
             "[slurm]: ");
  SweepSlurm& out = sweep_.slurm;
  const std::pair<const char*, std::string*> strings[] = {
      {"partition", &out.partition},   {"time", &out.time},
      {"account", &out.account},       {"qos", &out.qos},
      {"constraint", &out.constraint}, {"launcher", &out.launcher},
      {"srun_mpi", &out.srun_mpi}};
  for (const auto& [key, field] : strings)
    if (const toml::node* value = slurm.get(key))
      *field = text(*value, fmt::format("slurm.{}", key));
  if (out.launcher != "srun" && out.launcher != "mpiexec")
    error(*slurm.get("launcher"), "slurm.launcher = {}: expected \"srun\" or \"mpiexec\"",
          zm::quoted(out.launcher));
  if (const toml::node* value = slurm.get("template"))
    out.job_template = resolve(*value, "slurm.template");
  else if (!root_.empty())
    out.job_template =
        (fs::absolute(root_) / "scripts/slurm/zeromini.sbatch").lexically_normal().string();
  if (const toml::node* value = slurm.get("extra")) out.extra = texts(*value, "slurm.extra");
  read_env(table(slurm.get("env"), "slurm.env"));
}

void SweepReader::read_env(const toml::table& env) {
  for (const auto& [key, node] : in_file_order(env)) {
    const std::string name(key->str());
    if (!is_variable_name(name))
      fail("{}: slurm.env: '{}' is not an environment variable name", where(key->source()), name);
    if (!node->is_string() && !node->is_integer())
      error(*node, "slurm.env.{} = {}: expected a string", name, shown(*node));
    const std::string value =
        node->is_string() ? node->as_string()->get() : std::to_string(node->as_integer()->get());
    sweep_.slurm.env.emplace_back(name, value);
  }
}

void SweepReader::read_local(const toml::node* node) {
  const toml::table& local = table(node, "local");
  check_keys(local, {"launcher"}, "[local]: ");
  if (const toml::node* launcher = local.get("launcher")) {
    sweep_.local_launcher = text(*launcher, "local.launcher");
    if (sweep_.local_launcher != "mpiexec" && sweep_.local_launcher != "srun")
      error(*launcher,
            "local.launcher = {}: expected \"mpiexec\" or \"srun\" (inside an allocation)",
            zm::quoted(sweep_.local_launcher));
  }
}

}  // namespace

Sweep read_sweep(const std::string& path, const std::string& root) {
  return SweepReader(path, root).read();
}

}  // namespace zm::cli
