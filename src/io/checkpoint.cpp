#include "io/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "comm/agree.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "io/file_integrity.hpp"
#include "io/h5.hpp"

namespace zm {

namespace fs = std::filesystem;

namespace {

// Largest chunk HDF5 allows is 4 GiB; keep chunks well below.
constexpr hsize_t kMaxChunkElements = hsize_t(1) << 28;

const char* const kStates[] = {"params", "adam_m", "adam_v"};

std::string unit_dataset(const char* state, int u) {
  return fmt::format("{}/unit_{:04d}", state, u);
}

float* state_at(ZeroEngine& engine, int state, int u, int64_t e) {
  switch (state) {
    case 0:
      return engine.master_at(u, e);  // fp32 whatever the compute precision
    case 1:
      return engine.adam_m_at(u, e);
    default:
      return engine.adam_v_at(u, e);
  }
}

Storage storage_of(const ZeroEngine& engine, int state) {
  return state == 0 ? engine.master_storage() : engine.optimizer_storage();
}

using HostBuffer = Kokkos::View<float*, HostSpace>;
using DeviceSpan = Kokkos::View<float*, MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Makes every rank fail together: if any rank caught an error, all throw the first failing
// rank's message, so that every rank reports the cause.
void agree_or_fail(MPI_Comm comm, const std::string& error) {
  const Agreement outcome = agree(comm, error);
  if (!outcome.ok()) throw CollectiveError(outcome.message);
}

void write_metadata(hid_t file, const ZeroEngine& engine, const Deck& deck, int64_t steps_done) {
  const ModelConfig& m = deck.model;
  h5::write_attr(file, "format_version", kCheckpointFormatVersion);
  h5::write_attr(file, "step", steps_done);
  h5::write_attr(file, "model.layers", m.layers);
  h5::write_attr(file, "model.heads", m.heads);
  h5::write_attr(file, "model.dim", m.dim);
  h5::write_attr(file, "model.vocab", m.vocab);
  h5::write_attr(file, "model.seq_len", m.seq_len);
  h5::write_attr(file, "deck", deck.resolved_toml());
  h5::write_attr(file, "stage", static_cast<int64_t>(engine.stage()));
  // The states are fp32 whatever the run computed in (under bf16: the master weights).
  h5::write_attr(file, "precision", std::string(precision_name(deck.train.precision)));
  h5::write_attr(file, "ranks", static_cast<int64_t>(engine.plan().ranks()));
  // Data is addressed by global sequence index, so its position is the step count; the RNG is
  // counter-based (seed, index), so its state is the seed.
  h5::write_attr(file, "data_position_step", steps_done);
  h5::write_attr(file, "data_source", deck.data.source);
  h5::write_attr(file, "rng_seed", deck.train.seed);
  h5::write_attr(file, "rng", std::string("counter-based: value = f(seed, global index)"));
  h5::write_attr(file, "adam_step", steps_done);
  h5::write_attr(file, "git_revision", git_revision());
  h5::write_attr(file, "units",
                 std::string("fp32 parameters and Adam moments per unit, "
                             "logical length (no partition padding)"));
}

void prune(const fs::path& dir, int64_t keep) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0 && entry.path().extension() == ".h5")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < files.size(); ++i) fs::remove(files[i]);
}

// The storage zeromini writes, checked before any data is read: little-endian fp32, chunked,
// Fletcher32 as the only filter, and every stored chunk exactly one chunk of data plus its 4-byte
// checksum. A file that differs (damaged metadata, or not written by zeromini) is refused here
// rather than handed to the HDF5 library's read path.
void validate_storage(hid_t set, const std::string& path, const std::string& name) {
  auto refuse = [&](const std::string& why) {
    fail(
        "{}: dataset {} is not stored as zeromini writes it ({}); the file is damaged or not a "
        "zeromini checkpoint",
        path, name, why);
  };
  h5::Handle type(H5Dget_type(set));
  if (!type.valid() || H5Tequal(type, H5T_IEEE_F32LE) <= 0) refuse("not little-endian fp32");
  h5::Handle dcpl(H5Dget_create_plist(set));
  if (!dcpl.valid() || H5Pget_layout(dcpl) != H5D_CHUNKED) refuse("not chunked");
  hsize_t chunk = 0;
  if (H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0 || chunk > kMaxChunkElements)
    refuse("unexpected chunk shape");
  unsigned flags = 0;
  size_t values = 0;
  if (H5Pget_nfilters(dcpl) != 1 || H5Pget_filter2(dcpl, 0, &flags, &values, nullptr, 0, nullptr,
                                                   nullptr) != H5Z_FILTER_FLETCHER32)
    refuse("no Fletcher32 checksum");
  h5::Handle space(H5Dget_space(set));
  hsize_t chunks = 0;
  if (H5Dget_num_chunks(set, space, &chunks) < 0) refuse("unreadable chunk index");
  hsize_t size = 0;
  H5Sget_simple_extent_dims(space, &size, nullptr);
  if (chunks != (size + chunk - 1) / chunk) refuse("missing chunks");
  for (hsize_t i = 0; i < chunks; ++i) {
    hsize_t offset = 0, stored = 0;
    unsigned mask = 0;
    haddr_t address = HADDR_UNDEF;
    if (H5Dget_chunk_info(set, space, i, &offset, &mask, &address, &stored) < 0 ||
        address == HADDR_UNDEF || stored != chunk * sizeof(float) + 4 || mask != 0)
      refuse("chunk " + std::to_string(i) + " has the wrong size or filters");
  }
}

