// Shared by the checkpoint tests: a directory all ranks agree on, decks writing there, the fp32
// state of an engine, and a run of steps.
#pragma once

#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/gathered_state.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "io/checkpoint.hpp"
#include "zero/engine.hpp"

namespace zm::testing {

namespace fs = std::filesystem;
using zm::ZeroEngine;

// A directory every rank agrees on (rank 0 picks it).
inline std::string shared_dir(MPI_Comm comm, const std::string& tag) {
  char path[512] = {};
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Barrier(comm);  // nobody may still be using a directory of the same name
  if (rank == 0) {
    const fs::path dir = fs::temp_directory_path() /
                         fmt::format("zeromini-ckpt-{}-{}", tag, static_cast<long>(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::snprintf(path, sizeof(path), "%s", dir.c_str());
  }
  MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, comm);
  return path;
}

inline zm::Deck deck_for(int stage, int64_t micro_batch, const std::string& dir, int64_t steps = 8,
                         const std::string& precision = "fp32",
                         const std::vector<std::string>& extra = {}) {
  std::vector<std::string> overrides = {fmt::format("output.dir={}", dir),
                                        fmt::format("train.steps={}", steps), "output.keep=3",
                                        "train.precision=" + precision};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  return test_deck(stage, micro_batch, 1, overrides);
}

struct State {
  std::vector<float> params, m, v;
  bool operator==(const State& o) const { return params == o.params && m == o.m && v == o.v; }
};

inline State full_state(ZeroEngine& engine) {
  return {gathered_state(engine, StateVector::Params), gathered_state(engine, StateVector::AdamM),
          gathered_state(engine, StateVector::AdamV)};
}

// Runs steps [first, last) and returns their losses.
inline std::vector<double> run_steps(zm::Trainer& trainer, int64_t first, int64_t last) {
  std::vector<double> losses;
  for (int64_t s = first; s < last; ++s) losses.push_back(trainer.step(s).loss);
  return losses;
}

// Steps 0-8 in one run of `deck` against steps 0-4, a checkpoint and steps 4-8 in a fresh trainer:
// losses and the final state bit for bit. Returns the checkpoint's path.
inline std::string expect_exact_resume(const zm::Deck& deck, int stage, zm::Communicator& comm) {
  const auto whole = zm::make_trainer(deck, stage, comm);
  whole->init_parameters();
  const std::vector<double> all_losses = run_steps(*whole, 0, 8);
  const State expected = full_state(whole->engine());

  std::vector<double> losses;
  std::string path;
  {
    const auto first = zm::make_trainer(deck, stage, comm);
    first->init_parameters();
    losses = run_steps(*first, 0, 4);
    path = zm::write_checkpoint(first->engine(), first->deck(), 4).path;
  }
  const auto second = zm::make_trainer(deck, stage, comm);
  EXPECT_EQ(zm::load_checkpoint(second->engine(), second->deck(), path), 4);
  for (double l : run_steps(*second, 4, 8)) losses.push_back(l);
  EXPECT_EQ(losses, all_losses);
  EXPECT_TRUE(full_state(second->engine()) == expected) << "final state differs";
  return path;
}

// The checkpoint at `path` (written after step 4 with the fp32 state `written`; the writer went on
// to the losses `continued` of steps 4-8) read on the first `ranks` ranks of the world at `stage`
// with the deck overrides `extra`: the state bitwise as written, and the next steps' losses near
// the uninterrupted run's (same data and state; only the reduction order differs, see
// test_zero_equivalence).
inline void expect_resumes_on(int ranks, int stage, const std::string& dir, int64_t global_batch,
                              const std::vector<std::string>& extra, const std::string& path,
                              const State& written, const std::vector<double>& continued) {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank < ranks ? 0 : MPI_UNDEFINED, world_rank, &sub);
  if (sub == MPI_COMM_NULL) return;
  {
    auto comm = zm::make_communicator("mpi", sub, zm::testing::watchdog());
    const zm::Deck deck = deck_for(stage, global_batch / ranks, dir, 8, "fp32", extra);
    const auto reader = zm::make_trainer(deck, stage, *comm);
    EXPECT_EQ(zm::load_checkpoint(reader->engine(), reader->deck(), path), 4);
    EXPECT_TRUE(full_state(reader->engine()) == written) << "loaded state differs bitwise";
    const std::vector<double> losses = run_steps(*reader, 4, 8);
    for (size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], continued[i], 1e-5 * continued[i]) << "step " << 4 + i;
  }
  MPI_Comm_free(&sub);
}

inline int64_t shard_size_written(const std::string& path) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t attr = H5Aopen(file, "shard_size", H5P_DEFAULT);
  int64_t value = -1;
  H5Aread(attr, H5T_NATIVE_INT64, &value);
  H5Aclose(attr);
  H5Fclose(file);
  return value;
}

// Written at 4 ranks in shard groups of 2 at stage 3 (`sharding`: the deck override that makes
// them); read back at 3
// ranks, stage 1, one group (the case), at 4 ranks, stage 2, one group, and at 2 ranks,
// stage 3, groups of 1.
inline void check_reshard_from(const std::string& sharding, zm::Communicator& world) {
  const std::string dir = shared_dir(MPI_COMM_WORLD, "hybrid-reshard");
  const int64_t global_batch = 12;
  const zm::Deck written_deck = deck_for(3, global_batch / 4, dir, 8, "fp32", {sharding});
  const auto writer = zm::make_trainer(written_deck, 3, world);
  ASSERT_EQ(writer->comms().mesh().groups(), 2);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
  EXPECT_EQ(shard_size_written(path), 2);
  const State written = full_state(writer->engine());
  const std::vector<double> continued = run_steps(*writer, 4, 8);  // the uninterrupted run

  const struct { int ranks, stage, shard_size; } targets[] = {{3, 1, 0}, {4, 2, 0}, {2, 3, 1}};
  for (const auto& target : targets) {
    SCOPED_TRACE(fmt::format("{} ranks, stage {}, shard_size {}", target.ranks, target.stage,
                             target.shard_size));
    expect_resumes_on(target.ranks, target.stage, dir, global_batch,
                      {fmt::format("zero.shard_size={}", target.shard_size)}, path, written,
                      continued);
  }
}

}  // namespace zm::testing
