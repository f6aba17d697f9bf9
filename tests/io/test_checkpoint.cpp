// Checkpoints: exact restart, restart at another rank count and stage, and refusal of damaged
// or mismatched files with their specific errors.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/checkpoint_test_util.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/file_integrity.hpp"

namespace {

namespace fs = std::filesystem;
using zm::ZeroEngine;
using zm::testing::deck_for;
using zm::testing::full_state;
using zm::testing::run_steps;
using zm::testing::shared_dir;
using zm::testing::State;

// Steps 0-8 in one run against steps 0-4, a checkpoint, and steps 4-8 in a fresh trainer.
void check_exact_resume(const std::string& precision, std::initializer_list<int> stages) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  for (int stage : stages) {
    SCOPED_TRACE(fmt::format("stage {}, {}", stage, precision));
    const std::string dir = shared_dir(MPI_COMM_WORLD, fmt::format("resume{}", stage));
    const zm::Deck deck = deck_for(stage, 2, dir, 8, precision);
    const std::string path = zm::testing::expect_exact_resume(deck, stage, *comm);
    // The 'latest' pointer names it.
    zm::Deck latest = deck;
    latest.train.resume = "latest";
    EXPECT_EQ(zm::resolve_resume(latest), path);
  }
}

TEST(Checkpoint, ResumeGivesTheUninterruptedRunBitwise) {
  check_exact_resume("fp32", {0, 2, 3});
}

#if ZEROMINI_HAVE_BF16
// Checkpoints hold the fp32 masters; the bf16 parameters are their rounding, so a resumed bf16
// run is the uninterrupted one bit for bit too (stage 1 re-gathers the rounded shards).
TEST(Checkpoint, MixedPrecisionResumeGivesTheUninterruptedRunBitwise) {
  check_exact_resume("bf16", {0, 1, 3});
}
#endif

// Written at 4 ranks in stage 3; read back at 2 ranks in stage 1 and at 3 ranks in stage 2.
TEST(Checkpoint, ReshardsToOtherRankCountsAndStages) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (world->size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const std::string dir = shared_dir(MPI_COMM_WORLD, "reshard");
  const int64_t global_batch = 12;
  const zm::Deck written_deck = deck_for(3, global_batch / 4, dir);
  const auto writer = zm::make_trainer(written_deck, 3, *world);
  writer->init_parameters();
  run_steps(*writer, 0, 4);
  const std::string path = zm::write_checkpoint(writer->engine(), writer->deck(), 4).path;
  const State written = full_state(writer->engine());
  const std::vector<double> continued = run_steps(*writer, 4, 8);  // the uninterrupted run

  const struct { int ranks, stage; } targets[] = {{2, 1}, {3, 2}};
  for (const auto& target : targets) {
    SCOPED_TRACE(fmt::format("{} ranks, stage {}", target.ranks, target.stage));
    zm::testing::expect_resumes_on(target.ranks, target.stage, dir, global_batch, {}, path, written,
                                   continued);
  }
}

std::string load_error(const zm::Deck& deck, int stage, zm::Communicator& comm,
                       const std::string& path) {
  const auto owned_trainer = zm::make_trainer(deck, stage, comm);
  zm::Trainer& trainer = *owned_trainer;
  try {
    zm::load_checkpoint(trainer.engine(), trainer.deck(), path);
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Offset in the file of the first byte of a dataset's (single) chunk: HDF5's address plus the
// user block in front of HDF5's data.
haddr_t chunk_address(const std::string& path, const std::string& dataset) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t fcpl = H5Fget_create_plist(file);
  hsize_t user_block = 0;
  H5Pget_userblock(fcpl, &user_block);
  H5Pclose(fcpl);
  hid_t set = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  hsize_t offset[1] = {0};
  unsigned filter_mask = 0;
  haddr_t address = HADDR_UNDEF;
  hsize_t size = 0;
  H5Dget_chunk_info_by_coord(set, offset, &filter_mask, &address, &size);
  H5Dclose(set);
  H5Fclose(file);
  return address + user_block;
}

// seal_file() again around a deliberate edit: a file that is intact but different. The user block
// size is the integrity header's second word (io/file_integrity.hpp).
void reseal(const std::string& path) {
  uint64_t head[2] = {};
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(head), sizeof(head));
  EXPECT_EQ(zm::seal_file(path, head[1], MPI_COMM_SELF, zm::testing::watchdog()), "");
}

