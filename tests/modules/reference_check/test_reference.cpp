// Reference files (`zeromini run --write-reference` / `--check-reference`): the format read back
// as written, malformed files refused by key, the settings that decide the losses (and those
// that do not), and the comparison of a run's losses.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.hpp"
#include "core/deck.hpp"
#include "core/error.hpp"
#include "core/modules.hpp"
#include "modules/reference_check/reference_file.hpp"
#include "modules/reference_check/reference_losses.hpp"
#include "modules/reference_check/reference_settings.hpp"

namespace {

const char* kDeck = R"(
[model]
layers = 2
heads = 4
dim = 32
vocab = 97
seq_len = 16
[train]
micro_batch = 2
steps = 5
lr = 1e-2
warmup = 1
seed = 7
)";

zm::Deck deck(const std::vector<std::string>& overrides = {}) {
  return zm::parse_deck(kDeck, "tiny.toml", overrides, zm::BuildChecks::Skip);
}

// A stage's records of steps 1..steps with the given losses (step s at index s - 1).
zm::StageResult stage_result(int stage, const std::vector<double>& losses) {
  zm::StageResult result;
  result.stage = stage;
  for (size_t i = 0; i < losses.size(); ++i) {
    zm::StepRecord record;
    record.step = static_cast<int64_t>(i);
    record.loss = losses[i];
    result.steps.push_back(record);
  }
  return result;
}

const std::vector<double> kLosses = {4.5748, 4.5101, 4.4062, 4.2917, 4.1933};

// The reference of a run of `d` at `ranks` ranks that trained `stages`, each with kLosses.
zm::Reference reference_of(const zm::Deck& d, int ranks,
                           const std::vector<int>& stages = {0, 1, 2, 3}) {
  std::vector<zm::StageResult> results;
  for (int stage : stages) results.push_back(stage_result(stage, kLosses));
  return zm::make_reference(d, ranks, results,
                            {"tiny.toml", "mpiexec -n 2 zeromini run tiny.toml", "test"});
}

// The message of the zm::Error that `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const zm::Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST(ReferenceFile, ReadsBackWhatItWrites) {
  const zm::Reference written = reference_of(deck(), 2);
  const zm::Reference read = zm::parse_reference(zm::format_reference(written), "ref.toml");
  EXPECT_EQ(read.deck, written.deck);
  EXPECT_EQ(read.command, written.command);
  EXPECT_EQ(read.build, written.build);
  EXPECT_EQ(read.tolerance, written.tolerance);
  EXPECT_EQ(read.steps, (std::vector<int64_t>{1, 3, 5}));
  ASSERT_EQ(read.settings.size(), written.settings.size());
  for (const zm::ReferenceSetting& s : written.settings) {
    bool found = false;
    for (const zm::ReferenceSetting& r : read.settings)
      if (r.key == s.key) {
        found = true;
        EXPECT_EQ(r.value, s.value) << s.key;
      }
    EXPECT_TRUE(found) << s.key;
  }
  ASSERT_EQ(read.stages.size(), 4u);
  for (int stage = 0; stage < 4; ++stage) {
    ASSERT_NE(read.find_stage(stage), nullptr);
    // Bitwise: the shortest spelling reads back to the same double.
    EXPECT_EQ(read.find_stage(stage)->loss,
              (std::vector<double>{kLosses[0], kLosses[2], kLosses[4]}));
  }
  const zm::Reference two =
      zm::parse_reference(zm::format_reference(reference_of(deck(), 2, {2, 0})), "two.toml");
  ASSERT_EQ(two.stages.size(), 2u);
  EXPECT_EQ(two.stages[1].stage, 2);
  EXPECT_EQ(two.find_stage(1), nullptr);
}

