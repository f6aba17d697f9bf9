// The manifest of a run: what ran, where and with what, so that a figure can be reproduced and
// compared. results.h5 holds it as the attributes of /manifest (a results group,
// io/results_file.hpp), the run_summary module's summary.json as its "manifest".
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

#include "core/deck.hpp"

namespace zm {

class Watchdog;

struct RunManifest {
  std::string deck_path;
  std::string deck;  // as resolved (every key, defaults and overrides applied)
  std::string zeromini_version, git_revision;
  std::string kokkos_version, kokkos_backends, mpi_library, nccl_version, hdf5_version;
  std::vector<std::string> hostnames;     // per rank
  std::vector<std::string> device_names;  // per rank
  int ranks = 1;
  int nodes = 1;  // distinct host names
  // The size of each model dimension (core/zero_mesh.hpp), by its name, in the order declared.
  std::vector<std::pair<std::string, int>> model_dimensions;
  int data_parallel = 1;
};

// Collective over `comm`: every rank's host and device names are gathered to rank 0, which alone
// holds the lists (the other ranks' are empty).
RunManifest gather_manifest(const Deck& deck, MPI_Comm comm, Watchdog& watchdog);

// The /manifest group of results.h5.
void write_manifest(hid_t file, const RunManifest& manifest);

// The manifest gathered when this process's latest results file was opened (empty before).
const RunManifest& run_manifest();
// Registers /manifest as a group of every results file (register.cpp).
void add_manifest_group();

}  // namespace zm
