// Deck contents: every committed deck, defaults, overrides, and each bad value or key with the
// exact message it must give (file, line and column, key, value found, what was expected).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/test_paths.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/modules.hpp"

namespace {

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    zm::parse_deck(text, "bad.toml", overrides);
  } catch (const zm::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Decks in inputs/ are TOML decks except the machine descriptions (inputs/machines/), sweep
// files, references (inputs/references/), the fuzzing corpus and the paper's published figures,
// which have their own readers.
bool is_deck(const std::filesystem::path& path) {
  if (path.extension() != ".toml") return false;
  if (path.filename() == "published.toml") return false;  // the paper's figures, not a deck
  for (const auto& part : path)
    if (part == "machines" || part == "corpus" || part == "sweeps" || part == "references")
      return false;
  return true;
}

TEST(Deck, EveryDeckInInputsParsesAndValidates) {
  int count = 0, refused = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(zm_test::inputs_dir())) {
    if (!entry.is_regular_file() || !is_deck(entry.path())) continue;
    SCOPED_TRACE(entry.path().string());
    zm::Deck deck;
    // Decks may target other builds (bf16 on a CUDA machine): validate all but build checks.
    // A deck of a module this build lacks is refused, naming the module (core/modules.hpp).
    try {
      deck = zm::load_deck(entry.path().string(), {}, zm::BuildChecks::Skip);
    } catch (const zm::Error& e) {
      const std::string what = e.what();
      const auto absent =
          std::find_if(zm::modules().begin(), zm::modules().end(), [&](const zm::ModuleInfo& m) {
            return !m.built && what.find("module " + m.name + " ") != std::string::npos;
          });
      EXPECT_TRUE(absent != zm::modules().end() &&
                  what.find("which this build lacks") != std::string::npos)
          << what;
      ++refused;
      continue;
    }
    EXPECT_EQ(deck.model.dim % deck.model.heads, 0);
    // The resolved deck reads back to the same settings.
    zm::Deck again = zm::parse_deck(deck.resolved_toml(), "resolved", {}, zm::BuildChecks::Skip);
    EXPECT_EQ(again.resolved_toml().substr(again.resolved_toml().find('\n')),
              deck.resolved_toml().substr(deck.resolved_toml().find('\n')));
    ++count;
  }
  EXPECT_GE(count, 6);  // quickstart, tiny-test and the four GPT-2 sizes at least
  const bool every_module_built = std::all_of(zm::modules().begin(), zm::modules().end(),
                                              [](const zm::ModuleInfo& m) { return m.built; });
  if (every_module_built) {
    EXPECT_EQ(refused, 0);
  }
}

TEST(Deck, DefaultsFillEverything) {
  zm::Deck deck = zm::parse_deck("", "empty.toml");
  EXPECT_EQ(deck.model.layers, 2);
  EXPECT_EQ(deck.zero.stage, 0);
  EXPECT_EQ(deck.comm.backend, "auto");
  EXPECT_NE(deck.resolved_toml().find("[output]\ndir = \"zeromini-out\""), std::string::npos);
}

