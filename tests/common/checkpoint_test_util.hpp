// Shared by the checkpoint tests: a directory all ranks agree on, decks writing there, the fp32
// state of an engine, and a run of steps.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/zero_test_util.hpp"
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
  return {engine.full_state(ZeroEngine::State::Params), engine.full_state(ZeroEngine::State::AdamM),
          engine.full_state(ZeroEngine::State::AdamV)};
}

// Runs steps [first, last) and returns their losses.
inline std::vector<double> run_steps(zm::Trainer& trainer, int64_t first, int64_t last) {
  std::vector<double> losses;
  for (int64_t s = first; s < last; ++s) losses.push_back(trainer.step(s).loss);
  return losses;
}

}  // namespace zm::testing
