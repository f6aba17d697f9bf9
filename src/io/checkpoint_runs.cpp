#include "io/checkpoint_runs.hpp"

#include <stdexcept>

namespace zm::checkpoint_format {

std::vector<TpRun> unit_runs(const Partition& partition, int tp_rank, int u, int64_t begin,
                             int64_t end, Replicated replicated) {
  const ParamLayout& layout = partition.layout();
  std::vector<TpRun> runs;
  if (begin >= end) return runs;
  for (const TensorSegment& seg : partition.segments(u, begin, end)) {
    const TensorInfo& t = layout.tensors()[static_cast<size_t>(seg.tensor)];
    if (t.split == TpSplit::Replicated && replicated == Replicated::Skip) continue;
    for (const TpRun& run :
         tp_runs(t, layout.tp(), tp_rank, seg.tensor_offset, seg.tensor_offset + seg.length)) {
      const TpRun in_unit{run.local + t.offset, run.global + t.global_offset, run.length};
      // Runs that continue the previous one on both sides are one run (at tp = 1: the whole
      // range).
      if (!runs.empty() && runs.back().local + runs.back().length == in_unit.local &&
          runs.back().global + runs.back().length == in_unit.global) {
        runs.back().length += in_unit.length;
        continue;
      }
      // Pairing file and memory selections element by element relies on this order.
      if (!runs.empty() && (in_unit.local < runs.back().local + runs.back().length ||
                            in_unit.global < runs.back().global + runs.back().length))
        throw std::logic_error("checkpoint runs out of order in unit " + std::to_string(u));
      runs.push_back(in_unit);
    }
  }
  return runs;
}

void select_runs(hid_t space, const std::vector<TpRun>& runs, Side side, int64_t base) {
  auto at = [&](size_t i) { return side == Side::File ? runs[i].global : runs[i].local - base; };
  H5Sselect_none(space);
  bool first = true;
  for (size_t i = 0; i < runs.size();) {
    // The longest stretch of equally long runs at equal spacing is one strided hyperslab (a
    // column-parallel weight's rows: one per stretch, not one per row).
    const int64_t length = runs[i].length;
    size_t count = 1;
    int64_t stride = length;
    if (i + 1 < runs.size() && runs[i + 1].length == length) {
      stride = at(i + 1) - at(i);
      while (i + count < runs.size() && runs[i + count].length == length &&
             at(i + count) - at(i + count - 1) == stride)
        ++count;
    }
    if (count == 1) stride = length;
    const hsize_t start = static_cast<hsize_t>(at(i)), step = static_cast<hsize_t>(stride),
                  blocks = count, block = static_cast<hsize_t>(length);
    H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR, &start, &step, &blocks,
                        &block);
    first = false;
    i += count;
  }
}

}  // namespace zm::checkpoint_format
