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

struct Sweep {
  std::string name, deck, description;
  std::vector<int> stages = {0, 1, 2, 3};  // 0..3 or kAllStages
  std::vector<int64_t> nodes = {1}, ranks_per_node = {1};
  int64_t repeats = 1;
  std::optional<int64_t> steps, micro_batch, global_batch;
  std::string scaling = "weak";  // or "strong"
  std::vector<std::string> set;  // overrides for every point
  std::vector<SweepModel> models;
  SweepSlurm slurm;
  std::string local_launcher = "mpiexec";
};

struct SweepPoint {
  std::string name;  // <sweep>-s<stage>-n<nodes>x<ranks per node>-<model>-r<repeat>
  const SweepModel* model = nullptr;
  int stage = 0;
  int64_t nodes = 1, ranks_per_node = 1, ranks = 1, repeat = 0;
  std::optional<int64_t> micro_batch;
  std::vector<std::string> overrides;  // model's, sweep's, then zero.stage, steps, micro_batch
  std::string problem;                 // why the point cannot run; empty when it can
};

// Reads and checks a sweep file; errors (zm::Error) name the file, line, key and what was
// expected. Relative paths (deck, models' decks, slurm.template) are looked up in the current
// directory, beside the sweep file, then in `root` (the repository) when it is not empty; the
// Slurm template defaults to <root>/scripts/slurm/zeromini.sbatch.
Sweep read_sweep(const std::string& path, const std::string& root);

// The points, in scripts/sweep.py's order: model, nodes, ranks per node, stage, repeat.
std::vector<SweepPoint> expand_sweep(const Sweep& sweep);

std::string stage_name(int stage);  // "0".."3" or "all"

}  // namespace zm::cli
