// Small files written durably, and disk space held ahead of a checkpoint write.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/durable_file.hpp"
#include "io/space_reservation.hpp"

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("zeromini-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST(DurableFile, ReplacesTheFileAndLeavesNoTemporary) {
  const fs::path dir = fresh_dir("durable");
  const fs::path latest = dir / "latest";
  EXPECT_EQ(zm::write_file_durably(latest.string(), "step_00000001.h5\n"), "");
  EXPECT_EQ(zm::write_file_durably(latest.string(), "step_00000002.h5\n"), "");
  EXPECT_EQ(contents(latest), "step_00000002.h5\n");
  EXPECT_FALSE(fs::exists(dir / "latest.tmp"));
  fs::remove_all(dir);
}

TEST(DurableFile, AFailedWriteLeavesTheOldFileUntouched) {
  const fs::path dir = fresh_dir("durable-fail");
  const fs::path latest = dir / "latest";
  ASSERT_EQ(zm::write_file_durably(latest.string(), "step_00000001.h5\n"), "");
  // latest.tmp cannot be created where a directory of that name stands.
  fs::create_directories(dir / "latest.tmp");
  const std::string error = zm::write_file_durably(latest.string(), "step_00000002.h5\n");
  EXPECT_NE(error.find("latest.tmp"), std::string::npos) << error;
  EXPECT_EQ(contents(latest), "step_00000001.h5\n");
  fs::remove_all(dir);
}

TEST(SpaceReservation, HoldsSpaceAndGivesItBackPieceByPiece) {
  const fs::path dir = fresh_dir("reserve");
  const fs::path held = dir / zm::SpaceReservation::kFileName;
  {
    zm::SpaceReservation space;
    ASSERT_EQ(space.reserve(dir.string(), 1 << 20), "");
    struct stat st {};
    ASSERT_EQ(stat(held.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20);
    space.release(1 << 18);
    ASSERT_EQ(stat(held.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 3 << 18);
    space.release(1 << 30);  // more than is held: all of it
    ASSERT_EQ(stat(held.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 0);
  }
  EXPECT_FALSE(fs::exists(held));  // gone with the reservation
  fs::remove_all(dir);
}

TEST(SpaceReservation, RefusesMoreThanTheFileSystemHas) {
  const fs::path dir = fresh_dir("reserve-too-much");
  zm::SpaceReservation space;
  const std::string error = space.reserve(dir.string(), uint64_t(1) << 60);  // an exabyte
  EXPECT_NE(error.find("needs about"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(dir / zm::SpaceReservation::kFileName));
  fs::remove_all(dir);
}
