#include "modules/provenance/manifest.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "comm/watched_mpi.hpp"
#include "core/build_info.hpp"
#include "core/zero_mesh.hpp"
#include "io/h5.hpp"
#include "io/results_file.hpp"
#include "modules/provenance/device_info.hpp"

namespace zm {

namespace {

constexpr int kNameBytes = 256;

RunManifest& latest() {
  static RunManifest manifest;
  return manifest;
}

// Every rank's `mine` on rank 0 (truncated to kNameBytes - 1 characters); empty elsewhere.
std::vector<std::string> gather_names(const std::string& mine, MPI_Comm comm, Watchdog& watchdog,
                                      const char* what) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  std::vector<char> send(kNameBytes, '\0');
  mine.copy(send.data(), kNameBytes - 1);
  std::vector<char> all(static_cast<size_t>(kNameBytes) * static_cast<size_t>(ranks));
  watched_gather(watchdog, send.data(), kNameBytes, MPI_CHAR, all.data(), 0, comm,
                 fmt::format("the gather of {}", what));
  std::vector<std::string> names;
  if (rank == 0)
    for (int r = 0; r < ranks; ++r) names.emplace_back(all.data() + kNameBytes * r);
  return names;
}

}  // namespace

RunManifest gather_manifest(const Deck& deck, MPI_Comm comm, Watchdog& watchdog) {
  RunManifest m;
  m.deck_path = deck.path;
  m.deck = deck.resolved_toml();
  m.zeromini_version = zeromini_version();
  m.git_revision = git_revision();
  m.kokkos_version = build_features().kokkos_version;
  m.kokkos_backends = kokkos_backends();
  m.mpi_library = mpi_library_version();
  m.nccl_version = nccl_version();
  m.hdf5_version = hdf5_version();
  char host[kNameBytes] = {};
  gethostname(host, sizeof(host) - 1);
  m.hostnames = gather_names(host, comm, watchdog, "host names");
  m.device_names = gather_names(this_device_name(), comm, watchdog, "device names");
  MPI_Comm_size(comm, &m.ranks);
  m.nodes = static_cast<int>(std::set<std::string>(m.hostnames.begin(), m.hostnames.end()).size());
  for (const ModelDimension& d : model_dimensions())
    m.model_dimensions.emplace_back(d.name, static_cast<int>(deck.value<int64_t>(d.key)));
  m.data_parallel = m.ranks / static_cast<int>(model_parallel_size(deck));
  return m;
}

void write_manifest(hid_t file, const RunManifest& m) {
  h5::Handle group = h5::create_group(file, "manifest");
  h5::write_attr(group, "deck_path", m.deck_path);
  h5::write_attr(group, "deck", m.deck);
  h5::write_attr(group, "zeromini_version", m.zeromini_version);
  h5::write_attr(group, "git_revision", m.git_revision);
  h5::write_attr(group, "kokkos_version", m.kokkos_version);
  h5::write_attr(group, "kokkos_backends", m.kokkos_backends);
  h5::write_attr(group, "mpi_library", m.mpi_library);
  h5::write_attr(group, "nccl_version", m.nccl_version);
  h5::write_attr(group, "hdf5_version", m.hdf5_version);
  h5::write_attr(group, "hostnames", m.hostnames);
  h5::write_attr(group, "device_names", m.device_names);
  h5::write_attr(group, "ranks", static_cast<int64_t>(m.ranks));
  h5::write_attr(group, "nodes", static_cast<int64_t>(m.nodes));
  for (const auto& [name, size] : m.model_dimensions)
    h5::write_attr(group, name, static_cast<int64_t>(size));
  h5::write_attr(group, "data_parallel", static_cast<int64_t>(m.data_parallel));
}

const RunManifest& run_manifest() {
  return latest();
}

void add_manifest_group() {
  add_results_group([](const Deck& deck, MPI_Comm comm, Watchdog& watchdog) -> ResultsGroupWrite {
    latest() = gather_manifest(deck, comm, watchdog);
    return [manifest = latest()](hid_t file) { write_manifest(file, manifest); };
  });
}

}  // namespace zm
