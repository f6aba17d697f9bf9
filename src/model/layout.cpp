#include "model/layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "model/model_parallel.hpp"

namespace zm {

ParamLayout::ParamLayout(const ModelConfig& config, const ModelParallelScheme* scheme, int slices)
    : config_(config), scheme_(scheme), slices_(slices) {
  ZM_ASSERT(slices >= 1 && (scheme != nullptr || slices == 1), "{} slices without a scheme",
            slices);
  const int64_t C = config.dim, Vp = config.padded_vocab(), T = config.seq_len;
  add_unit("embeddings");
  add_tensor("wte.weight", {Vp, C}, true, InitKind::Normal);
  add_tensor("wpe.weight", {T, C}, true, InitKind::Normal);
  for (int64_t l = 0; l < config.layers; ++l) {
    add_unit(fmt::format("block.{}", l));
    const std::string p = fmt::format("h.{}.", l);
    add_tensor(p + "ln_1.weight", {C}, false, InitKind::Ones);
    add_tensor(p + "ln_1.bias", {C}, false, InitKind::Zeros);
    add_tensor(p + "attn.c_attn.weight", {3 * C, C}, true, InitKind::Normal);
    add_tensor(p + "attn.c_attn.bias", {3 * C}, false, InitKind::Zeros);
    add_tensor(p + "attn.c_proj.weight", {C, C}, true, InitKind::NormalResidual);
    add_tensor(p + "attn.c_proj.bias", {C}, false, InitKind::Zeros);
    add_tensor(p + "ln_2.weight", {C}, false, InitKind::Ones);
    add_tensor(p + "ln_2.bias", {C}, false, InitKind::Zeros);
    add_tensor(p + "mlp.c_fc.weight", {4 * C, C}, true, InitKind::Normal);
    add_tensor(p + "mlp.c_fc.bias", {4 * C}, false, InitKind::Zeros);
    add_tensor(p + "mlp.c_proj.weight", {C, 4 * C}, true, InitKind::NormalResidual);
    add_tensor(p + "mlp.c_proj.bias", {C}, false, InitKind::Zeros);
  }
  add_unit("final_norm");
  add_tensor("ln_f.weight", {C}, false, InitKind::Ones);
  add_tensor("ln_f.bias", {C}, false, InitKind::Zeros);

  // Every block has the same internal layout; read it off the first block (or compute it for a
  // model without blocks, which the deck schema does not allow but costs nothing to handle).
  const auto& t = tensors_;
  if (config.layers > 0) {
    const size_t first = unit(1).tensors.front();
    int64_t* fields[] = {&block_.ln1_w,     &block_.ln1_b,     &block_.qkv_w,    &block_.qkv_b,
                         &block_.attproj_w, &block_.attproj_b, &block_.ln2_w,    &block_.ln2_b,
                         &block_.fc_w,      &block_.fc_b,      &block_.fcproj_w, &block_.fcproj_b};
    for (size_t i = 0; i < 12; ++i) *fields[i] = t[first + i].offset;
    // The widths this rank computes with, from its slices of the projections.
    widths_.attention = t[first + 4].shape.back();  // attn.c_proj's input
    widths_.mlp = t[first + 8].shape.front();       // mlp.c_fc's output
    widths_.heads = widths_.attention / config.head_dim();
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

}  // namespace

void ParamLayout::add_tensor(const std::string& name, std::vector<int64_t> shape, bool decay,
                             InitKind init) {
  UnitInfo& u = units_.back();
  TensorInfo t;
  t.name = name;
  t.unit = num_units() - 1;
  t.offset = u.size;
  t.global_offset = u.global_size;
  if (scheme_ != nullptr) t.cut = scheme_->cut(name);
  t.global_shape = shape;
  if (!held_whole(t)) {
    int64_t& extent = shape[static_cast<size_t>(t.cut.dim)];
    ZM_ASSERT(extent % (t.cut.groups * slices_) == 0,
              "{}: {} elements along dimension {} in {} x {}", name, extent, t.cut.dim,
              t.cut.groups, slices_);
    extent /= slices_;
  }
  t.shape = std::move(shape);
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

std::vector<SliceRun> slice_runs(const TensorInfo& t, int slices, int slice_rank, int64_t begin,
                                 int64_t end) {
  std::vector<SliceRun> runs;
  if (begin >= end) return runs;
  if (held_whole(t)) return {{begin, begin, end - begin}};
  // The slice is a sequence of equal blocks, each contiguous in the whole tensor: for every index
  // of the dimensions before the cut one (outer) and every group, this slice's part of the group.
  const auto d = static_cast<size_t>(t.cut.dim);
  int64_t inner = 1;
  for (size_t i = d + 1; i < t.global_shape.size(); ++i) inner *= t.global_shape[i];
  const int64_t extent = t.global_shape[d], group = extent / t.cut.groups;
  const int64_t block = group / slices * inner;
  for (int64_t b = begin / block; b * block < end; ++b) {
    const int64_t outer = b / t.cut.groups, g = b % t.cut.groups;
    const int64_t first = outer * extent * inner + g * group * inner + slice_rank * block;
    const int64_t lo = std::max(begin, b * block), hi = std::min(end, (b + 1) * block);
    runs.push_back({lo, first + (lo - b * block), hi - lo});
  }
  return runs;
}

}  // namespace zm
