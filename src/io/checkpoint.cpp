#include "io/checkpoint.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "comm/agree.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/regular_file.hpp"
#include "io/checkpoint_format.hpp"
#include "io/checkpoint_runs.hpp"
#include "io/file_integrity.hpp"
#include "io/h5.hpp"
#include "io/resume_check.hpp"

namespace zm {

namespace fs = std::filesystem;

using namespace checkpoint_format;

namespace {

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

// What the resumed run changes against the one that wrote the checkpoint (resume_check.hpp).
void warn_about_changes(hid_t file, const std::string& path, const Deck& deck, int64_t ranks) {
  if (!h5::has_attr(file, "deck") || !h5::has_attr(file, "ranks")) return;
  const Deck written = parse_deck(h5::read_attr_string(file, "deck"),
                                  path + " (the deck it was written with)", {}, BuildChecks::Skip);
  for (const std::string& change :
       resume_changes(written, h5::read_attr_int(file, "ranks"), deck, ranks))
    log_root("warning: resuming from {}: {}\n", path, change);
}

// One state's dataset of unit u checked, and the part this rank holds under the current stage,
// rank count and tp degree read into the engine from where its slice lies in the whole model.
void read_unit_state(hid_t file, ZeroEngine& engine, int s, int u, const std::string& path) {
  const Partition& partition = engine.partition();
  const std::string name = unit_dataset(kStates[s], u);
  if (!h5::exists(file, name)) fail("{}: missing dataset {}", path, name);
  h5::Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  h5::Handle file_space(H5Dget_space(set));
  hsize_t size = 0;
  const int64_t whole = partition.layout().unit(u).global_size;
  if (H5Sget_simple_extent_ndims(file_space) != 1 ||
      H5Sget_simple_extent_dims(file_space, &size, nullptr) != 1 ||
      size != static_cast<hsize_t>(whole))
    fail("{}: dataset {} has {} elements, the model's unit {} has {}", path, name, size, u, whole);
  validate_storage(set, path, name);
  const auto [begin, end] = engine.held_range(storage_of(engine, s), u);
  const hsize_t count = static_cast<hsize_t>(end - begin);
  if (count == 0) return;
  const std::vector<TpRun> runs =
      unit_runs(partition, engine.tp_rank(), u, begin, end, Replicated::Include);
  select_runs(file_space, runs, Side::File);
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

std::string resolve_resume(const Deck& deck) {
  const std::string& resume = deck.train.resume;
  if (resume.empty()) return "";
  if (resume != "latest") return resume;
  const fs::path pointer = fs::path(checkpoint_dir(deck)) / "latest";
  if (!fs::exists(pointer)) return "";  // nothing written yet: a fresh start
  require_regular_file(pointer.string(), "'latest' checkpoint pointer");
  std::ifstream in(pointer);
  std::string name;
  std::getline(in, name);
  if (name.empty()) fail("{}: empty 'latest' pointer", pointer.string());
  return (fs::path(checkpoint_dir(deck)) / name).string();
}

int64_t load_checkpoint(ZeroEngine& engine, const Deck& deck, const std::string& path) {
  MPI_Comm comm = engine.comms().world().mpi_comm();
  Watchdog& watchdog = engine.comms().world().watchdog();
  int64_t steps_done = 0;
  std::string error;
  try {
    if (!fs::exists(path)) fail("{}: checkpoint not found", path);
    // Before any open: a FIFO would block it.
    require_regular_file(path, "checkpoint to resume from (train.resume)");
  } catch (const Error& e) {
    error = e.what();
  }
  agree_or_fail(watchdog, comm, error, "finding the checkpoint");
  // The whole file is verified before the HDF5 library parses any of it.
  agree_or_fail(watchdog, comm, verify_file(path, comm, watchdog), "verifying the checkpoint");
  try {
    BlockingRegion region(watchdog, "reading " + path, kLocalRegion, WaitKind::Io);
    h5::Handle file = h5::open_file(path);
    steps_done = check_header(file, path, deck.model);
    warn_about_changes(file, path, deck, engine.comms().mesh().world());
    const Partition& partition = engine.partition();
    for (int u = 0; u < partition.num_units(); ++u)
      for (int state = 0; state < kStateCount; ++state)
        read_unit_state(file, engine, state, u, path);
  } catch (const Error& e) {
    error = e.what();
  }
  agree_or_fail(watchdog, comm, error, "reading the checkpoint");
  engine.masters_written();  // bf16: the compute parameters are the rounding of the masters
  Kokkos::fence();
  return steps_done;
}

}  // namespace zm
