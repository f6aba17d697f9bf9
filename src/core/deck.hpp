// The input deck: a TOML file with the sections [model] [train] [zero] [comm] [data] [output] and
// those the modules' keys add (core/deck_keys.hpp). The schema (deck_schema.cpp) describes every
// key once; parsing, `--set section.key=value`, the resolved deck and `zeromini schema` all read
// it, so that they cannot disagree.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/precision.hpp"

namespace zm {

struct ModelConfig {
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t dim = 64;
  int64_t vocab = 256;   // the real vocabulary; the GEMMs use padded_vocab()
  int64_t seq_len = 64;  // also the number of learned positions
  // "blocks": forward keeps only each block's input and backward recomputes the block's forward;
  // "none" keeps every activation.
  std::string recompute = "none";
  // Tokens per chunk of the LM head, so that only chunk x Vp logits exist at once
  // (kernels/crossentropy.hpp); 0: the whole micro-batch's.
  int64_t classifier_chunk = 1024;
  // Memory-centric tiling: each linear layer of a block cut into this many tiles along its
  // output, each tile its own unit (model/layout.hpp), so that stage 3 gathers one tile at a
  // time; 1: a block is one unit.
  int64_t tiles = 1;

  // Vocabulary rounded up to a multiple of 128 so that the LM-head GEMM has friendly sizes.
  int64_t padded_vocab() const { return (vocab + 127) / 128 * 128; }
  int64_t head_dim() const { return dim / heads; }
  bool recomputes_blocks() const { return recompute == "blocks"; }
  bool chunked_classifier() const { return classifier_chunk > 0; }
  // The rows of logits that exist at once for micro-batches of `tokens` tokens.
  int64_t classifier_rows(int64_t tokens) const {
    return classifier_chunk > 0 && classifier_chunk < tokens ? classifier_chunk : tokens;
  }
};

struct TrainConfig {
  int64_t micro_batch = 4;  // sequences per rank per micro-step
  int64_t grad_accum = 1;   // micro-steps per optimizer step
  int64_t steps = 10;
  double lr = 3e-4;           // peak learning rate
  double min_lr_ratio = 0.1;  // cosine decay floor as a fraction of lr
  int64_t warmup = 0;         // linear warm-up steps
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // global-norm clip; 0 switches clipping off
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  int64_t seed = 1337;
  Precision precision = Precision::FP32;  // the shorthand that fills policy()
  ReducePrecision reduce_precision = ReducePrecision::Compute;
  std::string resume;  // "" | "latest" | a checkpoint path

  PrecisionPolicy policy() const { return make_precision_policy(precision, reduce_precision); }
};

// zero.shard_size = "node".
constexpr int64_t kShardSizeNode = -1;

struct ZeroConfig {
  int stage = 0;            // 0..3
  bool all_stages = false;  // stage = "all": run 0,1,2,3 one after another and compare
  double bucket_mb = 25.0;  // gradient bucket size for stage 0 all-reduce
  bool overlap = true;      // overlap collectives with compute
  int64_t prefetch = 1;     // stage 3: units gathered ahead of use
  // Hybrid sharding: consecutive ranks sharing one copy of the sharded states (stages 1-3).
  int64_t shard_size = 0;      // 0 = all ranks; kShardSizeNode = the ranks of a node
  int64_t ranks_per_node = 0;  // what "node" means; 0 = the MPI shared-memory split
};

struct CommConfig {
  std::string backend = "auto";  // mpi | nccl | auto
  double timeout_s = 300.0;      // watchdog: longest wait for one collective before aborting
};

struct DataConfig {
  std::string source = "synthetic";  // "synthetic" or the path of a data file (train/data.hpp)
};

struct OutputConfig {
  std::string dir = "zeromini-out";
  int64_t checkpoint_every = 0;  // steps between checkpoints; 0 = none
  int64_t keep = 2;              // checkpoints kept on disk
  int64_t log_every = 1;         // steps between progress lines
  int64_t results_every = 10;    // steps between rewrites of results.h5
  bool overwrite = false;        // a fresh run may replace another run's checkpoints in dir
};

// The value of a key a module owns (core/deck_keys.hpp), kept by full name.
using ModuleValue = std::variant<int64_t, double, bool, std::string>;

struct Deck {
  ModelConfig model;
  TrainConfig train;
  ZeroConfig zero;
  CommConfig comm;
  DataConfig data;
  OutputConfig output;

  std::string path;  // where it was read from ("<string>" for decks built in memory)
  // For every key that was set explicitly: "file:line" or "--set"; keys absent here are defaults.
  std::map<std::string, std::string> origin;
  // The module keys that were set, by full name ("section.key").
  std::map<std::string, ModuleValue> module_values;

  // Module key `full_name`'s value, its default when unset. T is the key's type: int64_t, double,
  // bool or std::string (a key not registered, or another type, is a programming error).
  template <typename T>
  T value(const std::string& full_name) const;
  // Sets module key `full_name` as a program would (a planner's variation of a deck): no origin.
  void set_value(const std::string& full_name, ModuleValue value);

  // Where `key` was set ("file:line", "--set section.key=value"), or "<path> (default)": the
  // start of every message about that key.
  std::string where(const std::string& key) const;

  // The deck with every default filled in, as TOML (deck.toml, results.h5, checkpoints,
  // `run --print-deck`).
  std::string resolved_toml() const;
  // The stages this run trains: {stage} or {0,1,2,3} for stage = "all".
  std::vector<int> stages() const;
};

// Whether the checks that depend on this build (nccl needs NCCL, bf16 needs Kokkos >= 4) apply:
// a run needs them; the planner, which may plan for another machine, does not.
enum class BuildChecks { Apply, Skip };

// Reads a deck file and applies overrides ("section.key=value"). Throws zm::Error naming the
// file, line, key, value found and what was expected.
Deck load_deck(const std::string& path, const std::vector<std::string>& overrides = {},
               BuildChecks build_checks = BuildChecks::Apply);
// The same from TOML text; `name` is used in messages in place of a file name.
Deck parse_deck(const std::string& toml_text, const std::string& name,
                const std::vector<std::string>& overrides = {},
                BuildChecks build_checks = BuildChecks::Apply);

// Facts about the build that some checks need (e.g. nccl only in a CUDA build).
struct BuildFeatures {
  bool nccl = false;
  bool bf16 = false;
  bool cuda = false;
  std::string kokkos_version;
};
BuildFeatures build_features();

// One line per key: section.key, type, default, allowed values, meaning (for `zeromini schema`).
std::string describe_schema();

}  // namespace zm
