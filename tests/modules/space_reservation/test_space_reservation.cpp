// Disk space held ahead of a checkpoint write (src/modules/space_reservation/).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/test_paths.hpp"
#include "modules/space_reservation/space_reservation.hpp"

namespace fs = std::filesystem;

namespace {

using zm_test::fresh_dir;

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

}  // namespace
