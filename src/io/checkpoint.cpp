// A checkpoint (checkpoint.hpp): its format, which the writer and the reader share (the datasets,
// where each state lives in the engine, where a rank's part lies in the file), writing and reading.
#include "io/checkpoint.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "comm/agree.hpp"
#include "comm/watchdog.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "core/fault_points.hpp"
#include "core/registry.hpp"
#include "core/regular_file.hpp"
#include "io/checkpoint_guard.hpp"
#include "io/durable_file.hpp"
#include "io/h5.hpp"
#include "model/layout.hpp"
#include "zero/partition.hpp"

namespace zm {

namespace fs = std::filesystem;

namespace {

constexpr int kStateCount = 3;
const char* const kStates[kStateCount] = {"params", "adam_m", "adam_v"};

std::string unit_dataset(const char* state, int u) {
  return fmt::format("{}/unit_{:04d}", state, u);
}

const Placement& storage_of(const ZeroEngine& engine, int state) {
  return state == 0 ? engine.master_storage() : engine.optimizer_storage();
}

// The model's shape as attributes, which a checkpoint must match to be read.
std::vector<std::pair<std::string, int64_t>> model_attributes(const ModelConfig& m) {
  return {{"model.layers", m.layers},
          {"model.heads", m.heads},
          {"model.dim", m.dim},
          {"model.vocab", m.vocab},
          {"model.seq_len", m.seq_len}};
}

using HostBuffer = Kokkos::View<float*, HostSpace>;

// Where a rank's part of a unit lies in a checkpoint. Each unit's dataset holds the whole model's
// unit (UnitInfo::global_size elements), while a rank of a model held in slices holds one slice
// of every cut tensor (model/layout.hpp): a range of the rank's unit maps to runs in the dataset,
// selected as one HDF5 hyperslab union.

// Whether the tensors every rank of a model-parallel group holds whole (held_whole) are included:
// a reader takes them on every rank, a writer on the group's first only (each element written
// once).
enum class Replicated { Include, Skip };

// The runs covering elements [begin, end) of unit u of slice `slice_rank`: SliceRun::local is the
// offset in the rank's unit, SliceRun::global in the unit's dataset. Both increase along the
// sequence, which lets the file's selection pair element by element with the memory's.
std::vector<SliceRun> unit_runs(const Partition& partition, int slice_rank, int u, int64_t begin,
                                int64_t end, Replicated replicated) {
  const ParamLayout& layout = partition.layout();
  std::vector<SliceRun> runs;
  if (begin >= end) return runs;
  for (const TensorSegment& seg : partition.segments(u, begin, end)) {
    const TensorInfo& t = layout.tensors()[static_cast<size_t>(seg.tensor)];
    if (held_whole(t) && replicated == Replicated::Skip) continue;
    for (const SliceRun& run : slice_runs(t, layout.slices(), slice_rank, seg.tensor_offset,
                                          seg.tensor_offset + seg.length)) {
      const SliceRun in_unit{run.local + t.offset - layout.unit(u).dataset_offset,
                             run.global + t.global_offset, run.length};
      // Runs that continue the previous one on both sides are one (of a whole model: one run).
      if (!runs.empty() && runs.back().local + runs.back().length == in_unit.local &&
          runs.back().global + runs.back().length == in_unit.global) {
        runs.back().length += in_unit.length;
        continue;
      }
      // Pairing file and memory selections element by element relies on this order.
      if (!runs.empty() && (in_unit.local < runs.back().local + runs.back().length ||
                            in_unit.global < runs.back().global + runs.back().length))
        throw std::logic_error("checkpoint runs out of order in unit " + std::to_string(u));
      runs.push_back(in_unit);
    }
  }
  return runs;
}

// Selects in the 1-D dataspace `space` the runs' file positions (SliceRun::global) or memory
// positions (SliceRun::local - base), as few strided hyperslabs as the runs allow (none: nothing).
enum class Side { File, Memory };
void select_runs(hid_t space, const std::vector<SliceRun>& runs, Side side, int64_t base = 0) {
  auto at = [&](size_t i) { return side == Side::File ? runs[i].global : runs[i].local - base; };
  H5Sselect_none(space);
  bool first = true;
  for (size_t i = 0; i < runs.size();) {
    // The longest stretch of equally long runs at equal spacing is one strided hyperslab (a
    // weight cut along its columns: one per stretch, not one per row).
    const int64_t length = runs[i].length;
    size_t count = 1;
    int64_t stride = length;
    if (i + 1 < runs.size() && runs[i + 1].length == length) {
      stride = at(i + 1) - at(i);
      while (i + count < runs.size() && runs[i + count].length == length &&
             at(i + count) - at(i + count - 1) == stride)
        ++count;
    }
    if (count == 1) stride = length;
    const hsize_t start = static_cast<hsize_t>(at(i)), step = static_cast<hsize_t>(stride),
                  blocks = count, block = static_cast<hsize_t>(length);
    H5Sselect_hyperslab(space, first ? H5S_SELECT_SET : H5S_SELECT_OR, &start, &step, &blocks,
                        &block);
    first = false;
    i += count;
  }
}

// Writing: every step that can fail on one rank ends with an agreement under the watchdog, so
// that all ranks go on together or stop together with the first failing rank's message, close
// what they opened, and leave no partial file behind.

void write_metadata(hid_t file, const ZeroEngine& engine, const Deck& deck, int64_t steps_done) {
  h5::write_attr(file, "format_version", kCheckpointFormatVersion);
  h5::write_attr(file, "step", steps_done);
  for (const auto& [key, value] : model_attributes(deck.model)) h5::write_attr(file, key, value);
  h5::write_attr(file, "deck", deck.resolved_toml());
  h5::write_attr(file, "stage", static_cast<int64_t>(engine.stage()));
  // The states are fp32 whatever the run computed in (under bf16: the master weights).
  h5::write_attr(file, "precision", std::string(precision_name(deck.train.precision)));
  h5::write_attr(file, "ranks", static_cast<int64_t>(engine.mesh().world()));
  // Ranks per shard group (hybrid sharding), informational: every unit is stored whole.
  h5::write_attr(file, "shard_size", static_cast<int64_t>(engine.mesh().group_ranks()));
  // A sub-sharded optimizer: the optimizer state spans all ranks, the shard groups' the parameters.
  h5::write_attr(file, "sub_sharded", static_cast<int64_t>(engine.mesh().sub_sharded() ? 1 : 0));
  // The model dimensions' sizes (core/zero_mesh.hpp) by name, informational too.
  const DeviceMesh& mesh = engine.mesh().mesh;
  for (int d = kFirstModelDim; d < mesh.ndims(); ++d)
    h5::write_attr(file, mesh.dim(d).name, static_cast<int64_t>(mesh.dim(d).size));
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
                             "logical length (no partition padding), whole model (uncut)"));
}