TEST(ReferenceFile, RefusesMalformedFilesNamingTheKey) {
  const std::string good = zm::format_reference(reference_of(deck(), 2));
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const auto refusal = [](const std::string& text) {
    return error_of([&] { zm::parse_reference(text, "ref.toml"); });
  };
  EXPECT_NE(refusal(edited("format = 1", "format = 2")).find("ref.toml: format: expected 1"),
            std::string::npos);
  EXPECT_NE(refusal(edited("steps = [1, 3, 5]", "steps = [1, 5, 3]")).find("losses.steps"),
            std::string::npos);
  EXPECT_NE(
      refusal(edited("steps = [1, 3, 5]", "steps = [1, 3]")).find("losses.stage0: expected 2"),
      std::string::npos);
  EXPECT_NE(refusal(edited("relative = ", "relative = 0.0 #")).find("tolerance.relative"),
            std::string::npos);
  EXPECT_NE(refusal(edited("stage2 = ", "stage9 = ")).find("losses.stage9: unknown key"),
            std::string::npos);
  EXPECT_NE(refusal(edited("\n[losses]\n", "\n[losses\n")).find("TOML syntax error"),
            std::string::npos);
  EXPECT_NE(refusal(edited("deck = ", "deck_path = ")).find("ref.toml: deck: missing"),
            std::string::npos);
}

TEST(ReferenceSettings, TheSameGlobalBatchAtAnyRankCountIsTheSameRun) {
  const auto settings = zm::loss_settings(deck({"train.micro_batch=4"}), 1);
  EXPECT_EQ(zm::loss_settings(deck({"train.micro_batch=2"}), 2).size(), settings.size());
  const zm::Reference reference = reference_of(deck({"train.micro_batch=4"}), 1);
  // 2 ranks x 2 sequences; 4 ranks x 1 sequence; 2 ranks x 1 x 2 micro-steps; tp 2 at 4 ranks.
  EXPECT_EQ(error_of([&] { zm::check_reference_applies(reference, "ref", deck(), 2); }), "");
  EXPECT_EQ(error_of([&] {
              zm::check_reference_applies(reference, "ref", deck({"train.micro_batch=1"}), 4);
            }),
            "");
  EXPECT_EQ(error_of([&] {
              zm::check_reference_applies(reference, "ref",
                                          deck({"train.micro_batch=1", "train.grad_accum=2"}), 2);
            }),
            "");
  // A key of another module, where this build has it (a deck refuses it otherwise).
  const zm::ModuleInfo* tp = zm::module_of_key("parallel.tp");
  if (tp != nullptr && tp->built) {
    EXPECT_EQ(error_of([&] {
                zm::check_reference_applies(reference, "ref", deck({"parallel.tp=2"}), 4);
              }),
              "");
  }
  const std::string refused =
      error_of([&] { zm::check_reference_applies(reference, "ref", deck(), 1); });
  EXPECT_NE(refused.find("global_batch: the reference's 4, this run's 2 (train.micro_batch 2 x 1 "
                         "data-parallel rank x train.grad_accum 1)"),
            std::string::npos)
      << refused;
}

TEST(ReferenceSettings, HowARunIsCarriedOutIsNotCompared) {
  const zm::Reference reference = reference_of(deck({"zero.stage=all"}), 2);
  const auto not_compared = [&](const std::string& setting) {
    EXPECT_EQ(error_of([&] { zm::check_reference_applies(reference, "ref", deck({setting}), 2); }),
              "")
        << setting;
  };
  for (const char* setting :
       {"zero.stage=3", "zero.stage=1", "zero.overlap=false", "zero.prefetch=2", "zero.bucket_mb=1",
        "zero.shard_size=1", "zero.offload_optimizer=\"host\"", "model.recompute=\"blocks\"",
        "model.classifier_chunk=0", "comm.backend=\"mpi\"", "comm.timeout_s=10",
        "output.dir=\"elsewhere\"", "output.log_every=2", "train.reduce_precision=\"fp32\""})
    not_compared(setting);
  // A key of another module, where this build has it (a deck refuses it otherwise).
  const zm::ModuleInfo* attention = zm::module_of_key("model.attention");
  if (attention != nullptr && attention->built) not_compared("model.attention=\"reference\"");
}