// One state's dataset of unit u: created whole by every rank, each writing the slice it owns.
void write_unit_state(hid_t file, hid_t xfer, ZeroEngine& engine, int s, int u,
                      const std::string& temporary) {
  const PartitionPlan& plan = engine.plan();
  const hsize_t size = static_cast<hsize_t>(plan.unit(u).size);
  const auto [begin, end] = plan.owned_range(u, engine.comm().rank());
  const hsize_t start = static_cast<hsize_t>(begin), count = static_cast<hsize_t>(end - begin);
  h5::Handle space(H5Screate_simple(1, &size, nullptr));
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  const hsize_t chunk = std::min(size, kMaxChunkElements);
  H5Pset_chunk(dcpl, 1, &chunk);
  H5Pset_fletcher32(dcpl);
  const std::string name = unit_dataset(kStates[s], u);
  h5::Handle set(
      H5Dcreate2(file, name.c_str(), H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
  if (!set.valid()) fail("{}: cannot create {}: {}", temporary, name, h5::last_error());
  h5::Handle file_space(H5Dget_space(set));
  HostBuffer host("checkpoint_slice", count);
  if (count > 0) {
    H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    Kokkos::deep_copy(host, DeviceSpan(state_at(engine, s, u, begin), count));
  } else {
    H5Sselect_none(file_space);
  }
  const hsize_t memory_count = std::max<hsize_t>(count, 1);
  h5::Handle memory_space(H5Screate_simple(1, &memory_count, nullptr));
  if (count == 0) H5Sselect_none(memory_space);
  if (H5Dwrite(set, H5T_NATIVE_FLOAT, memory_space, file_space, xfer, host.data()) < 0)
    fail("{}: writing {} failed: {}", temporary, name, h5::last_error());
}

// Rank 0: the sealed file under its final name, then the `latest` pointer, then older
// checkpoints pruned. Returns "" or what failed.
std::string publish(const fs::path& final_path, int64_t keep) {
  const fs::path dir = final_path.parent_path();
  const fs::path temporary = fs::path(final_path.string() + ".tmp");
  try {
    fs::rename(temporary, final_path);
    const fs::path latest_tmp = dir / "latest.tmp";
    {
      std::ofstream latest(latest_tmp, std::ios::trunc);
      latest << final_path.filename().string() << "\n";
      if (!latest) throw Error("cannot write " + latest_tmp.string());
    }
    fs::rename(latest_tmp, dir / "latest");
    prune(dir, keep);
  } catch (const std::exception& e) {
    return fmt::format("{}: publishing the checkpoint failed: {}", final_path.string(), e.what());
  }
  return "";
}

// The format version and the model's shape; returns the steps the checkpoint had done.
int64_t check_header(hid_t file, const std::string& path, const ModelConfig& m) {
  auto attr_int = [&](const std::string& name) {
    if (!h5::has_attr(file, name))
      fail("{}: not a zeromini checkpoint (no '{}' attribute)", path, name);
    return h5::read_attr_int(file, name);
  };
  const int64_t version = attr_int("format_version");
  if (version != kCheckpointFormatVersion)
    fail("{}: checkpoint format version {} is not supported (this build reads version {})", path,
         version, kCheckpointFormatVersion);
  const std::pair<const char*, int64_t> expected[] = {{"model.layers", m.layers},
                                                      {"model.heads", m.heads},
                                                      {"model.dim", m.dim},
                                                      {"model.vocab", m.vocab},
                                                      {"model.seq_len", m.seq_len}};
  for (const auto& [key, value] : expected) {
    const int64_t stored = attr_int(key);
    if (stored != value)
      fail("{}: model mismatch: the checkpoint has {} = {} but the deck has {}", path, key, stored,
           value);
  }
  return attr_int("step");
}

// One state's dataset of unit u checked, and the part this rank holds under the current stage
// and rank count read into the engine.
void read_unit_state(hid_t file, ZeroEngine& engine, int s, int u, const std::string& path) {
  const PartitionPlan& plan = engine.plan();
  const std::string name = unit_dataset(kStates[s], u);
  if (!h5::exists(file, name)) fail("{}: missing dataset {}", path, name);
  h5::Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  h5::Handle file_space(H5Dget_space(set));
  hsize_t size = 0;
  if (H5Sget_simple_extent_ndims(file_space) != 1 ||
      H5Sget_simple_extent_dims(file_space, &size, nullptr) != 1 ||
      size != static_cast<hsize_t>(plan.unit(u).size))
    fail("{}: dataset {} has {} elements, the model's unit {} has {}", path, name, size, u,
         plan.unit(u).size);
  validate_storage(set, path, name);
  // Read what this rank holds under the current stage and rank count.
  const auto [begin, end] = engine.held_range(storage_of(engine, s), u);
  const hsize_t start = static_cast<hsize_t>(begin), count = static_cast<hsize_t>(end - begin);
  if (count == 0) return;
  H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
  h5::Handle memory_space(H5Screate_simple(1, &count, nullptr));
  HostBuffer host("checkpoint_slice", count);
  if (H5Dread(set, H5T_NATIVE_FLOAT, memory_space, file_space, H5P_DEFAULT, host.data()) < 0)
    fail("{}: reading {} failed (corrupted or truncated file): {}", path, name, h5::last_error());
  Kokkos::deep_copy(DeviceSpan(state_at(engine, s, u, begin), count), host);
}

}  // namespace

std::string checkpoint_dir(const Deck& deck) {
  return deck.output.dir + "/checkpoints";
}

std::string write_checkpoint(ZeroEngine& engine, const Deck& deck, int64_t steps_done) {
  MPI_Comm comm = engine.comm().mpi_comm();
  const int rank = engine.comm().rank();
  const fs::path dir = checkpoint_dir(deck);
  const fs::path final_path = dir / fmt::format("step_{:08d}.h5", steps_done);
  const fs::path temporary = fs::path(final_path.string() + ".tmp");
  std::string error;
  try {
    if (rank == 0) fs::create_directories(dir);
  } catch (const std::exception& e) {
    error = fmt::format("{}: cannot create the checkpoint directory: {}", dir.string(), e.what());
  }
  agree_or_fail(comm, error);

  Kokkos::fence();
  const uint64_t user_block = integrity_user_block_size(
      static_cast<uint64_t>(12 * engine.plan().layout().total()) + (16u << 20));
  {
    h5::Handle file = h5::create_file(temporary.string(), &comm, user_block);
    write_metadata(file, engine, deck, steps_done);
    h5::Handle xfer(H5Pcreate(H5P_DATASET_XFER));
    H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
    for (const char* state : kStates) h5::create_group(file, state);
    const PartitionPlan& plan = engine.plan();
    for (int u = 0; u < plan.num_units(); ++u)
      for (int state = 0; state < 3; ++state)
        write_unit_state(file, xfer, engine, state, u, temporary.string());
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) fail("{}: flush failed", temporary.string());
  }
  MPI_Barrier(comm);
  seal_file(temporary.string(), user_block, comm);
  // Fault injection for the crash-safety test: die after the data is written, before it is
  // published under its final name.
  if (const char* crash = std::getenv("ZEROMINI_TEST_CRASH_BEFORE_RENAME"))
    if (std::atoll(crash) == steps_done && rank == 0) std::raise(SIGKILL);
  if (rank == 0) error = publish(final_path, deck.output.keep);
  agree_or_fail(comm, error);
  return final_path.string();
}