// The whole model's units in dataset order, which every rank walks alike (creating and writing a
// dataset is collective) whatever part of the model it holds (ModelPart). `held`: the rank's unit
// there, if it writes one; a unit another part holds first (ParamLayout::holds_copy) is not.
struct WholeUnit {
  int dataset = 0;
  int64_t dataset_offset = 0, dataset_size = 0, global_size = 0;
  int held = -1;
};
std::vector<WholeUnit> whole_units(const ParamLayout& layout) {
  const ParamLayout whole(layout.config(), layout.scheme(), layout.slices());
  std::vector<WholeUnit> units;
  for (const UnitInfo& unit : whole.units())
    units.push_back({unit.dataset, unit.dataset_offset, unit.dataset_size, unit.global_size});
  for (int u = 0; u < layout.num_units(); ++u)
    for (WholeUnit& unit : units)
      if (!layout.holds_copy(u) && unit.dataset == layout.unit(u).dataset &&
          unit.dataset_offset == layout.unit(u).dataset_offset)
        unit.held = u;
  return units;
}

// One state's dataset of a unit of the whole model, created whole by every rank, each writing
// what it owns of its slice of the unit it holds (none: nothing): the first shard group's ranks
// their shards, with a sub-sharded optimizer every rank its sub-shard of the optimizer state; of
// the tensors a model-parallel group holds whole, its first rank alone.
void write_unit_state(hid_t file, hid_t xfer, ZeroEngine& engine, int s, const WholeUnit& unit,
                      const std::string& temporary) {
  const Partition& partition = engine.partition();
  const hsize_t size = static_cast<hsize_t>(unit.dataset_size);
  int64_t begin = 0, end = 0;
  std::vector<SliceRun> runs;
  if (const int u = unit.held; u >= 0) {
    const Placement& placement = storage_of(engine, s);
    const bool over_replicas = placement.shards(kReplicateDim);
    std::tie(begin, end) = over_replicas ? engine.held_range(placement, u)
                                         : partition.owned_range(u, engine.comm().rank());
    const int replica = engine.mesh().mesh.coordinate(engine.comms().world().rank(), kReplicateDim);
    if (!over_replicas && replica != 0) end = begin;
    runs =
        unit_runs(partition, engine.slice_rank(), u, begin, end,
                  counts_held_alike(engine.slice_rank()) ? Replicated::Include : Replicated::Skip);
  }
  const hsize_t count = static_cast<hsize_t>(std::max<int64_t>(end - begin, 0));
  h5::Handle space(H5Screate_simple(1, &size, nullptr));
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  const hsize_t chunk = std::min<hsize_t>(size, kCheckpointMaxChunkElements);
  H5Pset_chunk(dcpl, 1, &chunk);
  H5Pset_fletcher32(dcpl);
  const std::string name = unit_dataset(kStates[s], unit.dataset);
  // A block's tiles (model.tiles) write into its one dataset, created by the first.
  h5::Handle set(unit.dataset_offset == 0 ? H5Dcreate2(file, name.c_str(), H5T_NATIVE_FLOAT, space,
                                                       H5P_DEFAULT, dcpl, H5P_DEFAULT)
                                          : H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  if (!set.valid()) fail("{}: cannot create {}: {}", temporary, name, h5::last_error());
  // The owned range on the host; the runs pick what of it is written, and where.
  HostBuffer host("checkpoint_slice", count);
  if (count > 0)
    engine.copy_state(s, unit.held, begin, static_cast<int64_t>(count), host.data(), true);
  h5::Handle file_space(H5Dget_space(set));
  select_runs(file_space, runs, Side::File);
  const hsize_t memory_count = std::max<hsize_t>(count, 1);
  h5::Handle memory_space(H5Screate_simple(1, &memory_count, nullptr));
  select_runs(memory_space, runs, Side::Memory, begin);
  if (H5Dwrite(set, H5T_NATIVE_FLOAT, memory_space, file_space, xfer, host.data()) < 0)
    fail("{}: writing {} failed: {}", temporary, name, h5::last_error());
}

// The newest `keep` checkpoints stay, and so do the one just written and the one 'latest' names
// whatever their step numbers.
void prune(const fs::path& dir, int64_t keep, const fs::path& just_written) {
  std::string latest;
  std::ifstream(dir / "latest") >> latest;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0 && entry.path().extension() == ".h5")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < files.size(); ++i)
    if (files[i] != just_written && files[i].filename().string() != latest) fs::remove(files[i]);
}

