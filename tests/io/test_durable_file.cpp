// Small files written durably.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/test_paths.hpp"
#include "io/durable_file.hpp"

namespace fs = std::filesystem;

namespace {

using zm_test::fresh_dir;

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
