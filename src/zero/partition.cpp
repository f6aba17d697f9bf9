#include "zero/partition.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace zm {

Partition::Partition(const ParamLayout& layout, int ranks, int sub_shards)
    : layout_(&layout), ranks_(ranks), sub_shards_(sub_shards) {
  ZM_ASSERT(ranks >= 1 && sub_shards >= 1, "rank count {}, sub-shards {}", ranks, sub_shards);
  for (const UnitInfo& info : layout.units()) {
    UnitPartition p;
    p.size = info.size;
    const int64_t chunk = static_cast<int64_t>(ranks) * sub_shards * kShardAlign;
    p.padded = (info.size + chunk - 1) / chunk * chunk;
    p.shard = p.padded / ranks;
    p.sub_shard = p.shard / sub_shards;
    p.padded_offset = padded_total_;
    p.shard_offset = shard_total_;
    p.sub_offset = sub_total_;
    padded_total_ += p.padded;
    shard_total_ += p.shard;
    sub_total_ += p.sub_shard;
    units_.push_back(p);
  }
}

int64_t Partition::max_padded_unit(int first_unit, int last_unit) const {
  int64_t largest = 0;
  for (int u = first_unit; u <= last_unit; ++u) largest = std::max(largest, unit(u).padded);
  return largest;
}

int Partition::piece_kind(int pieces) const {
  if (pieces == 1) return 0;
  if (pieces == ranks_) return 1;
  ZM_ASSERT(pieces == ranks_ * sub_shards_, "{} pieces of a partition over {} ranks x {}", pieces,
            ranks_, sub_shards_);
  return 2;
}

int64_t Partition::piece_total(int pieces) const {
  const int64_t totals[] = {padded_total_, shard_total_, sub_total_};
  return totals[piece_kind(pieces)];
}

int64_t Partition::piece_offset(int u, int pieces) const {
  const UnitPartition& p = unit(u);
  const int64_t offsets[] = {p.padded_offset, p.shard_offset, p.sub_offset};
  return offsets[piece_kind(pieces)];
}

std::pair<int64_t, int64_t> Partition::piece_range(int u, Piece piece) const {
  const UnitPartition& p = unit(u);
  const int64_t extent = p.padded / piece.count;
  const int64_t first = piece.index * extent;
  return {std::min(p.size, first), std::min(p.size, first + extent)};
}

std::vector<TensorSegment> Partition::segments(int u, int64_t begin, int64_t end) const {
  std::vector<TensorSegment> out;
  const UnitInfo& unit = layout_->unit(u);
  for (int t : unit.tensors) {
    const TensorInfo& info = layout_->tensors()[static_cast<size_t>(t)];
    const int64_t start = info.offset - unit.dataset_offset;  // in the unit (< 0: begun before it)
    const int64_t lo = std::max(begin, start);
    const int64_t hi = std::min(end, start + info.size);
    if (lo >= hi) continue;
    out.push_back(TensorSegment{t, lo - start, lo, hi - lo});
  }
  return out;
}

}  // namespace zm