// One checkpoint on its way to disk.
class CheckpointWrite {
 public:
  CheckpointWrite(ZeroEngine& engine, const Deck& deck, int64_t steps_done)
      : engine_(engine),
        deck_(deck),
        steps_done_(steps_done),
        comm_(engine.comms().world().mpi_comm()),
        watchdog_(engine.comms().world().watchdog()),
        rank_(engine.comms().world().rank()),
        dir_(checkpoint_dir(deck)),
        final_(dir_ / fmt::format("step_{:08d}.h5", steps_done)),
        temporary_(final_.string() + ".tmp"),
        units_(whole_units(engine.partition().layout())) {
    // About the file's size: three fp32 states of the whole model, and 16 MiB.
    const int64_t states = 12 * engine.partition().layout().global_total();
    user_block_ = checkpoint_header_bytes(static_cast<uint64_t>(states) + (16u << 20));
  }

  CheckpointWritten write() {
    std::string error = prepare();
    if (error.empty()) error = write_file();
    if (error.empty()) error = guard_written_checkpoint(temporary_, user_block_, comm_, watchdog_);
    fault_point("checkpoint.publish", rank_, steps_done_);
    if (error.empty()) error = publish();
    if (!error.empty()) {
      if (rank_ == 0) ::unlink(temporary_.c_str());
      throw IoError(fmt::format(
          "the checkpoint after step {} was not written: {}. The previous checkpoint and "
          "'latest' are untouched.",
          steps_done_, error));
    }
    CheckpointWritten written{final_.string(), room_ ? room_->estimated_bytes() : 0, 0};
    std::error_code unknown;
    const uintmax_t size = fs::file_size(final_, unknown);
    if (!unknown) written.written_bytes = static_cast<uint64_t>(size);
    return written;
  }