TEST(Deck, OverridesUseTheSameSchema) {
  zm::Deck deck = zm::parse_deck("[zero]\nstage = 1\n", "d.toml",
                                 {"zero.stage=3", "train.lr=1e-3", "data.source=shards/a.bin",
                                  "zero.overlap=false", "train.precision=\"fp32\""});
  EXPECT_EQ(deck.zero.stage, 3);
  EXPECT_DOUBLE_EQ(deck.train.lr, 1e-3);
  EXPECT_EQ(deck.data.source, "shards/a.bin");
  EXPECT_FALSE(deck.zero.overlap);
  EXPECT_EQ(deck.origin.at("zero.stage"), "--set zero.stage=3");
  zm::Deck all = zm::parse_deck("", "d.toml", {"zero.stage=all"});
  EXPECT_TRUE(all.zero.all_stages);
  EXPECT_EQ(all.stages(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(all.resolved_toml().find("stage = \"all\""), std::string::npos);
}

TEST(Deck, PaddedVocabIsAMultipleOf128) {
  zm::ModelConfig m;
  m.vocab = 50257;
  EXPECT_EQ(m.padded_vocab(), 50304);
  m.vocab = 128;
  EXPECT_EQ(m.padded_vocab(), 128);
  m.vocab = 97;
  EXPECT_EQ(m.padded_vocab(), 128);
}

// Each bad deck and the exact message it must give: file, line and column, key, value found,
// what was expected.
struct BadDeck {
  const char* text;
  std::vector<std::string> overrides;
  const char* message;
};

void expect_exact_errors(const std::vector<BadDeck>& table) {
  for (const auto& bad : table) {
    SCOPED_TRACE(bad.text);
    EXPECT_EQ(error_of(bad.text, bad.overrides), bad.message);
  }
}

// Unknown sections and keys, with the nearest known name, and TOML syntax errors.
TEST(Deck, UnknownKeysAndTomlSyntaxErrorsSayWhatWasMeant) {
  expect_exact_errors({
      {"[model]\nlayers = 4\nlayer = 2\n",
       {},
       "bad.toml:3:1: unknown key 'model.layer' (did you mean 'layers'?)"},
      {"[model]\nstage = 2\n",
       {},
       "bad.toml:2:1: unknown key 'model.stage' (did you mean 'zero.stage'?)"},
      {"[modle]\nlayers = 4\n",
       {},
       "bad.toml:1:2: unknown section [modle] (did you mean 'model'?)"},
      {"layers = 4\n",
       {},
       "bad.toml:1:1: 'layers' is outside any section; keys belong in [model], [train], [zero], "
       "[comm], [data] or [output] (did you mean 'model.layers'?)"},
      {"[model\nlayers = 4\n",
       {},
       "bad.toml:1:7: TOML syntax error: Error while parsing table header: expected ']', saw "
       "'\\n'"},
      {"",
       {"zero.stag=1"},
       "--set zero.stag=1: unknown key 'zero.stag' (did you mean 'zero.stage'?)"},
      {"", {"stage"}, "--set stage: expected section.key=value"},
  });
}

// Values of the wrong type or outside their range, in the deck or from --set.
TEST(Deck, BadValuesNameTheKeyAndWhatWasExpected) {
  expect_exact_errors({
      {"[zero]\nstage = 7\n",
       {},
       "bad.toml:2:1: zero.stage = 7: out of range: expected an integer in 0..3 or \"all\""},
      {"",
       {"zero.stage=7"},
       "--set zero.stage=7: zero.stage = 7: out of range: expected an integer in 0..3 or "
       "\"all\""},
      {"[zero]\nstage = \"three\"\n",
       {},
       "bad.toml:2:1: zero.stage = \"three\": expected an integer in 0..3 or \"all\""},
      {"[model]\nlayers = \"two\"\n",
       {},
       "bad.toml:2:1: model.layers = \"two\": expected an integer in 1..100000, found a string"},
      {"[model]\nlayers = 2.5\n",
       {},
       "bad.toml:2:1: model.layers = 2.5: expected an integer in 1..100000, found a "
       "floating-point number"},
      {"[model]\nlayers = 0\n",
       {},
       "bad.toml:2:1: model.layers = 0: out of range: expected an integer in 1..100000"},
      {"[model]\ndim = 64\nheads = 5\n",
       {},
       "bad.toml:3:1: model.heads = 5 must divide model.dim = 64 (set at bad.toml:2:1)"},
      {"[train]\nlr = -1.0\n",
       {},
       "bad.toml:2:1: train.lr = -1: out of range: expected a number in [0, 10]"},
      {"[train]\nbeta2 = 1.0\n",
       {},
       "bad.toml:2:1: train.beta2 = 1: out of range: expected a number in [0, 1)"},
      {"[train]\nprecision = \"fp16\"\n",
       {},
       "bad.toml:2:1: train.precision = \"fp16\": expected one of \"fp32\", \"tf32\", \"bf16\""},
      {"[train]\nreduce_precision = \"bf16\"\n",
       {},
       "bad.toml:2:1: train.reduce_precision = \"bf16\": expected one of \"compute\", \"fp32\""},
      {"[comm]\nbackend = \"gloo\"\n",
       {},
       "bad.toml:2:1: comm.backend = \"gloo\": expected one of \"mpi\", \"nccl\", \"auto\""},
      {"[zero]\noverlap = 1\n",
       {},
       "bad.toml:2:1: zero.overlap = 1: expected true or false, found an integer"},
      {"[data]\nsource = \"\"\n",
       {},
       "bad.toml:2:1: data.source = \"\": expected a non-empty string"},
      {"",
       {"train.steps=ten"},
       "--set train.steps=ten: train.steps = \"ten\": expected an integer in 0..1000000000, found "
       "a string"},
  });
}

// train.precision is the shorthand that fills the policy; train.reduce_precision widens only the
// gradient reduction.
TEST(Deck, PrecisionPolicyFromTheShorthandAndTheReduceKey) {
  const zm::PrecisionPolicy fp32 = zm::parse_deck("", "d.toml", {"train.steps=1"}).train.policy();
  EXPECT_EQ(fp32.param, zm::Element::FP32);
  EXPECT_EQ(fp32.reduce, zm::Element::FP32);
  EXPECT_FALSE(fp32.mixed());
  EXPECT_EQ(fp32.gemm_math, zm::GemmMath::FP32);
  const zm::Deck tf32_deck =
      zm::parse_deck("[train]\nprecision = \"tf32\"\n", "d.toml", {}, zm::BuildChecks::Skip);
  EXPECT_EQ(tf32_deck.train.policy().gemm_math, zm::GemmMath::TF32);
  const zm::PrecisionPolicy bf16 =
      zm::make_precision_policy(zm::Precision::BF16, zm::ReducePrecision::Compute);
  EXPECT_EQ(bf16.param, zm::Element::BF16);
  EXPECT_EQ(bf16.compute, zm::Element::BF16);
  EXPECT_EQ(bf16.reduce, zm::Element::BF16);
  EXPECT_EQ(bf16.master, zm::Element::FP32);
  EXPECT_TRUE(bf16.mixed());
  EXPECT_FALSE(bf16.widens_reduce());
  const zm::PrecisionPolicy wide =
      zm::make_precision_policy(zm::Precision::BF16, zm::ReducePrecision::FP32);
  EXPECT_EQ(wide.compute, zm::Element::BF16);
  EXPECT_EQ(wide.reduce, zm::Element::FP32);
  EXPECT_TRUE(wide.widens_reduce());
  // Under fp32 the fp32 reduction is what already runs.
  EXPECT_FALSE(
      zm::make_precision_policy(zm::Precision::FP32, zm::ReducePrecision::FP32).widens_reduce());
}

// Quoting mistakes in --set values, with the spelling that works.
TEST(Deck, BadQuotesInOverridesShowTheFix) {
  expect_exact_errors({
      {"",
       {"output.dir=\"unterminated"},
       "--set output.dir=\"unterminated: unbalanced quote in the value (write "
       "output.dir=\"value\" or output.dir=value)"},
      {"",
       {"output.dir='unterminated"},
       "--set output.dir='unterminated: unbalanced quote in the value (write "
       "output.dir=\"value\" or output.dir=value)"},
      {"",
       {"output.dir=half\"way"},
       "--set output.dir=half\"way: unbalanced quote in the value (write output.dir=\"value\" or "
       "output.dir=value)"},
      {"",
       {"output.dir=\"out\"side"},
       "--set output.dir=\"out\"side: misplaced quote in the value: TOML takes quotes only around "
       "the whole value (write output.dir=\"value\" or output.dir=value; a value that holds '\"' "
       "goes in single quotes, output.dir='a\"b')"},
  });
}

// Numbers beyond double or int64 are refused, not saturated or wrapped.
TEST(Deck, NumbersBeyondTheirTypeAreRefusedNotWrapped) {
  expect_exact_errors({
      {"",
       {"comm.timeout_s=1e400"},
       "--set comm.timeout_s=1e400: 1e400 is out of range for a number (largest is about "
       "1.8e308)"},
      {"",
       {"comm.timeout_s=-1.5e999"},
       "--set comm.timeout_s=-1.5e999: -1.5e999 is out of range for a number (smallest is about "
       "-1.8e308)"},
      // Underflow reads as zero, which this key's range refuses.
      {"",
       {"comm.timeout_s=1e-400"},
       "--set comm.timeout_s=1e-400: comm.timeout_s = 0: out of range: expected a number in (0, "
       "10000000]"},
      {"",
       {"train.seed=99999999999999999999"},
       "--set train.seed=99999999999999999999: 99999999999999999999 is out of range for a 64-bit "
       "integer (largest is 9223372036854775807)"},
      {"",
       {"train.seed=-99_999_999_999_999_999_999"},
       "--set train.seed=-99_999_999_999_999_999_999: -99_999_999_999_999_999_999 is out of range "
       "for a 64-bit integer (smallest is -9223372036854775808)"},
      {"",
       {"train.seed=0x1_0000_0000_0000_0000"},
       "--set train.seed=0x1_0000_0000_0000_0000: 0x1_0000_0000_0000_0000 is out of range for a "
       "64-bit integer (largest is 9223372036854775807)"},
      {"[comm]\ntimeout_s = 1e400\n",
       {},
       "bad.toml:2:18: comm.timeout_s: 1e400 is out of range for a number (largest is about "
       "1.8e308)"},
      {"[train]\nseed = -99999999999999999999  # too big\n",
       {},
       "bad.toml:2:29: train.seed: -99999999999999999999 is out of range for a 64-bit integer "
       "(smallest is -9223372036854775808)"},
  });
}

TEST(Deck, BuildSpecificChecks) {
  const zm::BuildFeatures features = zm::build_features();
  if (!features.nccl) {
    EXPECT_EQ(error_of("[comm]\nbackend = \"nccl\"\n"),
              "bad.toml:2:1: comm.backend = \"nccl\": this build has no NCCL backend (it needs a "
              "Kokkos with CUDA); expected \"mpi\" or \"auto\"");
  }
  if (!features.bf16) {
    EXPECT_NE(error_of("[train]\nprecision = \"bf16\"\n").find("has no bfloat16 type"),
              std::string::npos);
  }
}

TEST(Deck, LongStringsAreRefusedWithoutPrintingThem) {
  const size_t limit = 4096;
  const std::string fits(limit, 'a');
  EXPECT_EQ(zm::parse_deck("[output]\ndir = \"" + fits + "\"\n", "d.toml").output.dir, fits);
  EXPECT_EQ(zm::parse_deck("", "d.toml", {"data.source=" + fits}).data.source, fits);
  const std::string deck_string(limit + 1, 'a');
  EXPECT_EQ(error_of("[output]\ndir = \"" + deck_string + "\"\n"),
            "bad.toml:2:1: output.dir: a string of 4097 bytes is longer than the limit of 4096 "
            "bytes");
  // Whatever the key's kind: a string given to an integer or a choice is not printed back either.
  EXPECT_EQ(error_of("[model]\nlayers = \"" + deck_string + "\"\n"),
            "bad.toml:2:1: model.layers: a string of 4097 bytes is longer than the limit of 4096 "
            "bytes");
  const std::string megabytes(3 << 20, 'x');
  EXPECT_EQ(
      error_of("", {"output.dir=" + megabytes}),
      "--set output.dir=" + std::string(49, 'x') +
          "...: output.dir: a string of 3145728 bytes is longer than the limit of 4096 bytes");
  EXPECT_EQ(error_of("", {"comm.backend=" + megabytes}),
            "--set comm.backend=" + std::string(47, 'x') +
                "...: comm.backend: a string of 3145728 bytes is longer than the limit of 4096 "
                "bytes");
}

TEST(Deck, QuotesAndBareWordsInOverrides) {
  zm::Deck deck = zm::parse_deck("", "d.toml",
                                 {"data.source=/data/o'brien/train.bin", "output.dir='a\"b'",
                                  "train.resume=\"run 1/ckpt\"", "train.seed=9223372036854775807"});
  EXPECT_EQ(deck.data.source, "/data/o'brien/train.bin");
  EXPECT_EQ(deck.output.dir, "a\"b");
  EXPECT_EQ(deck.train.resume, "run 1/ckpt");
  EXPECT_EQ(deck.train.seed, 9223372036854775807);
}

}  // namespace

