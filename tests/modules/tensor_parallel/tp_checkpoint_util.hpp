// Shared by the tensor-parallel checkpoint tests: the whole model's state assembled from the
// tp ranks' slices by an element-wise rule of its own (not the slice_runs mapping the checkpoint
// code uses, so that a wrong mapping there cannot cancel out here), and the one-rank tp = 1 run
// every tensor-parallel layout is compared with.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "common/checkpoint_test_util.hpp"
#include "common/gathered_state.hpp"
#include "common/test_watchdog.hpp"
#include "core/zero_mesh.hpp"
#include "io/checkpoint.hpp"
#include "model/layout.hpp"

namespace zm::testing {

// How Megatron cuts a tensor, by its name (written out here, not read from the scheme).
enum class Split { Whole, Rows, QkvRows, Columns };
inline bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}
inline Split split_of(const TensorInfo& t) {
  if (t.name == "wte.weight" || ends_with(t.name, "mlp.c_fc.weight") ||
      ends_with(t.name, "mlp.c_fc.bias"))
    return Split::Rows;
  if (ends_with(t.name, "attn.c_attn.weight") || ends_with(t.name, "attn.c_attn.bias"))
    return Split::QkvRows;
  if (ends_with(t.name, "c_proj.weight")) return Split::Columns;
  return Split::Whole;
}

// Element i (row-major) of tp rank `tp_rank`'s slice of t: its index in the whole tensor, from
// Megatron's split of the shape: Rows and the vocabulary-parallel wte take a block of rows;
// QkvRows a block of rows from each of q, k and v; Columns a block of each row.
inline int64_t whole_index(const TensorInfo& t, int tp, int tp_rank, int64_t i) {
  const int64_t rows = t.global_shape.front();
  const int64_t width = t.global_shape.size() > 1 ? t.global_shape.back() : 1;
  const int64_t slice_width = t.shape.size() > 1 ? t.shape.back() : 1;
  const int64_t row = i / slice_width, column = i % slice_width;
  switch (split_of(t)) {
    case Split::Whole:
      return i;
    case Split::Rows:
      return (tp_rank * (rows / tp) + row) * width + column;
    case Split::QkvRows: {
      const int64_t part_rows = rows / 3 / tp;  // of q, k or v on one tp rank
      const int64_t part = row / part_rows;
      return (part * (rows / 3) + tp_rank * part_rows + row % part_rows) * width + column;
    }
    case Split::Columns:
      return row * width + tp_rank * slice_width + column;
  }
  return -1;
}

// Collective over the world: the engine's fp32 state `which` of the whole model (tp = 1 layout),
// on every rank. The first data-parallel rank of each tp coordinate contributes its slice (tp
// rank 0 alone the replicated tensors; of a model held in parts, a pipeline's stages, each part
// its units, the tied embedding where it embeds), the others zeros: the sum is exact.
inline std::vector<float> whole_state(ZeroEngine& engine, zm::testing::StateVector which) {
  const std::vector<float> slice = zm::testing::gathered_state(engine, which);
  const ParamLayout& layout = engine.partition().layout();
  const int tp = layout.slices(), tp_rank = engine.slice_rank();
  const int world_rank = engine.comms().world().rank();
  const DeviceMesh& mesh = engine.mesh().mesh;
  const bool contributes = mesh.coordinate(world_rank, kShardDim) == 0 &&
                           mesh.coordinate(world_rank, kReplicateDim) == 0;
  std::vector<float> whole(static_cast<size_t>(layout.global_total()), 0.0f);
  for (const TensorInfo& t : layout.tensors()) {
    if (!contributes || (split_of(t) == Split::Whole && tp_rank != 0) || layout.holds_copy(t.unit))
      continue;
    const UnitInfo& unit = layout.unit(t.unit);
    for (int64_t i = 0; i < t.size; ++i)
      whole[static_cast<size_t>(unit.global_offset + t.global_offset +
                                whole_index(t, tp, tp_rank, i))] =
          slice[static_cast<size_t>(unit.offset + t.offset + i)];
  }
  MPI_Allreduce(MPI_IN_PLACE, whole.data(), static_cast<int>(whole.size()), MPI_FLOAT, MPI_SUM,
                engine.comms().world().mpi_comm());
  return whole;
}

inline State whole_state(ZeroEngine& engine) {
  return {whole_state(engine, zm::testing::StateVector::Params),
          whole_state(engine, zm::testing::StateVector::AdamM),
          whole_state(engine, zm::testing::StateVector::AdamV)};
}

// The unsharded run: world rank 0 alone, tp = 1, stage 0, the whole global batch in one
// micro-batch, steps 0-8 with a checkpoint after step 4 under <dir>/ref (`extra`: deck overrides,
// such as the model's depth). Every rank gets the losses and the checkpoint's path.
struct ReferenceRun {
  std::vector<double> losses;
  std::string checkpoint;
};

inline ReferenceRun reference_run(const std::string& dir, int64_t global_batch,
                                  const std::vector<std::string>& extra = {}) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  ReferenceRun run;
  run.losses.resize(8);
  char path[512] = {};
  const Deck deck = deck_for(0, global_batch, dir + "/ref", 8, "fp32", extra);
  // The watchdog's progress windows span the world: every rank arms it (collective, once per
  // process) before rank 0 alone builds a trainer, which arms it too.
  watchdog().arm(deck.comm.timeout_s);
  MPI_Comm one;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank == 0 ? 0 : MPI_UNDEFINED, world_rank, &one);
  if (one != MPI_COMM_NULL) {
    {
      auto comm = make_communicator("mpi", one, watchdog());
      const auto trainer = make_trainer(deck, 0, *comm);
      trainer->init_parameters();
      run.losses = run_steps(*trainer, 0, 4);
      const std::string written = write_checkpoint(trainer->engine(), trainer->deck(), 4).path;
      std::snprintf(path, sizeof(path), "%s", written.c_str());
      for (double loss : run_steps(*trainer, 4, 8)) run.losses.push_back(loss);
    }
    MPI_Comm_free(&one);
  }
  MPI_Bcast(run.losses.data(), 8, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, MPI_COMM_WORLD);
  run.checkpoint = path;
  return run;
}

}  // namespace zm::testing
