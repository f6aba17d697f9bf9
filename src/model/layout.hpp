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
// Under model.tiles = T (memory-centric tiling) a block is 4 T units instead, cut where its
// forward moves on (model/gpt.cpp): each of its four weights in T tiles of rows, the small tensors
// before a weight with its first tile, the last bias with the last tile. The flat order stays, so
// a tensor may then span several units, and a checkpoint keeps one dataset per block (`dataset`).
//
// Under model parallelism (model/model_parallel.hpp) the model is held in slices: a rank's layout
// holds its slice of every tensor the scheme cuts (TensorCut): the same units and tensors, with the
// cut dimension divided by the number of slices. Each tensor remembers where it sits in the whole
// model's layout, so that initialisation (by global index), checkpoints (always the whole model)
// and exports see the same numbers however the model is cut (slice_runs).
//
// A layout may hold a part of the model (ModelPart: a pipeline stage's): its blocks, the embedding
// before the first block, the final norm and the LM head after the last. The units are numbered
// in the part; each keeps its place in the whole model (global offsets, dataset), so that
// initialisation and checkpoints are those of the whole model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/deck.hpp"

namespace zm {

enum class InitKind { Normal, NormalResidual, Ones, Zeros };

class ModelParallelScheme;  // model/model_parallel.hpp

// How a tensor is cut into slices: dimension `dim` of its (row-major) shape is cut into `groups`
// equal groups, and each group into one equal part per slice, slice s holding part s of every
// group (e.g. groups = 3 for q, k and v stacked along dim 0, so that each slice holds whole
// heads of each). dim < 0: not cut, every slice-holder holds the whole tensor alike.
struct TensorCut {
  int dim = -1;
  int64_t groups = 1;
};

struct TensorInfo {
  std::string name;    // GPT-2 / Hugging Face style, e.g. "h.3.attn.c_attn.weight"
  int unit = 0;        // the unit its first element lies in
  int64_t offset = 0;  // within its unit's dataset (its unit, or its block under model.tiles)
  int64_t size = 0;
  std::vector<int64_t> shape;  // row-major; weights are (out, in) as nn.Linear; this rank's slice
  TensorCut cut;
  std::vector<int64_t> global_shape;  // the whole tensor (= shape when it is not cut)
  int64_t global_offset = 0;          // the same in the whole model's layout
  bool decay = false;                 // AdamW weight decay applies (matrices and embeddings)
  InitKind init = InitKind::Zeros;
};

// Whether every rank of a model-parallel group holds tensor t alike (whole): what is derived from
// it once per group (its share of the gradient norm, its copy in a checkpoint) is counted by the
// rank that counts_held_alike. The one answer for the norm, the loss, checkpoints and the planner.
inline bool held_whole(const TensorInfo& t) {
  return t.cut.dim < 0;
}
// Whether the rank holding slice `slice_rank` counts what the group's ranks hold alike (the
// tensors held_whole, the loss): the group's first rank.
inline bool counts_held_alike(int slice_rank) {
  return slice_rank == 0;
}

struct UnitInfo {
  std::string name;    // "embeddings", "block.0", ..., "final_norm"
  int64_t offset = 0;  // logical offset in the flat buffer
  int64_t size = 0;
  int64_t global_offset = 0;  // the same in the whole model's layout
  int64_t global_size = 0;
  std::vector<int> tensors;  // indices into ParamLayout::tensors() with elements in the unit
  // The checkpoint dataset the unit lies in (its index in an untiled layout), where it starts
  // there and the dataset's elements: the unit itself, or under model.tiles its block.
  int dataset = 0;
  int64_t dataset_offset = 0, dataset_size = 0;
};

// Offsets of a block's tensors relative to the start of its unit (the same for every block).
struct BlockOffsets {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, attproj_w, attproj_b;
  int64_t ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

// The widths a block computes with on one rank (all of them in a whole model): its heads, the
// attention's channels (heads x head size) and the MLP's hidden width.
struct BlockWidths {
  int64_t heads = 0, attention = 0, mlp = 0;
};

// A contiguous stretch of a tensor slice and where it lies in the whole tensor.
struct SliceRun {
  int64_t local = 0;   // offset in the slice
  int64_t global = 0;  // offset in the whole tensor
  int64_t length = 0;
};
// The runs covering [begin, end) of slice `slice_rank` of `slices` of tensor t.
std::vector<SliceRun> slice_runs(const TensorInfo& t, int slices, int slice_rank, int64_t begin,
                                 int64_t end);

// Blocks [first_block, first_block + blocks) of the model (blocks < 0: through the last), with
// the embedding's forward where the part starts at block 0 and the final norm and LM head where it
// ends at the last. The head is tied to the token embedding: a part with the head holds the
// embedding unit too. Its gradient there is the head's part only: whoever runs the parts sums it
// with the embedding's part before the optimizer, and the norm counts it where the part embeds.
struct ModelPart {
  int64_t first_block = 0, blocks = -1;
};

class ParamLayout {
 public:
  // The layout of one slice of `slices` of the model, cut by `scheme` (nullptr, 1: the whole
  // model); each cut dimension must divide into the slices (the scheme's deck checks say so).
  // `part`: the blocks it holds (the whole model by default).
  explicit ParamLayout(const ModelConfig& config, const ModelParallelScheme* scheme = nullptr,
                       int slices = 1, ModelPart part = {});