TEST(ReferenceSettings, WhatDecidesTheLossesIsRefusedNamingBothValues) {
  const zm::Reference reference = reference_of(deck({"zero.stage=all"}), 2);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train.lr=0.02", "train.lr: the reference's 0.01, this run's 0.02 (--set train.lr=0.02)"},
      {"train.seed=8", "train.seed: the reference's 7, this run's 8"},
      {"train.steps=4",
       "train.steps: the reference's 5, this run's 4 (--set train.steps=4) "
       "(this run would not reach the referenced step 5)"},
      {"train.warmup=2", "train.warmup: the reference's 1, this run's 2"},
      {"train.grad_clip=0", "train.grad_clip: the reference's 1.0, this run's 0.0"},
      {"model.layers=3", "model.layers: the reference's 2, this run's 3"},
      {"model.seq_len=8", "model.seq_len: the reference's 16, this run's 8"},
      {"data.source=\"shard.bin\"",
       "data.source: the reference's \"synthetic\", this run's \"shard.bin\""},
      {"train.precision=\"bf16\"",
       "train.precision: the reference's \"fp32\", this run's \"bf16\""},
      {"zero.quantize_grads=\"int8\"",
       "zero.quantize_grads: the reference's \"none\", this run's \"int8\""},
  };
  for (const auto& [setting, named] : cases) {
    const std::string refused = error_of([&, &setting = setting] {
      zm::check_reference_applies(reference, "ref", deck({"zero.stage=3", setting}), 2);
    });
    EXPECT_NE(refused.find(named), std::string::npos) << setting << ": " << refused;
    EXPECT_NE(refused.find("--check-reference ref: this run's settings differ"), std::string::npos);
  }
}

TEST(ReferenceSettings, RefusesAResumedRunAndAStageWithoutLosses) {
  const zm::Reference reference = reference_of(deck(), 2, {0, 2});
  EXPECT_NE(error_of([&] {
              zm::check_reference_applies(reference, "ref", deck({"train.resume=\"latest\""}), 2);
            }).find("train.resume = \"latest\": a check compares a whole run"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              zm::check_reference_applies(reference, "ref", deck({"zero.stage=1"}), 2);
            }).find("the reference has no losses for stage 1, only for 0, 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              zm::check_reference_applies(reference, "ref", deck({"zero.stage=\"all\""}), 2);
            }).find("no losses for stage 1"),
            std::string::npos);
}

