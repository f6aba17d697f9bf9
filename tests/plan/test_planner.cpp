#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "core/deck.hpp"
#include "core/error.hpp"
#include "plan/machine.hpp"
#include "plan/planner.hpp"

namespace {

// A GPT-2-vocabulary deck in a precision (build checks skipped: any build plans bf16).
zm::Deck deck_with(int64_t layers, int64_t dim, int64_t heads, const char* precision) {
  return zm::parse_deck(
      fmt::format("[model]\nlayers = {}\ndim = {}\nheads = {}\nvocab = 50257\n"
                  "seq_len = 1024\n[train]\nmicro_batch = 1\nprecision = \"{}\"\n",
                  layers, dim, heads, precision),
      "planner-test", {}, zm::BuildChecks::Skip);
}

// The paper's closed forms (mixed precision, K = 12): stage 0 16 Psi, P_os 4 Psi + 12 Psi / N,
// P_os+g 2 Psi + 14 Psi / N, P_os+g+p 16 Psi / N, with Psi' the padded count.
TEST(Planner, MixedPrecisionModelStatesFollowThePaper) {
  const zm::Deck deck = deck_with(4, 256, 4, "bf16");
  for (int64_t n : {1, 4, 16, 64, 1024, 1 << 20}) {
    for (int stage = 0; stage <= 3; ++stage) {
      const zm::PlanPoint p = zm::plan_point(deck, stage, n, nullptr);
      const double psi = static_cast<double>(p.padded_params), N = static_cast<double>(n);
      const double expected[] = {16 * psi, 4 * psi + 12 * psi / N, 2 * psi + 14 * psi / N,
                                 16 * psi / N};
      EXPECT_DOUBLE_EQ(p.memory.model_states(), expected[stage]) << "stage " << stage << " N " << n;
    }
  }
}

TEST(Planner, TrafficIsTwoOrThreePsiPerRank) {
  const zm::Deck deck = deck_with(2, 128, 4, "fp32");
  for (int64_t n : {2, 3, 1000}) {
    for (int stage = 0; stage <= 3; ++stage) {
      const zm::PlanPoint p = zm::plan_point(deck, stage, n, nullptr);
      const double psi_bytes = 4.0 * static_cast<double>(p.padded_params);
      const double ring = (n - 1.0) / n;
      const double stats = 2 * ring * 8;
      EXPECT_NEAR(p.bytes_per_step_total(), (stage == 3 ? 3 : 2) * ring * psi_bytes + stats,
                  1e-6 * psi_bytes);
    }
  }
}

// The planner's cost must not grow with the rank count (a loop over ranks at 4 million ranks
// would take seconds): a whole point, memory and traffic, within a generous bound.
TEST(Planner, RunsInstantlyAtMillionsOfRanks) {
  const zm::Deck deck = deck_with(96, 12288, 96, "bf16");  // a GPT-3-sized model
  const auto start = std::chrono::steady_clock::now();
  const zm::PlanPoint p = zm::plan_point(deck, 3, 4'000'000, nullptr);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 0.5) << "planning one point at 4 million ranks took " << seconds << " s";
  EXPECT_GT(p.params, 170'000'000'000);
  EXPECT_LT(p.memory.model_states(), 16.0 * p.padded_params / 4'000'000 * 1.01);
}

TEST(Planner, LargestModelThatFitsIsTheDeepestThatFits) {
  const std::string machines = std::string(ZEROMINI_INPUTS_DIR) + "/machines";
  if (!std::filesystem::exists(machines + "/dgx-h100.toml")) GTEST_SKIP() << "no machine file";
  const zm::Machine m = zm::load_machine(machines + "/dgx-h100.toml");
  const zm::Deck deck = deck_with(12, 768, 12, "bf16");
  for (int stage = 0; stage <= 3; ++stage) {
    const zm::PlanPoint p = zm::plan_point(deck, stage, 8, &m);
    ASSERT_GT(p.largest_layers, 0);
    auto total_at = [&](int64_t layers) {
      zm::Deck d = deck;
      d.model.layers = layers;
      return zm::plan_memory(d, stage, 8).total();
    };
    EXPECT_LE(total_at(p.largest_layers), m.device_memory_bytes);
    EXPECT_GT(total_at(p.largest_layers + 1), m.device_memory_bytes);
    EXPECT_GT(p.step_seconds_serial, 0);
    EXPECT_GE(p.step_seconds_serial, p.step_seconds_overlapped);
  }
}

TEST(Planner, EveryMachineFileLoads) {
  const std::string machines = std::string(ZEROMINI_INPUTS_DIR) + "/machines";
  int count = 0;
  if (std::filesystem::exists(machines))
    for (const auto& entry : std::filesystem::directory_iterator(machines))
      if (entry.path().extension() == ".toml") {
        SCOPED_TRACE(entry.path().string());
        EXPECT_NO_THROW(zm::load_machine(entry.path().string()));
        ++count;
      }
  EXPECT_GE(count, 4);
}

}  // namespace
