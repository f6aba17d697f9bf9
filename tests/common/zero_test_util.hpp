// Shared by the ZeRO tests: the test model and a short training run.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "comm/mesh_comms.hpp"
#include "common/gathered_state.hpp"
#include "core/deck.hpp"
#include "core/deck_keys.hpp"
#include "core/memory.hpp"
#include "train/trainer.hpp"

namespace zm::testing {

// Relative loss difference allowed at every step of the 5-step test deck (lr 1e-2) with
// quantized gradients or weights: the targets of ZeRO++'s convergence claims, 1% for int8 and
// 3% for int4 (7 levels per sign instead of 127: an error per block 18 times larger). The tests
// print the measured gaps (at 4 ranks: at most 0.09% int8, 0.4% int4).
inline constexpr double kInt8LossTolerance = 0.01;
inline constexpr double kInt4LossTolerance = 0.03;

// The bytes of the buffers of one memory category in a declared plan.
inline double category_bytes(const std::vector<BufferSpec>& plan, MemCategory category) {
  double bytes = 0;
  for (const BufferSpec& spec : plan)
    if (spec.category == category) bytes += static_cast<double>(spec.bytes());
  return bytes;
}

// Deck overrides: `base` followed by `more`.
inline std::vector<std::string> with(std::vector<std::string> base,
                                     const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// The largest difference of this rank's parameters from world rank 0's: 0 when every rank holds
// the same model. Collective over the world.
inline float largest_difference_from_rank0(const std::vector<float>& params) {
  std::vector<float> rank0 = params;
  MPI_Bcast(rank0.data(), static_cast<int>(rank0.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  float mine = 0, worst = 0;
  for (size_t i = 0; i < params.size(); ++i) mine = std::max(mine, std::fabs(params[i] - rank0[i]));
  MPI_Allreduce(&mine, &worst, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

// Whether this build has deck key `key` ("section.key"): a module's test of another module's
// key runs it only where that module is built.
inline bool key_built(const std::string& key) {
  return !module_setting(Deck{}, key, "").empty();
}

// tiny-test.toml's model with the batch and stage given.
inline Deck test_deck(int stage, int64_t micro_batch, int64_t grad_accum = 1,
                      std::vector<std::string> extra = {}) {
  std::vector<std::string> overrides = {fmt::format("zero.stage={}", stage),
                                        fmt::format("train.micro_batch={}", micro_batch),
                                        fmt::format("train.grad_accum={}", grad_accum)};
  for (auto& e : extra) overrides.push_back(e);
  return parse_deck(R"(
[model]
layers = 2
heads = 4
dim = 32
vocab = 97
seq_len = 16
[train]
steps = 5
lr = 1e-2
warmup = 1
seed = 7
[zero]
bucket_mb = 0.01
)",
                    "test-deck", overrides);
}

// The whole model's parameters from every rank's full_parameters(), its slices of a model held
// in slices (model/layout.hpp): each slice placed by slice_runs, the tensors every rank of the
// model-parallel group holds taken from its first rank, summed over the group (every other term
// is zero). Collective over the world.
inline std::vector<float> whole_model(Trainer& trainer, const std::vector<float>& slices) {
  const ParamLayout& layout = trainer.layout();
  Communicator* group = trainer.comms().model_parallel();
  if (group == nullptr || layout.slices() == 1) return slices;
  const int slice_rank = group->rank();
  std::vector<float> whole(static_cast<size_t>(layout.global_total()), 0.0f);
  for (const TensorInfo& t : layout.tensors()) {
    if (held_whole(t) && !counts_held_alike(slice_rank)) continue;
    const UnitInfo& unit = layout.unit(t.unit);
    for (const SliceRun& run : slice_runs(t, layout.slices(), slice_rank, 0, t.size))
      for (int64_t i = 0; i < run.length; ++i)
        whole[static_cast<size_t>(unit.global_offset + t.global_offset + run.global + i)] =
            slices[static_cast<size_t>(unit.offset + t.offset + run.local + i)];
  }
  MPI_Allreduce(MPI_IN_PLACE, whole.data(), static_cast<int>(whole.size()), MPI_FLOAT, MPI_SUM,
                group->mpi_comm());
  return whole;
}

struct TrainedRun {
  std::vector<double> losses;
  std::vector<float> params;  // the whole model's logical vector after the last step
  std::vector<StepRecord> records;
};

// `around_step`, where given, is called with the trainer right before (false) and right after
// (true) each step.
inline TrainedRun train(const Deck& deck, Communicator& comm,
                        const std::function<void(Trainer& trainer, bool after)>& around_step = {}) {
  TrainedRun run;
  const auto owned_trainer = make_trainer(deck, deck.zero.stage, comm);
  Trainer& trainer = *owned_trainer;
  trainer.init_parameters();
  for (int64_t s = 0; s < deck.train.steps; ++s) {
    if (around_step) around_step(trainer, false);
    run.records.push_back(trainer.step(s));
    if (around_step) around_step(trainer, true);
    run.losses.push_back(run.records.back().loss);
  }
  run.params = whole_model(trainer, zm::testing::gathered_parameters(trainer.engine()));
  return run;
}

}  // namespace zm::testing
