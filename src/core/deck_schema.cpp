#include "core/deck_schema.hpp"

#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace zm::deck_detail {

static std::string format_number(double value) {
  // Shortest text that reads back to the same double, always with a '.' or exponent so that
  // TOML reads it back as a float.
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

KeySpec key_spec(std::string section, std::string key, Kind kind, std::string doc) {
  KeySpec s;
  s.section = std::move(section);
  s.key = std::move(key);
  s.kind = kind;
  s.doc = std::move(doc);
  return s;
}

KeySpec bounded(KeySpec spec, double min, bool min_exclusive, double max, bool max_exclusive) {
  spec.min = min;
  spec.min_exclusive = min_exclusive;
  spec.max = max;
  spec.max_exclusive = max_exclusive;
  return spec;
}

ModuleValue typed_value(Kind kind, const RawValue& v) {
  switch (kind) {
    case Kind::Integer:
      return v.integer;
    case Kind::Float:
      return v.type == RawValue::Type::Integer ? static_cast<double>(v.integer) : v.number;
    case Kind::Boolean:
      return v.boolean;
    case Kind::ShardSize:
      return v.type == RawValue::Type::String ? kShardSizeNode : v.integer;
    case Kind::Custom:
      return v.type == RawValue::Type::Integer ? std::to_string(v.integer) : v.text;
    default:
      return v.text;
  }
}

std::string toml_text(Kind kind, const ModuleValue& value) {
  if (const int64_t* i = std::get_if<int64_t>(&value))
    return kind == Kind::ShardSize && *i == kShardSizeNode ? "\"node\"" : fmt::format("{}", *i);
  if (const double* x = std::get_if<double>(&value)) return format_number(*x);
  if (const bool* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return quoted(std::get<std::string>(value));
}

namespace {

// No bound below the type's own: INT64_MAX as a double (2^63), so that every int64 passes.
constexpr double kNoMax = static_cast<double>(std::numeric_limits<int64_t>::max());

// A key stored in member `mem` of the deck's section `sec`.
template <typename Section, typename Member>
KeySpec field(std::string section, std::string key, Kind kind, Section Deck::*sec,
              Member Section::*mem, std::string doc) {
  KeySpec s = key_spec(std::move(section), std::move(key), kind, std::move(doc));
  s.set = [kind, sec, mem](Deck& d, const RawValue& v) {
    d.*sec.*mem = std::get<Member>(typed_value(kind, v));
  };
  s.get = [kind, sec, mem](const Deck& d) { return toml_text(kind, d.*sec.*mem); };
  return s;
}

template <typename Section>
KeySpec make_int(std::string section, std::string key, Section Deck::*sec, int64_t Section::*mem,
                 double lo, double hi, std::string doc) {
  return bounded(field(std::move(section), std::move(key), Kind::Integer, sec, mem, std::move(doc)),
                 lo, false, hi, false);
}

template <typename Section>
KeySpec make_float(std::string section, std::string key, Section Deck::*sec, double Section::*mem,
                   double lo, bool lo_excl, double hi, bool hi_excl, std::string doc) {
  return bounded(field(std::move(section), std::move(key), Kind::Float, sec, mem, std::move(doc)),
                 lo, lo_excl, hi, hi_excl);
}

template <typename Section>
KeySpec make_string(std::string section, std::string key, Section Deck::*sec,
                    std::string Section::*mem, std::vector<std::string> choices, std::string doc) {
  KeySpec s = field(std::move(section), std::move(key),
                    choices.empty() ? Kind::String : Kind::Choice, sec, mem, std::move(doc));
  s.choices = std::move(choices);
  return s;
}

void add_model_keys(std::vector<KeySpec>& s) {
  s.push_back(make_int("model", "layers", &Deck::model, &ModelConfig::layers, 1, 100000,
                       "transformer blocks"));
  s.push_back(make_int("model", "heads", &Deck::model, &ModelConfig::heads, 1, 100000,
                       "attention heads (must divide dim)"));
  s.push_back(make_int("model", "dim", &Deck::model, &ModelConfig::dim, 1, 1048576,
                       "embedding (hidden) size"));
  s.push_back(make_int("model", "vocab", &Deck::model, &ModelConfig::vocab, 2, 16777216,
                       "vocabulary size (padded to a multiple of 128 internally)"));
  s.push_back(make_int("model", "seq_len", &Deck::model, &ModelConfig::seq_len, 1, 1048576,
                       "tokens per sequence (and learned positions)"));
  s.push_back(make_string("model", "recompute", &Deck::model, &ModelConfig::recompute,
                          {"none", "blocks"},
                          "activation recomputation: \"blocks\" keeps only each block's input "
                          "and recomputes its forward in backward (same gradients, less memory)"));
  s.push_back(make_int("model", "classifier_chunk", &Deck::model, &ModelConfig::classifier_chunk, 0,
                       kNoMax,
                       "tokens per chunk of the LM head (logits, loss and their gradient made "
                       "chunk by chunk); 0 = all logits of a micro-batch at once"));
  s.push_back(make_int("model", "tiles", &Deck::model, &ModelConfig::tiles, 1, kNoMax,
                       "memory-centric tiling: each linear layer of a block cut into this many "
                       "tiles along its output, gathered (stage 3) and computed one at a time "
                       "(must divide dim); 1 = a block at once"));
}

void add_train_keys(std::vector<KeySpec>& s) {
  const double inf = std::numeric_limits<double>::max();
  s.push_back(make_int("train", "micro_batch", &Deck::train, &TrainConfig::micro_batch, 1, 1048576,
                       "sequences per rank per micro-step"));
  s.push_back(make_int("train", "grad_accum", &Deck::train, &TrainConfig::grad_accum, 1, 1048576,
                       "micro-steps accumulated per optimizer step"));
  s.push_back(make_int("train", "steps", &Deck::train, &TrainConfig::steps, 0, 1e9,
                       "optimizer steps to run"));
  s.push_back(make_float("train", "lr", &Deck::train, &TrainConfig::lr, 0, false, 10, false,
                         "peak learning rate"));
  s.push_back(make_float("train", "min_lr_ratio", &Deck::train, &TrainConfig::min_lr_ratio, 0,
                         false, 1, false, "cosine-decay floor, as a fraction of lr"));
  s.push_back(make_int("train", "warmup", &Deck::train, &TrainConfig::warmup, 0, 1e9,
                       "linear warm-up steps"));
  s.push_back(make_float("train", "weight_decay", &Deck::train, &TrainConfig::weight_decay, 0,
                         false, 10, false, "AdamW decoupled weight decay (matrices only)"));
  s.push_back(make_float("train", "grad_clip", &Deck::train, &TrainConfig::grad_clip, 0, false, inf,
                         false, "global gradient-norm clip; 0 = off"));
  s.push_back(make_float("train", "beta1", &Deck::train, &TrainConfig::beta1, 0, false, 1, true,
                         "Adam first-moment decay"));
  s.push_back(make_float("train", "beta2", &Deck::train, &TrainConfig::beta2, 0, false, 1, true,
                         "Adam second-moment decay"));
  s.push_back(make_float("train", "eps", &Deck::train, &TrainConfig::eps, 0, true, 1, false,
                         "Adam epsilon"));
  s.push_back(make_int("train", "seed", &Deck::train, &TrainConfig::seed, 0, kNoMax,
                       "seed of parameter initialisation and synthetic data"));
  KeySpec precision = key_spec("train", "precision", Kind::Choice,
                               "fp32; tf32 (TF32 tensor-core GEMMs); bf16 (mixed, fp32 master)");
  precision.choices = {"fp32", "tf32", "bf16"};
  // The schema's choices checked the text before this runs.
  precision.set = [](Deck& d, const RawValue& v) { parse_precision(v.text, d.train.precision); };
  precision.get = [](const Deck& d) { return quoted(precision_name(d.train.precision)); };
  s.push_back(precision);
  KeySpec reduce = key_spec("train", "reduce_precision", Kind::Choice,
                            "type of the cross-rank gradient sums: compute (that of "
                            "train.precision) or fp32 (bf16 backward, fp32 reduction and AdamW "
                            "gradients)");
  reduce.choices = {"compute", "fp32"};
  reduce.set = [](Deck& d, const RawValue& v) {
    parse_reduce_precision(v.text, d.train.reduce_precision);
  };
  reduce.get = [](const Deck& d) {
    return quoted(reduce_precision_name(d.train.reduce_precision));
  };
  s.push_back(reduce);
  s.push_back(make_string("train", "resume", &Deck::train, &TrainConfig::resume, {},
                          "\"\" (fresh start), \"latest\" (newest checkpoint in output.dir, if "
                          "any) or a checkpoint path"));
  s.back().allow_empty = true;
}

void add_comm_keys(std::vector<KeySpec>& s) {
  s.push_back(make_string("comm", "backend", &Deck::comm, &CommConfig::backend,
                          {"mpi", "nccl", "auto"},
                          "collectives library; auto = nccl in CUDA builds, else mpi"));
  s.push_back(make_float("comm", "timeout_s", &Deck::comm, &CommConfig::timeout_s, 0, true, 1e7,
                         false,
                         "watchdog: seconds one collective may wait before the job is aborted "
                         "with the operation and the ranks still missing"));
}

void add_zero_keys(std::vector<KeySpec>& s) {
  KeySpec stage = key_spec("zero", "stage", Kind::Stage,
                           "ZeRO stage 0..3, or \"all\" to run the four one after another");
  stage.set = [](Deck& d, const RawValue& v) {
    d.zero.all_stages = v.type == RawValue::Type::String;
    d.zero.stage = d.zero.all_stages ? 0 : static_cast<int>(v.integer);
  };
  stage.get = [](const Deck& d) {
    return d.zero.all_stages ? std::string("\"all\"") : fmt::format("{}", d.zero.stage);
  };
  s.push_back(stage);
  s.push_back(make_float("zero", "bucket_mb", &Deck::zero, &ZeroConfig::bucket_mb, 0, true, 65536,
                         false, "stage 0: MiB of gradients per all-reduce bucket"));
  s.push_back(field("zero", "overlap", Kind::Boolean, &Deck::zero, &ZeroConfig::overlap,
                    "overlap collectives with compute"));
  s.push_back(make_int("zero", "prefetch", &Deck::zero, &ZeroConfig::prefetch, 0, 64,
                       "stage 3: units gathered ahead of use"));
  s.push_back(
      field("zero", "shard_size", Kind::ShardSize, &Deck::zero, &ZeroConfig::shard_size,
            "stages 1-3: consecutive ranks that share one copy of the sharded model states (hybrid "
            "sharding); 0 = all ranks, \"node\" = the ranks of a node"));
  s.push_back(make_int("zero", "ranks_per_node", &Deck::zero, &ZeroConfig::ranks_per_node, 0, 1e6,
                       "ranks per node for \"node\" shard sizes and the cross-node byte counts; "
                       "0 = the MPI shared-memory split (set it to treat groups of ranks as "
                       "nodes, e.g. in tests)"));
}

void add_data_and_output_keys(std::vector<KeySpec>& s) {
  // [data]
  s.push_back(make_string("data", "source", &Deck::data, &DataConfig::source, {},
                          "\"synthetic\" or the path of a data file (a module reads it)"));
  // [output]
  s.push_back(make_string("output", "dir", &Deck::output, &OutputConfig::dir, {},
                          "directory for results and checkpoints (--out overrides)"));
  s.push_back(make_int("output", "checkpoint_every", &Deck::output, &OutputConfig::checkpoint_every,
                       0, 1e9, "steps between checkpoints; 0 = none"));
  s.push_back(make_int("output", "keep", &Deck::output, &OutputConfig::keep, 1, 1000000,
                       "checkpoints kept on disk"));
  s.push_back(make_int("output", "log_every", &Deck::output, &OutputConfig::log_every, 1, 1e9,
                       "steps between progress lines"));
  s.push_back(make_int("output", "results_every", &Deck::output, &OutputConfig::results_every, 1,
                       1e9, "steps between rewrites of results.h5 (and at the end)"));
  s.push_back(field("output", "overwrite", Kind::Boolean, &Deck::output, &OutputConfig::overwrite,
                    "a fresh run (no train.resume) may replace the checkpoints of another run "
                    "in output.dir; otherwise it is refused"));
}

// Every core key, in the order `zeromini schema` lists them.
std::vector<KeySpec> build_schema() {
  std::vector<KeySpec> s;
  add_model_keys(s);
  add_train_keys(s);
  add_zero_keys(s);
  add_comm_keys(s);
  add_data_and_output_keys(s);
  return s;
}

std::vector<KeySpec>& table() {
  static std::vector<KeySpec> keys = build_schema();
  return keys;
}

std::vector<std::string>& section_names() {
  static std::vector<std::string> names = {"model", "train", "zero", "comm", "data", "output"};
  return names;
}

}  // namespace

const std::vector<KeySpec>& schema() {
  return table();
}

const std::vector<std::string>& sections() {
  return section_names();
}

void add_keys(const std::vector<KeySpec>& keys) {
  std::vector<KeySpec>& all = table();
  for (const KeySpec& key : keys) {
    auto last_of_section = all.end();
    for (auto it = all.begin(); it != all.end(); ++it)
      if (it->section == key.section) last_of_section = it + 1;
    all.insert(last_of_section, key);
    std::vector<std::string>& names = section_names();
    if (std::find(names.begin(), names.end(), key.section) == names.end())
      names.push_back(key.section);
  }
}

}  // namespace zm::deck_detail
