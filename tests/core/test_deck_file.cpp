// Deck files on disk: missing, empty, not regular files (refused before any open, so a FIFO
// cannot block the job), and errors that name the file's line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "core/deck.hpp"
#include "core/error.hpp"

namespace {

TEST(Deck, MissingFileIsNamed) {
  try {
    zm::load_deck("/nonexistent/deck.toml");
    FAIL() << "no error";
  } catch (const zm::Error& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/deck.toml: the deck does not exist");
  }
}

// A directory of its own for each test's files, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "zeromini-deck-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

 private:
  std::filesystem::path path_;
};

std::string error_loading(const std::string& path, const std::vector<std::string>& overrides = {}) {
  try {
    zm::load_deck(path, overrides, zm::BuildChecks::Skip);
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs `read` on a thread of its own. A read that blocks on `fifo` is given end-of-file after
// 10 s (a writer opens and closes the FIFO), so that the test fails instead of hanging.
std::string without_blocking(const std::string& fifo, const std::function<std::string()>& read) {
  auto pending = std::async(std::launch::async, read);
  if (pending.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "reading " << fifo << " blocked";
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  return pending.get();
}

TEST(DeckFile, EmptyDeckFilesAreRefused) {
  TempDir dir;
  const std::string advice =
      ": the deck is empty (no keys); every key has a default, but an empty deck is most likely "
      "the wrong file. Run 'zeromini schema' to list the keys.";
  for (const char* text : {"", " \n\t\n", "# a comment\n\n  # another\n", "[model]\n[train]\n"}) {
    SCOPED_TRACE(text);
    const std::string path = dir.write("empty.toml", text);
    EXPECT_EQ(error_loading(path), path + advice);
    EXPECT_EQ(error_loading(path, {"train.steps=3"}), path + advice);
  }
  const std::string one_key = dir.write("one-key.toml", "# steps only\n[train]\nsteps = 3\n");
  EXPECT_EQ(zm::load_deck(one_key, {}, zm::BuildChecks::Skip).train.steps, 3);
  // A syntax error is reported as such, not as an empty deck.
  const std::string broken = dir.write("broken.toml", "[model\n");
  EXPECT_NE(error_loading(broken).find("TOML syntax error"), std::string::npos);
}

TEST(DeckFile, FilesThatAreNotRegularAreRefusedBeforeAnyOpen) {
  TempDir dir;
  const std::string fifo = dir.path("pipe.toml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(without_blocking(fifo, [&] { return error_loading(fifo); }),
            fifo + ": the deck is a FIFO (named pipe), not a regular file");
  EXPECT_EQ(error_loading(dir.path("")),
            dir.path("") + ": the deck is a directory, not a regular file");
  EXPECT_EQ(error_loading("/dev/null"),
            "/dev/null: the deck is a character device, not a regular file");
  const std::string file = dir.write("deck.toml", "[train]\nsteps = 3\n");
  EXPECT_EQ(error_loading(file + "/deck.toml"),
            file + "/deck.toml: the deck does not exist (a part of the path is not a directory)");
}

TEST(DeckFile, NumbersOutOfRangeInAFileNameTheKeyAndLine) {
  TempDir dir;
  const std::string path =
      dir.write("big.toml", "[model]\nlayers = 2\n\n[comm]\ntimeout_s = 1e400 # s\n");
  EXPECT_EQ(error_loading(path),
            path +
                ":5:18: comm.timeout_s: 1e400 is out of range for a number (largest is about "
                "1.8e308)");
}

}  // namespace
