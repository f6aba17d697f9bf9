// Shared by the benchmark files: cleanup that must run before Kokkos and MPI shut down (static
// Views and communicators would otherwise be destroyed after Kokkos::finalize).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/watchdog.hpp"
#include "core/deck.hpp"

namespace zm::bench {

// The watchdog of the benchmark executable: owned by bench_main.cpp's main() (one per process),
// handed to the communicators the benchmarks make.
Watchdog& watchdog();

void before_finalize(std::function<void()> cleanup);
void run_cleanups();

// The MPI communicator over MPI_COMM_WORLD that every benchmark shares, freed before finalize.
Communicator& world_communicator();

// The backend of the Comm/* cases (bench_comm.cpp): "mpi" (the default) or "nccl", from
// `--backend=mpi|nccl` (removed from argv here, before Google Benchmark reads it) or else the
// environment variable ZEROMINI_BENCH_BACKEND. zm::Error for another value, or nccl in a build
// without NCCL. The other benchmarks use world_communicator() (MPI).
void take_backend_option(int& argc, char** argv);
const std::string& comm_bench_backend();

// The training-step benchmarks' model, the configuration the PyTorch comparison uses (L=4,
// C=256, NH=4, T=128, B=8, V=512), with `overrides` ("zero.stage=2", ...).
Deck training_bench_deck(const std::vector<std::string>& overrides);

}  // namespace zm::bench
