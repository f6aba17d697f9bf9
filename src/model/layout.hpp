// The parameter layout: one flat buffer, laid out by unit.
//
//   unit 0        embeddings: wte (Vp x C), wpe (T x C)
//   units 1..L    transformer block l-1: ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b,
//                 ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b
//   unit L+1      final LayerNorm: lnf_w, lnf_b
//
// Each unit is one contiguous range and each tensor a range inside its unit. Gradients, Adam
// moments and checkpoints use the same layout. ZeRO partitions units (src/zero/partition.hpp);
// the offsets here are *logical*: units packed without partition padding.
//
// Under tensor parallelism (parallel.tp) a rank's layout holds its slice of every tensor
// (TpSplit): the same units and tensors, with the split dimension divided by tp. Each tensor
// remembers where it sits in the whole model's layout (tp = 1), so that initialisation (by global
// index) and checkpoints (always the whole model) see the same numbers at any tp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"

namespace zm {

enum class InitKind { Normal, NormalResidual, Ones, Zeros };

// How tensor parallelism cuts a tensor of shape (rows, width) (1-D: width 1), Megatron's way.
enum class TpSplit {
  Replicated,  // LayerNorms, wpe, the row-parallel layers' biases
  Rows,        // column-parallel weights and biases (c_fc), the vocabulary-parallel wte
  QkvRows,     // c_attn: q, k and v (C rows each) each cut by rows, so that heads stay whole
  Columns,     // row-parallel weights (attn.c_proj, mlp.c_proj): the input dimension
};

struct TensorInfo {
  std::string name;  // GPT-2 / Hugging Face style, e.g. "h.3.attn.c_attn.weight"
  int unit = 0;
  int64_t offset = 0;  // within its unit
  int64_t size = 0;
  std::vector<int64_t> shape;  // row-major; weights are (out, in) as nn.Linear; this rank's slice
  TpSplit split = TpSplit::Replicated;
  std::vector<int64_t> global_shape;  // the whole tensor (= shape at tp = 1)
  int64_t global_offset = 0;          // within its unit, in the whole model's layout
  bool decay = false;                 // AdamW weight decay applies (matrices and embeddings)
  InitKind init = InitKind::Zeros;
};

// Whether every rank of a tp group holds tensor t alike (whole): what is derived from it once per
// group (its share of the gradient norm, its copy in a checkpoint) is counted by the rank that
// counts_tp_replicas. The one answer for the norm, the loss, checkpoints and the planner.
inline bool replicated_over_tp(const TensorInfo& t) {
  return t.split == TpSplit::Replicated;
}
// Whether the rank at `tp_rank` of its tp group counts what the group's ranks hold alike (the
// tensors replicated_over_tp, the loss, a row-parallel layer's bias): its first rank.
inline bool counts_tp_replicas(int tp_rank) {
  return tp_rank == 0;
}

struct UnitInfo {
  std::string name;    // "embeddings", "block.0", ..., "final_norm"
  int64_t offset = 0;  // logical offset in the flat buffer
  int64_t size = 0;
  int64_t global_offset = 0;  // the same in the whole model's layout (tp = 1)
  int64_t global_size = 0;
  std::vector<int> tensors;  // indices into ParamLayout::tensors()
};

// Offsets of a block's tensors relative to the start of its unit (the same for every block).
struct BlockOffsets {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b;
  int64_t ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

// A contiguous stretch of a tensor slice and where it lies in the whole tensor.
struct TpRun {
  int64_t local = 0;   // offset in the slice
  int64_t global = 0;  // offset in the whole tensor
  int64_t length = 0;
};
// The runs covering [begin, end) of the slice that tp rank `tp_rank` of `tp` holds.
std::vector<TpRun> tp_runs(const TensorInfo& t, int tp, int tp_rank, int64_t begin, int64_t end);

class ParamLayout {
 public:
  // The layout of one tensor-parallel rank's slices (tp = 1: the whole model); tp must divide
  // the heads, 4 x dim and the padded vocabulary (the deck checks it).
  explicit ParamLayout(const ModelConfig& config, int tp = 1);

  const ModelConfig& config() const { return config_; }
  int tp() const { return tp_; }
  int num_units() const { return static_cast<int>(units_.size()); }
  int embedding_unit() const { return 0; }
  int block_unit(int layer) const { return 1 + layer; }
  int final_norm_unit() const { return num_units() - 1; }
  const UnitInfo& unit(int u) const { return units_[static_cast<size_t>(u)]; }
  const std::vector<UnitInfo>& units() const { return units_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // Elements in the flat buffer (padded vocabulary, no partition padding; this rank's slices).
  int64_t total() const { return total_; }
  int64_t global_total() const { return global_total_; }
  // Parameters of the model with the real vocabulary (what GPT-2 papers report).
  int64_t real_param_count() const;

  // Within the embedding unit (wte: this rank's vocab_rows() rows from vocab_begin()).
  int64_t wte_offset() const { return 0; }
  int64_t wpe_offset() const { return vocab_rows() * config_.dim; }
  int64_t vocab_rows() const { return config_.padded_vocab() / tp_; }
  // Within a block unit; within the final-norm unit lnf_w is at 0 and lnf_b at C.
  const BlockOffsets& block() const { return block_; }

 private:
  void add_unit(const std::string& name);
  void add_tensor(const std::string& name, std::vector<int64_t> shape, TpSplit split, bool decay,
                  InitKind init);

  ModelConfig config_;
  int tp_ = 1;
  int64_t global_total_ = 0;
  std::vector<UnitInfo> units_;
  std::vector<TensorInfo> tensors_;
  BlockOffsets block_{};
  int64_t total_ = 0;
};

}  // namespace zm