TEST(ReferenceLosses, WritesOnlyWhatHasAMeasuredTolerance) {
  EXPECT_EQ(error_of([&] { zm::check_reference_can_be_written(deck()); }), "");
  EXPECT_NE(error_of([&] {
              zm::check_reference_can_be_written(deck({"train.precision=\"bf16\""}));
            }).find("no tolerance has been measured for bf16"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              zm::check_reference_can_be_written(deck({"zero.quantize_weights=\"int8\""}));
            }).find("without ZeRO++ quantization"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              zm::check_reference_can_be_written(deck({"train.resume=\"latest\""}));
            }).find("train.resume"),
            std::string::npos);
  EXPECT_EQ(zm::reference_steps(5), (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(zm::reference_steps(2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(zm::reference_steps(1), (std::vector<int64_t>{1}));
}

TEST(ReferenceLosses, PassesWithinTheToleranceAndNamesEveryMiss) {
  const zm::Reference reference = reference_of(deck(), 2);
  const double tolerance = reference.tolerance;
  ASSERT_GT(tolerance, 0);

  // Every loss moved by half the tolerance: a pass, and the largest difference is reported.
  std::vector<double> near = kLosses;
  for (double& loss : near) loss *= 1 + 0.5 * tolerance;
  const zm::LossComparison pass =
      zm::compare_losses(reference, {stage_result(0, near), stage_result(2, kLosses)});
  EXPECT_TRUE(pass.passed());
  EXPECT_EQ(pass.checked, 6);
  EXPECT_NEAR(pass.largest, 0.5 * tolerance, 1e-3 * tolerance);
  ASSERT_EQ(pass.lines.size(), 1u);
  EXPECT_NE(pass.lines[0].find("passed: 6 losses (stages 0, 2, steps 1, 3, 5)"), std::string::npos)
      << pass.lines[0];

  // Step 3 of stage 2 moved by twice the tolerance, step 5 not finite: two misses, named.
  std::vector<double> off = kLosses;
  off[2] *= 1 + 2 * tolerance;
  off[4] = NAN;
  const zm::LossComparison miss =
      zm::compare_losses(reference, {stage_result(0, kLosses), stage_result(2, off)});
  EXPECT_FALSE(miss.passed());
  EXPECT_EQ(miss.misses, 2);
  ASSERT_EQ(miss.lines.size(), 3u);
  EXPECT_NE(miss.lines[0].find("MISS at stage 2, step 3: expected loss 4.4062, got "),
            std::string::npos)
      << miss.lines[0];
  EXPECT_NE(miss.lines[0].find(fmt::format("relative difference {:.3g} > tolerance {:g}",
                                           2 * tolerance, tolerance)),
            std::string::npos)
      << miss.lines[0];
  EXPECT_NE(miss.lines[1].find("MISS at stage 2, step 5"), std::string::npos) << miss.lines[1];
  EXPECT_NE(miss.lines[2].find("failed: 2 of 6 losses outside"), std::string::npos);

  // A run that stopped after step 2: the later steps are not reached, which is no pass.
  const zm::LossComparison stopped = zm::compare_losses(
      reference, {stage_result(0, {kLosses[0], kLosses[1]}), stage_result(2, kLosses)});
  EXPECT_FALSE(stopped.passed());
  EXPECT_EQ(stopped.misses, 0);
  EXPECT_EQ(stopped.unreached, (std::vector<std::string>{"stage 0 step 3", "stage 0 step 5"}));
}

// Every committed reference reads, and its own command (the deck, the rank count and the --set
// overrides it names) is a run it accepts: a deck changed without its reference made again fails
// here, naming the setting.
TEST(ReferenceFile, EveryCommittedReferenceMatchesItsDeck) {
  namespace fs = std::filesystem;
  const fs::path inputs = zm_test::inputs_dir();
  int count = 0;
  for (const auto& entry : fs::directory_iterator(inputs / "references")) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    const zm::Reference reference = zm::read_reference(entry.path().string());
    // "mpiexec -n RANKS zeromini run DECK [--set KEY=VALUE]... --write-reference FILE"
    std::istringstream words(reference.command);
    std::string mpiexec, n, zeromini, run, deck_path, word;
    int ranks = 0;
    words >> mpiexec >> n >> ranks >> zeromini >> run >> deck_path;
    ASSERT_EQ(mpiexec + n + zeromini + run, "mpiexec-nzerominirun");
    EXPECT_EQ(deck_path, reference.deck);
    std::vector<std::string> overrides;
    while (words >> word)
      if (word == "--set" && words >> word) overrides.push_back(word);
    const zm::Deck deck = zm::load_deck((inputs.parent_path() / deck_path).string(), overrides);
    EXPECT_EQ(error_of([&] {
                zm::check_reference_applies(reference, entry.path().string(), deck, ranks);
              }),
              "");
    EXPECT_EQ(reference.tolerance, zm::reference_tolerance(deck));
    EXPECT_EQ(reference.steps, zm::reference_steps(deck.train.steps));
    EXPECT_EQ(reference.stages.size(), 4u) << "made with zero.stage = \"all\"";
    ++count;
  }
  EXPECT_GE(count, 2);  // tiny-test and quickstart, the decks the tests run
}