// A good checkpoint written at 2 ranks in stage 2, and damaged or mismatched copies of it.
class DamagedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto owned_trainer = zm::make_trainer(deck_, 2, *comm_);
    zm::Trainer& trainer = *owned_trainer;
    trainer.init_parameters();
    run_steps(trainer, 0, 2);
    good_ = zm::write_checkpoint(trainer.engine(), trainer.deck(), 2).path;
  }

  // A copy of the good checkpoint, made by rank 0 and seen by all.
  std::string variant(const std::string& name) const {
    const std::string copy = dir_ + "/" + name + ".h5";
    if (root_) fs::copy_file(good_, copy, fs::copy_options::overwrite_existing);
    MPI_Barrier(MPI_COMM_WORLD);
    return copy;
  }

  std::string error_loading(const std::string& path) const {
    return load_error(deck_, 2, *comm_, path);
  }

  std::unique_ptr<zm::Communicator> comm_ =
      zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const std::string dir_ = shared_dir(MPI_COMM_WORLD, "damage");
  const zm::Deck deck_ = deck_for(2, 2, dir_);
  const bool root_ = comm_->rank() == 0;
  std::string good_;
};

void flip_dataset_byte(const std::string& path) {
  const haddr_t at = chunk_address(path, "params/unit_0001");
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at + 40));
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(at + 40));
  f.write(&byte, 1);
}

// A flipped byte inside a dataset: the whole-file checksum refuses it before HDF5 reads the
// file; and if the file is resealed around the damage, HDF5's Fletcher32 still catches it.
TEST_F(DamagedCheckpoint, AFlippedByteIsRefusedByTheChecksumAndByFletcher32) {
  const std::string flipped = variant("flipped");
  const std::string resealed = variant("resealed");
  if (root_) {
    flip_dataset_byte(flipped);
    flip_dataset_byte(resealed);
    reseal(resealed);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::string error = error_loading(flipped);
  EXPECT_NE(error.find(flipped + ": corrupted: bytes "), std::string::npos) << error;
  EXPECT_NE(error.find("fail their checksum"), std::string::npos) << error;
  error = error_loading(resealed);
  EXPECT_NE(
      error.find(resealed + ": reading params/unit_0001 failed (corrupted or truncated file)"),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("Fletcher32"), std::string::npos) << error;
}

TEST_F(DamagedCheckpoint, ATruncatedFileIsRefusedWithBothSizes) {
  const std::string truncated = variant("truncated");
  uintmax_t full_size = 0;
  if (root_) {
    full_size = fs::file_size(truncated);
    fs::resize_file(truncated, full_size / 2);
  }
  MPI_Bcast(&full_size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(error_loading(truncated),
            fmt::format("{}: truncated or extended: {} bytes, the checkpoint was {} bytes",
                        truncated, full_size / 2, full_size));
}

TEST_F(DamagedCheckpoint, OtherFilesAndOtherModelsAreRefused) {
  const std::string stranger = dir_ + "/stranger.h5";
  if (root_) std::ofstream(stranger) << "just some text";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(error_loading(stranger),
            stranger + ": not a zeromini checkpoint (no integrity header; 14 bytes)");
  EXPECT_EQ(error_loading(dir_ + "/nope.h5"), dir_ + "/nope.h5: checkpoint not found");

  zm::Deck other = deck_for(2, 2, dir_ + "/other");
  other.model.layers = 3;
  EXPECT_EQ(load_error(other, 2, *comm_, good_),
            good_ + ": model mismatch: the checkpoint has model.layers = 2 but the deck has 3");
}

// Intact files that differ from what this build reads (as from another zeromini version).
TEST_F(DamagedCheckpoint, AnotherFormatVersionOrAMissingDatasetIsRefused) {
  const std::string version = variant("version");
  const std::string missing = variant("missing");
  if (root_) {
    hid_t file = H5Fopen(version.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t attr = H5Aopen(file, "format_version", H5P_DEFAULT);
    const int64_t wrong = 99;
    H5Awrite(attr, H5T_NATIVE_INT64, &wrong);
    H5Aclose(attr);
    H5Fclose(file);
    file = H5Fopen(missing.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(file, "adam_m/unit_0002", H5P_DEFAULT);
    H5Fclose(file);
    reseal(version);
    reseal(missing);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(
      error_loading(version),
      version + ": checkpoint format version 99 is not supported (this build reads version 1)");
  EXPECT_EQ(error_loading(missing), missing + ": missing dataset adam_m/unit_0002");
}

// The refusals above are of the damage, not of every file: the good one loads.
TEST_F(DamagedCheckpoint, TheGoodOneLoads) {
  EXPECT_EQ(error_loading(good_), "(no error)");
}

TEST(Checkpoint, OldCheckpointsBeyondKeepAreRemoved) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const std::string dir = shared_dir(MPI_COMM_WORLD, "keep");
  const zm::Deck deck = deck_for(1, 2, dir);  // keep = 3
  const auto owned_trainer = zm::make_trainer(deck, 1, *comm);
  zm::Trainer& trainer = *owned_trainer;
  trainer.init_parameters();
  for (int64_t s = 0; s < 5; ++s) {
    trainer.step(s);
    zm::write_checkpoint(trainer.engine(), trainer.deck(), s + 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir + "/checkpoints"))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"latest", "step_00000003.h5", "step_00000004.h5",
                                             "step_00000005.h5"}));
}

}  // namespace
