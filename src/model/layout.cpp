#include "model/layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "model/model_parallel.hpp"

namespace zm {

ParamLayout::ParamLayout(const ModelConfig& config, const ModelParallelScheme* scheme, int slices,
                         ModelPart part)
    : config_(config), scheme_(scheme), slices_(slices), part_(part) {
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
  for (size_t u = 0; u < units_.size(); ++u) {
    units_[u].dataset = static_cast<int>(u);
    units_[u].dataset_size = units_[u].global_size;
  }
  vocab_rows_ = tensors_.front().shape.front();
  if (config.tiles > 1) cut_blocks_into_tiles();
  if (part_.blocks < 0) part_.blocks = config.layers - part_.first_block;
  if (part_.first_block > 0 || part_.blocks < config.layers) keep_part();
}

void ParamLayout::keep_part() {
  const int64_t first = part_.first_block, end = first + part_.blocks, L = config_.layers;
  ZM_ASSERT(first >= 0 && part_.blocks >= 0 && end <= L, "blocks {}..{} of {}", first, end, L);
  std::vector<UnitInfo> units;
  std::vector<TensorInfo> tensors;
  std::vector<int> renumbered(tensors_.size(), -1);
  total_ = 0;
  for (UnitInfo unit : units_) {
    const int64_t d = unit.dataset;  // embedding 0, block l at l + 1, final norm at L + 1
    if (d == 0 ? !embeds() && !heads() : (d == L + 1 ? !heads() : d - 1 < first || d - 1 >= end))
      continue;
    unit.offset = total_;
    total_ += unit.size;
    // A tensor's unit is the first listing it: tiles of a block are kept or dropped together.
    for (int& t : unit.tensors) {
      int& kept = renumbered[static_cast<size_t>(t)];
      if (kept < 0) {
        kept = static_cast<int>(tensors.size());
        tensors.push_back(tensors_[static_cast<size_t>(t)]);
        tensors.back().unit = static_cast<int>(units.size());
      }
      t = kept;
    }
    units.push_back(std::move(unit));
  }
  units_ = std::move(units);
  tensors_ = std::move(tensors);
}

void ParamLayout::cut_blocks_into_tiles() {
  ZM_ASSERT(slices_ == 1 && config_.dim % config_.tiles == 0, "{} tiles of dim {} in {} slices",
            config_.tiles, config_.dim, slices_);
  const int64_t T = config_.tiles, C = config_.dim;
  const BlockOffsets& o = block_;
  // Where a block's units start: per weight (where the tensors before it start, where it starts,
  // its rows and columns) its first tile with those tensors, the others at their first row.
  const int64_t weights[4][4] = {{0, o.qkv_w, 3 * C, C},
                                 {o.qkv_b, o.attproj_w, C, C},
                                 {o.attproj_b, o.fc_w, 4 * C, C},
                                 {o.fc_b, o.fcproj_w, C, 4 * C}};
  const char* names[4] = {"qkv", "attproj", "fc", "fcproj"};
  std::vector<int64_t> starts;
  for (const auto& w : weights)
    for (int64_t t = 0; t < T; ++t) starts.push_back(t == 0 ? w[0] : w[1] + t * w[2] / T * w[3]);
  std::vector<UnitInfo> units;
  for (const UnitInfo& whole : units_) {
    const bool block = whole.name.rfind("block.", 0) == 0;
    for (size_t i = 0; i < (block ? starts.size() : 1); ++i) {
      UnitInfo unit = whole;
      if (block) {
        const int64_t begin = starts[i], end = i + 1 < starts.size() ? starts[i + 1] : whole.size;
        unit.name = fmt::format("{}.{}.{}", whole.name, names[i / static_cast<size_t>(T)],
                                i % static_cast<size_t>(T));
        unit.offset = whole.offset + begin;
        unit.global_offset = whole.global_offset + begin;
        unit.size = unit.global_size = end - begin;
        unit.dataset_offset = begin;
      }
      unit.tensors.clear();
      for (int t : whole.tensors) {
        TensorInfo& tensor = tensors_[static_cast<size_t>(t)];
        const int64_t begin = unit.dataset_offset, end = begin + unit.size;
        if (tensor.offset >= end || tensor.offset + tensor.size <= begin) continue;
        unit.tensors.push_back(t);
        if (tensor.offset >= begin) tensor.unit = static_cast<int>(units.size());
      }
      units.push_back(std::move(unit));
    }
  }
  units_ = std::move(units);
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
