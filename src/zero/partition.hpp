// The partition of every unit over a shard group's ranks, shared by every ZeRO stage.
//
// Each unit of the parameter layout is padded to a multiple of ranks * kShardAlign elements and
// split into `ranks` equal shards; rank r owns shard r of every unit. Full-size buffers (stage 0-2
// parameters, stage 0-1 gradients, gradient buckets, gathered units) use the padded layout, so
// that a unit's collective runs on one contiguous range with equal shards, and a rank's shard
// buffer (optimizer state, and in stages 2-3 gradients and parameters) is the concatenation of
// its shards of all units. Padding elements are zero and never read as data.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/device_mesh.hpp"
#include "model/layout.hpp"

namespace zm {

// Shards are multiples of 64 elements (256 bytes of fp32): aligned, vector-friendly starts.
constexpr int64_t kShardAlign = 64;

struct UnitPartition {
  int64_t size = 0;        // logical elements of the unit
  int64_t shard = 0;       // elements per rank
  int64_t sub_shard = 0;   // elements per sub-shard (sub-sharded: shard / sub_shards; else shard)
  int64_t sub_offset = 0;  // offset of this unit's sub-shard in a rank's sub-shard buffer
  int64_t padded = 0;      // shard * ranks >= size
  int64_t padded_offset = 0;  // offset of the unit in a full (padded) buffer
  int64_t shard_offset = 0;   // offset of this unit's shard in a rank's shard buffer
};

// A piece of one tensor inside a range of a unit (used to apply per-tensor properties, such as
// weight decay or the initialisation rule, to a shard).
struct TensorSegment {
  int tensor = 0;             // index into ParamLayout::tensors()
  int64_t tensor_offset = 0;  // first element of the piece within the tensor
  int64_t unit_offset = 0;    // the same element's offset within the unit
  int64_t length = 0;
};

class Partition {
 public:
  // sub_shards: a sub-sharded optimizer splits every shard again into this many sub-shards
  // (core/zero_mesh.hpp); units are then padded to a multiple of ranks * sub_shards * kShardAlign.
  Partition(const ParamLayout& layout, int ranks, int sub_shards = 1);

  const ParamLayout& layout() const { return *layout_; }
  int ranks() const { return ranks_; }
  int sub_shards() const { return sub_shards_; }
  int num_units() const { return static_cast<int>(units_.size()); }
  const UnitPartition& unit(int u) const { return units_[static_cast<size_t>(u)]; }

  int64_t padded_total() const { return padded_total_; }  // elements of a full buffer
  int64_t shard_total() const { return shard_total_; }    // elements of one rank's shard buffer
  int64_t max_padded_unit(int first_unit, int last_unit) const;  // over units [first, last]

  // A buffer under a placement holds one of `pieces` equal pieces of every unit (1: the padded
  // unit, ranks(): a shard, ranks() * sub_shards(): a sub-shard), concatenated: its elements, and
  // the offset of unit u's piece in it.
  int64_t piece_total(int pieces) const;
  int64_t piece_offset(int u, int pieces) const;
  // The logical elements [begin, end) of unit u in a piece (empty when it is all padding).
  std::pair<int64_t, int64_t> piece_range(int u, Piece piece) const;

  // The logical elements [begin, end) of unit u that lie in rank r's shard (may be empty:
  // begin == end when the shard is all padding).
  std::pair<int64_t, int64_t> owned_range(int u, int rank) const {
    return piece_range(u, {ranks_, rank});
  }

  // Tensor pieces covering logical elements [begin, end) of unit u, in order.
  std::vector<TensorSegment> segments(int u, int64_t begin, int64_t end) const;

 private:
  int piece_kind(int pieces) const;  // 0 the padded unit, 1 a shard, 2 a sub-shard
  const ParamLayout* layout_;
  int ranks_;
  int sub_shards_;
  std::vector<UnitPartition> units_;
  int64_t padded_total_ = 0;
  int64_t shard_total_ = 0;
  int64_t sub_total_ = 0;
};

}  // namespace zm
