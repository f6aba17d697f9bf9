// Checkpoints: exact restart, restart at another rank count and stage, and refusal of damaged
// or mismatched files with their specific errors.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "common/checkpoint_test_util.hpp"
#include "common/damaged_checkpoint.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"

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

using zm::testing::DamagedCheckpoint;
using zm::testing::guard_again;
using zm::testing::load_error;

// A flipped byte inside a dataset of a file that is otherwise intact (its guard made again
// around the damage): HDF5's Fletcher32 catches it.
TEST_F(DamagedCheckpoint, AFlippedByteIsRefusedByFletcher32) {
  const std::string flipped = variant("flipped");
  if (root_) {
    zm::testing::flip_dataset_byte(flipped);
    guard_again(flipped);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string error = error_loading(flipped);
  EXPECT_NE(error.find(flipped + ": reading params/unit_0001 failed (corrupted or truncated file)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("Fletcher32"), std::string::npos) << error;
}

TEST_F(DamagedCheckpoint, AMissingFileAndOtherModelsAreRefused) {
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
    guard_again(version);
    guard_again(missing);
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