std::string resolve_resume(const Deck& deck) {
  const std::string& resume = deck.train.resume;
  if (resume.empty()) return "";
  if (resume != "latest") return resume;
  const fs::path pointer = fs::path(checkpoint_dir(deck)) / "latest";
  std::ifstream in(pointer);
  if (!in) return "";  // nothing written yet: a fresh start
  std::string name;
  std::getline(in, name);
  if (name.empty()) fail("{}: empty 'latest' pointer", pointer.string());
  return (fs::path(checkpoint_dir(deck)) / name).string();
}

int64_t load_checkpoint(ZeroEngine& engine, const Deck& deck, const std::string& path) {
  MPI_Comm comm = engine.comm().mpi_comm();
  int64_t steps_done = 0;
  std::string error;
  try {
    if (!fs::exists(path)) fail("{}: checkpoint not found", path);
  } catch (const Error& e) {
    error = e.what();
  }
  agree_or_fail(comm, error);
  // The whole file is verified before the HDF5 library parses any of it.
  agree_or_fail(comm, verify_file(path, comm));
  try {
    h5::Handle file = h5::open_file(path);
    steps_done = check_header(file, path, deck.model);
    const PartitionPlan& plan = engine.plan();
    for (int u = 0; u < plan.num_units(); ++u)
      for (int state = 0; state < 3; ++state) read_unit_state(file, engine, state, u, path);
  } catch (const Error& e) {
    error = e.what();
  }
  agree_or_fail(comm, error);
  engine.masters_written();  // bf16: the compute parameters are the rounding of the masters
  Kokkos::fence();
  return steps_done;
}

}  // namespace zm
