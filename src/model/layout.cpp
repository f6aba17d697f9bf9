#include "model/layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace zm {

ParamLayout::ParamLayout(const ModelConfig& config, int tp) : config_(config), tp_(tp) {
  ZM_ASSERT(tp >= 1 && config.heads % tp == 0 && 4 * config.dim % tp == 0 &&
                config.padded_vocab() % tp == 0,
            "tp {} does not divide the heads {}, 4 x dim {} and padded vocabulary {}", tp,
            config.heads, 4 * config.dim, config.padded_vocab());
  constexpr TpSplit R = TpSplit::Replicated;
  const int64_t C = config.dim, Vp = config.padded_vocab(), T = config.seq_len;
  add_unit("embeddings");
  add_tensor("wte.weight", {Vp, C}, TpSplit::Rows, true, InitKind::Normal);
  add_tensor("wpe.weight", {T, C}, R, true, InitKind::Normal);
  for (int64_t l = 0; l < config.layers; ++l) {
    add_unit(fmt::format("block.{}", l));
    const std::string p = fmt::format("h.{}.", l);
    add_tensor(p + "ln_1.weight", {C}, R, false, InitKind::Ones);
    add_tensor(p + "ln_1.bias", {C}, R, false, InitKind::Zeros);
    add_tensor(p + "attn.c_attn.weight", {3 * C, C}, TpSplit::QkvRows, true, InitKind::Normal);
    add_tensor(p + "attn.c_attn.bias", {3 * C}, TpSplit::QkvRows, false, InitKind::Zeros);
    add_tensor(p + "attn.c_proj.weight", {C, C}, TpSplit::Columns, true, InitKind::NormalResidual);
    add_tensor(p + "attn.c_proj.bias", {C}, R, false, InitKind::Zeros);
    add_tensor(p + "ln_2.weight", {C}, R, false, InitKind::Ones);
    add_tensor(p + "ln_2.bias", {C}, R, false, InitKind::Zeros);
    add_tensor(p + "mlp.c_fc.weight", {4 * C, C}, TpSplit::Rows, true, InitKind::Normal);
    add_tensor(p + "mlp.c_fc.bias", {4 * C}, TpSplit::Rows, false, InitKind::Zeros);
    add_tensor(p + "mlp.c_proj.weight", {C, 4 * C}, TpSplit::Columns, true,
               InitKind::NormalResidual);
    add_tensor(p + "mlp.c_proj.bias", {C}, R, false, InitKind::Zeros);
  }
  add_unit("final_norm");
  add_tensor("ln_f.weight", {C}, R, false, InitKind::Ones);
  add_tensor("ln_f.bias", {C}, R, false, InitKind::Zeros);

  // Every block has the same internal layout; read it off the first block (or compute it for a
  // model without blocks, which the deck schema does not allow but costs nothing to handle).
  const auto& t = tensors_;
  if (config.layers > 0) {
    const size_t first = unit(1).tensors.front();
    int64_t* fields[] = {&block_.ln1_w,     &block_.ln1_b,     &block_.qkv_w,    &block_.qkv_b,
                         &block_.attproj_w, &block_.attproj_b, &block_.ln2_w,    &block_.ln2_b,
                         &block_.fc_w,      &block_.fc_b,      &block_.fcproj_w, &block_.fcproj_b};
    for (size_t i = 0; i < 12; ++i) *fields[i] = t[first + i].offset;
  }
}

void ParamLayout::add_unit(const std::string& name) {
  UnitInfo u;
  u.name = name;
  u.offset = total_;
  u.global_offset = global_total_;
  units_.push_back(u);
}

namespace {

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

// The slice's shape: the split dimension divided by tp.
std::vector<int64_t> slice_shape(std::vector<int64_t> shape, TpSplit split, int tp) {
  if (split == TpSplit::Rows || split == TpSplit::QkvRows) shape.front() /= tp;
  if (split == TpSplit::Columns) shape.back() /= tp;
  return shape;
}

}  // namespace

void ParamLayout::add_tensor(const std::string& name, std::vector<int64_t> shape, TpSplit split,
                             bool decay, InitKind init) {
  UnitInfo& u = units_.back();
  TensorInfo t;
  t.name = name;
  t.unit = num_units() - 1;
  t.offset = u.size;
  t.global_offset = u.global_size;
  t.split = split;
  t.global_shape = shape;
  t.shape = slice_shape(std::move(shape), split, tp_);
  t.size = product(t.shape);
  t.decay = decay;
  t.init = init;
  u.tensors.push_back(static_cast<int>(tensors_.size()));
  u.size += t.size;
  u.global_size += product(t.global_shape);
  total_ += t.size;
  global_total_ += product(t.global_shape);
  tensors_.push_back(std::move(t));
}

std::vector<TpRun> tp_runs(const TensorInfo& t, int tp, int tp_rank, int64_t begin, int64_t end) {
  // The slice is a sequence of equal blocks, each contiguous in the whole tensor: one block
  // (Rows, Replicated), q, k and v's rows (QkvRows), or each row's columns (Columns).
  const int64_t rows = t.global_shape.front();
  const int64_t width = t.global_shape.size() > 1 ? t.global_shape.back() : 1;
  int64_t block = t.size, whole_stride = 0, first = 0;
  switch (t.split) {
    case TpSplit::Replicated:
      break;
    case TpSplit::Rows:
      first = tp_rank * t.size;
      break;
    case TpSplit::QkvRows:  // three blocks of rows/3/tp rows; block b starts at b * rows/3 rows
      block = t.size / 3;
      whole_stride = rows / 3 * width;
      first = tp_rank * block;
      break;
    case TpSplit::Columns:  // each row: width/tp columns from tp_rank * width/tp
      block = width / tp;
      whole_stride = width;
      first = tp_rank * block;
      break;
  }
  std::vector<TpRun> runs;
  if (begin >= end) return runs;
  for (int64_t b = begin / block; b * block < end; ++b) {
    const int64_t lo = std::max(begin, b * block), hi = std::min(end, (b + 1) * block);
    runs.push_back({lo, first + b * whole_stride + (lo - b * block), hi - lo});
  }
  return runs;
}

int64_t ParamLayout::real_param_count() const {
  return global_total_ - (config_.padded_vocab() - config_.vocab) * config_.dim;
}

}  // namespace zm
