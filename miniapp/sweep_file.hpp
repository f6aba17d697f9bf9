// Sweep files: the scaling studies that scripts/sweep.py runs (inputs/sweeps/*.toml), read with
// toml++, checked, and expanded into their points (one job each).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zm::cli {

inline constexpr int kAllStages = -1;  // stage "all": the four stages in one run

struct SweepModel {
  std::string name;
  std::vector<std::string> set;  // deck overrides, section.key=value
  std::string deck;              // absolute path
};

struct SweepSlurm {
  std::string partition, time = "00:30:00", account, qos, constraint;
  std::string job_template;  // absolute path; empty: the default (no --root given)
  std::string launcher = "srun", srun_mpi;
  std::vector<std::string> extra;                        // more #SBATCH lines
  std::vector<std::pair<std::string, std::string>> env;  // in the file's order
};

// A deck axis of sweep files: the file's key, the deck key each value sets, what it takes.
struct SweepAxis {
  const char *key, *deck_key, *expected;
  int64_t max_integer;             // the integers min_integer..max_integer (none when -1)
  std::vector<std::string> words;  // and these strings
  int64_t min_integer = 0;
  bool booleans = false;  // true and false (spelt "true", "false")
};
extern const SweepAxis kShardAxis;            // shard_sizes: zero.shard_size
extern const SweepAxis kRecomputeAxis;        // recompute: model.recompute
extern const SweepAxis kTpAxis;               // tp: parallel.tp
extern const SweepAxis kQuantizeWeightsAxis;  // quantize_weights: zero.quantize_weights
extern const SweepAxis kQuantizeGradsAxis;    // quantize_grads: zero.quantize_grads
extern const SweepAxis kErrorFeedbackAxis;    // error_feedback: zero.error_feedback

struct Sweep {
  std::string name, deck, description;
  std::vector<int> stages = {0, 1, 2, 3};  // 0..3 or kAllStages
  std::vector<int64_t> nodes = {1}, ranks_per_node = {1};
  int64_t repeats = 1;  // the file's repeat = N (or its older spelling, repeats = N)
  std::optional<int64_t> steps, micro_batch, global_batch;
  std::string scaling = "weak";  // or "strong"
  std::vector<std::string> set;  // overrides for every point
  // Deck axes; empty: not an axis (the deck's value, and no part in the points' names).
  std::vector<std::string> shard_sizes;       // zero.shard_size: "0" (all ranks), "2", ..., "node"
  std::vector<std::string> recompute;         // model.recompute: "none", "blocks"
  std::vector<std::string> tp;                // parallel.tp: "1", "2", ...
  std::vector<std::string> quantize_weights;  // zero.quantize_weights: "none", "int8"
  std::vector<std::string> quantize_grads;    // zero.quantize_grads: "none", "int8", "int4"
  std::vector<std::string> error_feedback;    // zero.error_feedback: "false", "true"
  std::vector<SweepModel> models;
  SweepSlurm slurm;
  std::string local_launcher = "mpiexec";
};

struct SweepPoint {
  // <sweep>-s<stage>-n<nodes>x<ranks per node>-<model>[-shard<size>][-rc<recompute>][-tp<tp>]
  // [-qw<quantize_weights>][-qg<quantize_grads>][-ef<error_feedback>]-r<repeat>, the bracketed
  // parts for the axes the sweep file gives
  std::string name;
  const SweepModel* model = nullptr;
  int stage = 0;
  int64_t nodes = 1, ranks_per_node = 1, ranks = 1, repeat = 0;
  // The deck axes' values; empty where the sweep has none.
  std::string shard_size, recompute, tp, quantize_weights, quantize_grads, error_feedback;
  std::optional<int64_t> micro_batch;
  // model's, sweep's, then zero.stage, the deck axes (zero.shard_size, model.recompute,
  // parallel.tp, zero.quantize_weights, zero.quantize_grads, zero.error_feedback), steps,
  // micro_batch
  std::vector<std::string> overrides;
  std::string problem;  // why the point cannot run; empty when it can
};

// Reads and checks a sweep file; errors (zm::Error) name the file, line, key and what was
// expected. Relative paths (deck, models' decks, slurm.template) are looked up in the current
// directory, beside the sweep file, then in `root` (the repository) when it is not empty; the
// Slurm template defaults to <root>/scripts/slurm/zeromini.sbatch.
Sweep read_sweep(const std::string& path, const std::string& root);

// The points, in scripts/sweep.py's order: in alternating rounds, repeat 0 of every point, then
// repeat 1 of every point, and so on (so that a slow spell of the machine does not fall on the
// repeats of one point alone); within a round by model, nodes, ranks per node, stage, shard size,
// recompute, tp, quantize_weights, quantize_grads, error_feedback.
std::vector<SweepPoint> expand_sweep(const Sweep& sweep);

std::string stage_name(int stage);  // "0".."3" or "all"

// Checks that need no TOML (sweep_points.cpp), for read_sweep.
bool is_override(const std::string& text);       // section.key=value, as --set takes it
bool is_variable_name(const std::string& text);  // an environment variable's name
// Letters, digits, '_' and the characters of `punctuation`; not empty.
bool is_name(const std::string& text, const std::string& punctuation);
// The first of the sweep's and its models' overrides that sets `deck_key`; empty if none.
std::string override_of(const Sweep& sweep, const std::string& deck_key);
// Fails, naming `path`, when the sweep has more points than a study should.
void check_sweep_size(const Sweep& sweep, const std::string& path);

}  // namespace zm::cli
