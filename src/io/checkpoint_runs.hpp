// Where a rank's part of a unit lies in a checkpoint. Checkpoints always hold the whole model
// (the tp = 1 layout: each unit's dataset has UnitInfo::global_size elements), while a
// tensor-parallel rank holds one slice of every split tensor (model/layout.hpp). A range of the
// rank's unit therefore maps to a sequence of runs in the dataset; the writer and the reader
// select them as one HDF5 hyperslab union. Internal to src/io.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <vector>

#include "model/layout.hpp"
#include "zero/partition.hpp"

namespace zm::checkpoint_format {

// Whether the tensors every tp rank holds whole (TpSplit::Replicated) are included: a reader
// takes them on every tp rank, a writer only on tp rank 0 (so that each element is written once).
enum class Replicated { Include, Skip };

// The runs covering logical elements [begin, end) of unit u of this rank's layout (the slice of
// tp rank `tp_rank`): TpRun::local is the offset in the rank's unit, TpRun::global the offset in
// the unit's dataset. Both increase along the sequence (each slice keeps its elements' order in
// the whole tensor, and tensors keep their order in the unit), which is what lets a selection of
// the file's runs pair element by element with a selection of the same runs in memory.
std::vector<TpRun> unit_runs(const Partition& partition, int tp_rank, int u, int64_t begin,
                             int64_t end, Replicated replicated);

// Selects in the 1-D dataspace `space` the runs' file positions (TpRun::global) or memory
// positions (TpRun::local - base), as few strided hyperslabs as the runs allow; an empty list
// selects nothing. At tp = 1 a contiguous range is one hyperslab, as it always was.
enum class Side { File, Memory };
void select_runs(hid_t space, const std::vector<TpRun>& runs, Side side, int64_t base = 0);

}  // namespace zm::checkpoint_format
