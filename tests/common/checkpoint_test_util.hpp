// Shared by the checkpoint tests: a directory all ranks agree on, decks writing there, the fp32
// state of an engine, and a run of steps.
#pragma once

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

}  // namespace zm::testing
