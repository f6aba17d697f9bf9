// Sharded, reshardable, crash-safe checkpoints: <output.dir>/checkpoints/step_XXXXXXXX.h5.
//
// One HDF5 file per checkpoint, written collectively with MPI-IO: for each unit u of the
// parameter layout, /params/unit_UUUU, /adam_m/unit_UUUU and /adam_v/unit_UUUU of the whole
// model's unit (no partition padding), each element written once by the rank that owns it (of a
// model held in parts, a pipeline's stages, by the part that holds it first), with HDF5's
// Fletcher32 checksum (verified on every read). Attributes hold the step, format version,
// model config, deck, data position, RNG state, and the stage and rank count it was written with.
//
// Written under a temporary name, flushed, closed and renamed; then the `latest` pointer (a
// one-line text file) is updated and checkpoints beyond output.keep removed: a crash at any point
// leaves the previous checkpoint loadable. Loading reads on each rank what it holds under the
// *current* rank count and stage, so a run may resume with others.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/deck.hpp"
#include "zero/engine.hpp"

namespace zm {

constexpr int64_t kCheckpointFormatVersion = 1;
// Elements per chunk of a dataset at most (HDF5 allows 4 GiB a chunk; chunks stay well below).
constexpr uint64_t kCheckpointMaxChunkElements = uint64_t(1) << 28;

struct CheckpointWritten {
  std::string path;
  uint64_t estimated_bytes = 0;  // the room held before writing (rank 0; 0: none held)
  uint64_t written_bytes = 0;    // the file's size once published
};

// Collective: the engine's state after `steps_done` completed steps of the run `deck` describes.
// The caller's Phase names the run's phase for the watchdog (train/step_hooks.cpp).
CheckpointWritten write_checkpoint(ZeroEngine& engine, const Deck& deck, int64_t steps_done);

// Collective: loads a checkpoint into the state the engine holds; returns the steps it had done.
// Throws zm::Error on every rank naming the file and the cause (missing or truncated file, wrong
// format version, model mismatch, missing dataset, checksum failure).
int64_t load_checkpoint(ZeroEngine& engine, const Deck& deck, const std::string& path);

// train.resume: "" (no resume), "latest" (the newest checkpoint in <output.dir>/checkpoints, or
// none if there is none yet), or a path. Returns the checkpoint path or "".
std::string resolve_resume(const Deck& deck);

std::string checkpoint_dir(const Deck& deck);

// What else reads a checkpoint that a run resumes from: each reader is called on every rank, in
// the order added, with the open file once its model has been checked and before the states are
// read, and with the run's deck and rank count. It may print; a zm::Error refuses the checkpoint
// as any other error reading it does.
using CheckpointReader =
    std::function<void(hid_t file, const std::string& path, const Deck& deck, int64_t ranks)>;
void add_checkpoint_reader(CheckpointReader reader);

}  // namespace zm