 private:
  // Runs `work` on every rank, catching its error, then agrees on the outcome.
  template <typename Work>
  std::string collective_step(const std::string& what, Work&& work) {
    std::string error;
    {
      BlockingRegion region(watchdog_, what + " (" + temporary_ + ")",
                            watchdog_.sequence_for(comm_), WaitKind::Io);
      try {
        work();
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    return agree(watchdog_, comm_, error, what).message;
  }

  // The directory, and room on its file system for the whole file (rank 0).
  std::string prepare() {
    std::string error;
    if (rank_ == 0) {
      BlockingRegion region(watchdog_, "creating and sizing " + dir_.string(), kLocalRegion,
                            WaitKind::Io);
      std::error_code failed;
      fs::create_directories(dir_, failed);
      room_ = make_checkpoint_room();
      // The data bytes of each dataset, in the order written.
      std::vector<uint64_t> dataset_bytes;
      for (const WholeUnit& unit : units_)
        dataset_bytes.insert(dataset_bytes.end(), kStateCount,
                             4 * static_cast<uint64_t>(unit.global_size));
      if (failed)
        error = fmt::format("cannot create {}: {}", dir_.string(), failed.message());
      else if (room_)
        error = room_->hold(dir_.string(), user_block_, dataset_bytes);
    }
    return agree(watchdog_, comm_, error, "the checkpoint's directory and space").message;
  }

  std::string write_file() {
    h5::Handle file, xfer;
    if (room_) room_->before_part(0);  // rank 0: the room held for the part (checkpoint_guard.hpp)
    std::string error = collective_step("creating the HDF5 file", [&] {
      file = h5::create_file(temporary_, &comm_, user_block_);
      write_metadata(file, engine_, deck_, steps_done_);
      for (const char* state : kStates) h5::create_group(file, state);
      xfer = h5::Handle(H5Pcreate(H5P_DATASET_XFER));
      H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
    });
    const size_t units = units_.size();
    for (size_t u = 0; u < units && error.empty(); ++u)
      for (int s = 0; s < kStateCount && error.empty(); ++s) {
        if (room_) room_->before_part(1 + u * kStateCount + static_cast<size_t>(s));
        const int dataset = units_[u].dataset;
        error = collective_step(fmt::format("writing {}", unit_dataset(kStates[s], dataset)), [&] {
          const bool last = u == units - 1 && s == 0;
          if (last) fault_point("checkpoint.unit", rank_, steps_done_);
          write_unit_state(file, xfer, engine_, s, units_[u], temporary_);
          if (last) fault_point("checkpoint.written", rank_, steps_done_, temporary_);
        });
      }
    if (room_) room_->release_all();  // the metadata, written by the flush and the close
    if (error.empty())
      error = collective_step("flushing the HDF5 file", [&] {
        if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
          fail("{}: flush failed: {}", temporary_, h5::last_error());
      });
    // Closed on every path, by every rank together, whatever happened before.
    const std::string closed = collective_step("closing the HDF5 file", [&] {
      xfer.close();
      if (!file.close()) fail("{}: closing failed: {}", temporary_, h5::last_error());
    });
    return error.empty() ? closed : error;
  }

  // Rank 0: the file under its final name, then `latest`, then older checkpoints pruned.
  std::string publish() {
    std::string error;
    if (rank_ == 0) {
      BlockingRegion region(watchdog_, "publishing " + final_.string(), kLocalRegion, WaitKind::Io);
      error = sync_file(temporary_);
      if (error.empty() && std::rename(temporary_.c_str(), final_.c_str()) != 0)
        error = fmt::format("renaming {} failed: {}", temporary_, errno_text(errno));
      if (error.empty())
        error = write_file_durably((dir_ / "latest").string(), final_.filename().string() + "\n");
      try {
        if (error.empty()) prune(dir_, deck_.output.keep, final_);
      } catch (const std::exception& e) {
        error = fmt::format("pruning old checkpoints failed: {}", e.what());
      }
    }
    return agree(watchdog_, comm_, error, "publishing the checkpoint").message;
  }

  ZeroEngine& engine_;
  const Deck& deck_;
  int64_t steps_done_;
  MPI_Comm comm_;
  Watchdog& watchdog_;  // the world communicator's
  int rank_;
  fs::path dir_, final_;
  std::string temporary_;
  std::vector<WholeUnit> units_;  // the datasets' units, of the whole model
  uint64_t user_block_ = 0;
  std::unique_ptr<CheckpointRoom> room_;  // rank 0's, where a module holds room
};

// Reading.

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
  for (const auto& [key, value] : model_attributes(m)) {
    const int64_t stored = attr_int(key);
    if (stored != value)
      fail("{}: model mismatch: the checkpoint has {} = {} but the deck has {}", path, key, stored,
           value);
  }
  return attr_int("step");
}

// One state's dataset of unit u checked, and the part this rank holds under the current stage,
// rank count and cut into slices read into the engine from where its slice lies in the whole
// model.
void read_unit_state(hid_t file, ZeroEngine& engine, int s, int u, const std::string& path) {
  const Partition& partition = engine.partition();
  const UnitInfo& unit = partition.layout().unit(u);
  const std::string name = unit_dataset(kStates[s], unit.dataset);
  if (!h5::exists(file, name)) fail("{}: missing dataset {}", path, name);
  h5::Handle set(H5Dopen2(file, name.c_str(), H5P_DEFAULT));
  h5::Handle file_space(H5Dget_space(set));
  hsize_t size = 0;
  const int64_t whole = unit.dataset_size;
  if (H5Sget_simple_extent_ndims(file_space) != 1 ||
      H5Sget_simple_extent_dims(file_space, &size, nullptr) != 1 ||
      size != static_cast<hsize_t>(whole))
    fail("{}: dataset {} has {} elements, the model's unit {} has {}", path, name, size,
         unit.dataset, whole);
  check_checkpoint_dataset(set, path, name);
  const auto [begin, end] = engine.held_range(storage_of(engine, s), u);
  const hsize_t count = static_cast<hsize_t>(end - begin);
  if (count == 0) return;
  const std::vector<SliceRun> runs =
      unit_runs(partition, engine.slice_rank(), u, begin, end, Replicated::Include);
  select_runs(file_space, runs, Side::File);
  h5::Handle memory_space(H5Screate_simple(1, &count, nullptr));
  HostBuffer host("checkpoint_slice", count);
  if (H5Dread(set, H5T_NATIVE_FLOAT, memory_space, file_space, H5P_DEFAULT, host.data()) < 0)
    fail("{}: reading {} failed (corrupted or truncated file): {}", path, name, h5::last_error());
  engine.copy_state(s, u, begin, static_cast<int64_t>(count), host.data(), false);
}

}  // namespace