  const ModelConfig& config() const { return config_; }
  // The scheme the model is cut by (nullptr: held whole) and into how many slices.
  const ModelParallelScheme* scheme() const { return scheme_; }
  int slices() const { return slices_; }
  int num_units() const { return static_cast<int>(units_.size()); }
  // The part held: its blocks (numbered from 0 in the part, `first_block` in the model), whether
  // it embeds (the model's first block is its) and whether it has the head (the last is).
  int64_t first_block() const { return part_.first_block; }
  int blocks() const { return static_cast<int>(part_.blocks); }
  bool embeds() const { return part_.first_block == 0; }
  bool heads() const { return part_.first_block + part_.blocks == config_.layers; }
  int embedding_unit() const { return 0; }  // held where the part embeds or heads
  // Whether unit u is a copy of a unit another part holds first: the tied embedding, held for the
  // head by a part that does not embed. The gradient norm and checkpoints count it there only.
  bool holds_copy(int u) const { return u == embedding_unit() && heads() && !embeds(); }
  // The units of the part's block `layer`: its first and how many (1, or 4 x model.tiles).
  int block_unit(int layer) const { return (embeds() || heads() ? 1 : 0) + layer * block_units(); }
  int block_units() const { return config_.tiles > 1 ? 4 * static_cast<int>(config_.tiles) : 1; }
  int final_norm_unit() const { return num_units() - 1; }  // held where the part heads
  // The whole model's checkpoint datasets (UnitInfo::dataset): embedding, blocks, final norm.
  int num_datasets() const { return static_cast<int>(config_.layers) + 2; }
  const UnitInfo& unit(int u) const { return units_[static_cast<size_t>(u)]; }
  const std::vector<UnitInfo>& units() const { return units_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  // Elements in the flat buffer (padded vocabulary, no partition padding; this rank's slices).
  int64_t total() const { return total_; }
  int64_t global_total() const { return global_total_; }
  // Parameters of the model with the real vocabulary (what GPT-2 papers give).
  int64_t real_param_count() const {
    return global_total_ - (config_.padded_vocab() - config_.vocab) * config_.dim;
  }

  // Within the embedding unit (wte: the vocab_rows() rows this rank holds).
  int64_t wte_offset() const { return 0; }
  int64_t wpe_offset() const { return vocab_rows() * config_.dim; }
  int64_t vocab_rows() const { return vocab_rows_; }
  // Within a block unit; within the final-norm unit lnf_w is at 0 and lnf_b at C.
  const BlockOffsets& block() const { return block_; }
  const BlockWidths& widths() const { return widths_; }

 private:
  void add_unit(const std::string& name);
  void add_tensor(const std::string& name, std::vector<int64_t> shape, bool decay, InitKind init);
  void cut_blocks_into_tiles();
  void keep_part();  // drops the units outside part_, numbering the rest in the part

  ModelConfig config_;
  const ModelParallelScheme* scheme_ = nullptr;
  int slices_ = 1;
  ModelPart part_;
  int64_t global_total_ = 0;
  std::vector<UnitInfo> units_;
  std::vector<TensorInfo> tensors_;
  BlockOffsets block_{};
  BlockWidths widths_{};
  int64_t vocab_rows_ = 0;
  int64_t total_ = 0;
};

}  // namespace zm
