// A seeded mutation fuzzer for zeromini's input readers: the deck parser, the reader of data files
// (data.source, where a module registered one: train/data.hpp) and the checkpoint loader. For a
// bounded time it mutates the files of a corpus (bit flips, byte substitutions with boundary
// values, insertions, deletions, truncation, splicing, TOML tokens) and feeds each result to the
// reader. A reader may refuse an input only with zm::Error; any other exception, a crash (the build
// uses AddressSanitizer and UBSan), or an input that takes longer than the per-input time limit
// fails the run. The input being tried is kept in OUT/current_input so a failure can be replayed.
//
//   zeromini-fuzz deck|shard|checkpoint CORPUS_DIR SECONDS SEED OUT_DIR
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "comm/device_select.hpp"
#include "comm/mpi_defaults.hpp"
#include "comm/watchdog.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/checkpoint.hpp"
#include "train/data.hpp"
#include "train/trainer.hpp"

namespace {

namespace fs = std::filesystem;
using Bytes = std::string;

// The model the checkpoint corpus was written for (tests/fuzz/corpus/checkpoint/).
const char* kCheckpointDeck =
    "[model]\nlayers = 1\nheads = 2\ndim = 8\nvocab = 16\nseq_len = 4\n[train]\nmicro_batch = 1\n";
// The model a data file is read for: tokens below 16, sequences of 4.
const char* kShardDeck = "[model]\nvocab = 16\nseq_len = 4\n";
constexpr int kPerInputSeconds = 20;

const char* const kTomlTokens[] = {"=",
                                   "[",
                                   "]",
                                   "[[",
                                   "\"",
                                   "'",
                                   "\n",
                                   "#",
                                   "1e308",
                                   "-1",
                                   "9223372036854775807",
                                   "0x7fffffff",
                                   "inf",
                                   "nan",
                                   "true",
                                   "{",
                                   "}",
                                   ",",
                                   ".",
                                   "[model]",
                                   "[zero]",
                                   "stage",
                                   "layers",
                                   "\"\"\"",
                                   "\\u0000",
                                   "1979-05-27T07:32:00Z"};

Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& path, const Bytes& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

Bytes mutate(Bytes data, const std::vector<Bytes>& corpus, std::mt19937_64& rng, bool text) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : static_cast<size_t>(rng() % n); };
  const int rounds = 1 + static_cast<int>(rng() % 4);
  for (int round = 0; round < rounds; ++round) {
    switch (rng() % 8) {
      case 0:  // flip a bit
        if (!data.empty()) data[pick(data.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1: {  // a boundary byte value
        const unsigned char values[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe};
        if (!data.empty()) data[pick(data.size())] = static_cast<char>(values[rng() % 6]);
        break;
      }
      case 2: {  // overwrite 4 bytes with a boundary int32 (header fields)
        const int32_t values[] = {0, -1, 1, INT32_MAX, INT32_MIN, 20240520, 1 << 30};
        const int32_t v = values[rng() % 7];
        if (data.size() >= 4)
          data.replace(pick(data.size() - 3), 4, reinterpret_cast<const char*>(&v), 4);
        break;
      }
      case 3: {  // insert random bytes or a token
        const size_t at = pick(data.size() + 1);
        if (text) {
          data.insert(at, kTomlTokens[rng() % (sizeof(kTomlTokens) / sizeof(*kTomlTokens))]);
        } else {
          Bytes junk(1 + pick(16), '\0');
          for (char& c : junk) c = static_cast<char>(rng());
          data.insert(at, junk);
        }
        break;
      }
      case 4:  // delete a range
        if (!data.empty()) {
          const size_t at = pick(data.size());
          data.erase(at, 1 + pick(std::min<size_t>(64, data.size() - at)));
        }
        break;
      case 5:  // truncate
        data.resize(pick(data.size() + 1));
        break;
      case 6: {  // duplicate a range
        if (!data.empty()) {
          const size_t at = pick(data.size());
          const size_t n = 1 + pick(std::min<size_t>(256, data.size() - at));
          data.insert(pick(data.size() + 1), data.substr(at, n));
        }
        break;
      }
      case 7: {  // splice with another corpus entry
        const Bytes& other = corpus[pick(corpus.size())];
        if (!other.empty()) {
          const size_t cut = pick(std::min(data.size(), other.size()) + 1);
          data = data.substr(0, cut) + other.substr(cut);
        }
        break;
      }
    }
  }
  return data;
}

fs::path g_current;
extern "C" void on_timeout(int) {
  const char message[] =
      "zeromini-fuzz: an input took too long (hang); it is in OUT/current_input\n";
  const ssize_t ignored = write(2, message, sizeof(message) - 1);
  (void)ignored;
  _exit(3);
}

// Feeds one input to the target's reader; a refusal throws zm::Error.
void feed(const std::string& target, const Bytes& input, zm::Trainer* trainer) {
  if (target == "deck")
    zm::parse_deck(input, "fuzz.toml", {}, zm::BuildChecks::Skip);
  else if (target == "shard")
    zm::make_data_source(zm::parse_deck(kShardDeck, "fuzz", {"data.source=" + g_current.string()}));
  else
    zm::load_checkpoint(trainer->engine(), trainer->deck(), g_current.string());
}

// Mutates and feeds inputs for `seconds`; returns the exit status (0: no failure found). The
// checkpoint reader's waits run under `watchdog`.
int fuzz_for(const std::string& target, const std::vector<Bytes>& corpus, double seconds,
             std::mt19937_64& rng, zm::Watchdog& watchdog) {
  std::unique_ptr<zm::Communicator> comm;
  std::unique_ptr<zm::Trainer> trainer;
  if (target == "checkpoint") {
    comm = zm::make_communicator("mpi", MPI_COMM_SELF, watchdog);
    trainer = zm::make_trainer(zm::parse_deck(kCheckpointDeck, "fuzz"), 1, *comm);
  }
  std::signal(SIGALRM, on_timeout);
  const auto start = std::chrono::steady_clock::now();
  uint64_t inputs = 0, refused = 0;
  int status = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
         seconds) {
    const Bytes input = mutate(corpus[rng() % corpus.size()], corpus, rng, target == "deck");
    write_file(g_current, input);
    alarm(kPerInputSeconds);
    try {
      feed(target, input, trainer.get());
    } catch (const zm::Error&) {
      ++refused;  // a clear refusal is the expected outcome for most mutations
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "zeromini-fuzz: %s reader threw %s (not a zm::Error); input kept in %s\n",
                   target.c_str(), e.what(), g_current.c_str());
      status = 1;
      break;
    }
    alarm(0);
    ++inputs;
  }
  std::printf(
      "zeromini-fuzz %s: %llu inputs in %.0f s, %llu refused with an error, no crash, "
      "hang or unexpected exception%s\n",
      target.c_str(), static_cast<unsigned long long>(inputs), seconds,
      static_cast<unsigned long long>(refused), status ? " (STOPPED: see above)" : "");
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string target = argc == 6 ? argv[1] : "";
  if (target != "deck" && target != "shard" && target != "checkpoint") {
    std::fprintf(stderr,
                 "usage: zeromini-fuzz deck|shard|checkpoint CORPUS_DIR SECONDS SEED OUT_DIR\n");
    return 2;
  }
  const fs::path corpus_dir = argv[2], out_dir = argv[5];
  std::vector<Bytes> corpus;
  std::error_code no_directory;
  for (const auto& entry : fs::directory_iterator(corpus_dir, no_directory))
    if (entry.is_regular_file()) corpus.push_back(read_file(entry.path()));
  if (corpus.empty()) {
    std::fprintf(stderr,
                 "zeromini-fuzz: no corpus files in %s (expected a directory of sample inputs)\n",
                 corpus_dir.c_str());
    return 2;
  }
  const double seconds = std::atof(argv[3]);
  std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 10));
  fs::create_directories(out_dir);
  g_current = out_dir / "current_input";

  zm::Watchdog watchdog;  // the readers' file waits; never armed here
  zm::apply_mpi_library_defaults();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  zm::start_kokkos_on_local_device(argc, argv, MPI_COMM_WORLD, watchdog);
  // Progress lines and resume warnings, once per input, would bury the report: keep them quiet.
  zm::set_log_rank(-1);
  const int status = fuzz_for(target, corpus, seconds, rng, watchdog);
  Kokkos::finalize();
  MPI_Finalize();
  watchdog.stop();
  return status;
}