std::string checkpoint_dir(const Deck& deck) {
  return deck.output.dir + "/checkpoints";
}

CheckpointWritten write_checkpoint(ZeroEngine& engine, const Deck& deck, int64_t steps_done) {
  Kokkos::fence();
  return CheckpointWrite(engine, deck, steps_done).write();
}

ZM_REGISTRY(CheckpointReader, add_checkpoint_reader, checkpoint_readers)

std::string resolve_resume(const Deck& deck) {
  const std::string& resume = deck.train.resume;
  if (resume.empty()) return "";
  if (resume != "latest") return resume;
  const fs::path pointer = fs::path(checkpoint_dir(deck)) / "latest";
  if (!fs::exists(pointer)) return "";  // nothing written yet: a fresh start
  require_regular_file(pointer.string(), "'latest' checkpoint pointer (train.resume)");
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
  // The whole file is checked before the HDF5 library parses any of it.
  agree_or_fail(watchdog, comm, check_checkpoint_file(path, comm, watchdog),
                "verifying the checkpoint");
  try {
    BlockingRegion region(watchdog, "reading " + path, kLocalRegion, WaitKind::Io);
    h5::Handle file = h5::open_file(path);
    steps_done = check_header(file, path, deck.model);
    for (const CheckpointReader& reader : checkpoint_readers())
      reader(file, path, deck, engine.comms().mesh().world());
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
