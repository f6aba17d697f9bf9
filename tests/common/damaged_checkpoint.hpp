// Shared by the tests of damaged checkpoints (tests/io/, and the modules' that guard checkpoint
// files): a good checkpoint written at 2 ranks in stage 2, copies of it to damage, the error
// loading one gives, and the file's guard (io/checkpoint_guard.hpp) made again around a
// deliberate edit.
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/checkpoint_test_util.hpp"
#include "common/test_watchdog.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_guard.hpp"

namespace zm::testing {

inline std::string load_error(const zm::Deck& deck, int stage, zm::Communicator& comm,
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

// The bytes in front of HDF5's data (the user block a guard keeps; 0 without one).
inline hsize_t user_block_of(const std::string& path) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t fcpl = H5Fget_create_plist(file);
  hsize_t user_block = 0;
  H5Pget_userblock(fcpl, &user_block);
  H5Pclose(fcpl);
  H5Fclose(file);
  return user_block;
}

// Offset in the file of the first byte of a dataset's (single) chunk: HDF5's address plus the
// user block in front of HDF5's data.
inline haddr_t chunk_address(const std::string& path, const std::string& dataset) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t set = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  hsize_t offset[1] = {0};
  unsigned filter_mask = 0;
  haddr_t address = HADDR_UNDEF;
  hsize_t size = 0;
  H5Dget_chunk_info_by_coord(set, offset, &filter_mask, &address, &size);
  H5Dclose(set);
  H5Fclose(file);
  return address + user_block_of(path);
}

// The guard's step after writing, again, around a deliberate edit: a file that is intact but
// different.
inline void guard_again(const std::string& path) {
  EXPECT_EQ(zm::guard_written_checkpoint(path, user_block_of(path), MPI_COMM_SELF, watchdog()), "");
}

inline void flip_dataset_byte(const std::string& path) {
  const haddr_t at = chunk_address(path, "params/unit_0001");
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at + 40));
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(at + 40));
  f.write(&byte, 1);
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
      zm::make_communicator("mpi", MPI_COMM_WORLD, watchdog());
  const std::string dir_ = shared_dir(MPI_COMM_WORLD, "damage");
  const zm::Deck deck_ = deck_for(2, 2, dir_);
  const bool root_ = comm_->rank() == 0;
  std::string good_;
};

}  // namespace zm::testing
