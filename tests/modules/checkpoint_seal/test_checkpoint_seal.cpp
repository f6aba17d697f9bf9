// Sealed checkpoints (src/modules/checkpoint_seal/): a damaged, truncated or foreign file is
// refused by the whole-file check before the HDF5 library parses it, with its specific error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/damaged_checkpoint.hpp"

namespace {

namespace fs = std::filesystem;
using zm::testing::DamagedCheckpoint;

// A flipped byte inside a dataset: the whole-file checksum refuses it before HDF5 reads the file
// (resealed around the damage, HDF5's Fletcher32 still catches it: tests/io/test_checkpoint.cpp).
TEST_F(DamagedCheckpoint, AFlippedByteIsRefusedByTheChecksum) {
  const std::string flipped = variant("flipped");
  if (root_) zm::testing::flip_dataset_byte(flipped);
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string error = error_loading(flipped);
  EXPECT_NE(error.find(flipped + ": corrupted: bytes "), std::string::npos) << error;
  EXPECT_NE(error.find("fail their checksum"), std::string::npos) << error;
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

TEST_F(DamagedCheckpoint, OtherFilesAreRefused) {
  const std::string stranger = dir_ + "/stranger.h5";
  if (root_) std::ofstream(stranger) << "just some text";
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(error_loading(stranger),
            stranger + ": not a zeromini checkpoint (no integrity header; 14 bytes)");
}

}  // namespace
