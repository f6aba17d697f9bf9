// plan --largest under tensor parallelism (the module tensor_parallel's --tp axis): the ZeRO
// paper's Table 2 theoretical columns (max_params_for_model_states) and the largest model per tp
// degree.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "common/test_paths.hpp"
#include "core/deck.hpp"
#include "modules/largest_model/largest.hpp"
#include "plan/machine.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/planner.hpp"
#include "plan/planner_test_util.hpp"

namespace {

using zm_test::two_link_machine;

// The module's plan axis (--tp), and its index among the plan's axes.
size_t tp_axis() {
  for (size_t a = 0; a < zm::plan_axes().size(); ++a)
    if (zm::plan_axes()[a].option == "--tp") return a;
  throw std::logic_error("no --tp axis");
}
// The deck at tensor-parallel degree tp, as `zeromini plan --tp` sets it.
zm::Deck with_tensor_parallel(const zm::Deck& deck, int64_t tp) {
  return zm::plan_axes()[tp_axis()].at(deck, tp);
}

zm::Deck tp_deck(int64_t layers, int64_t dim, int64_t heads, const char* precision, int64_t tp,
                 const char* recompute = "none", int64_t micro_batch = 2, int64_t grad_accum = 1) {
  return zm::parse_deck(
      fmt::format("[model]\nlayers = {}\ndim = {}\nheads = {}\nvocab = 50257\nseq_len = 128\n"
                  "recompute = \"{}\"\n[train]\nmicro_batch = {}\ngrad_accum = {}\n"
                  "precision = \"{}\"\n[parallel]\ntp = {}\n",
                  layers, dim, heads, recompute, micro_batch, grad_accum, precision, tp),
      "planner-tp-test", {}, zm::BuildChecks::Skip);
}

// A printed size of the paper ("7.6B", "0.5T"): its value and the unit of its last digit.
struct Printed {
  double value, unit;
};
Printed printed(double digits, double last_digit, double scale) {
  return {digits * scale, last_digit * scale};
}

// The ZeRO paper's Table 2, theoretical columns (inputs/paper/published.toml): the largest Psi
// whose model states (K = 12) fit 32 GB = 32e9 bytes per GPU at 64-way data parallelism x MP-way
// model parallelism. The paper's MP rows are its MP = 1 figures, rounded, times MP (7.6B, 15.2B,
// ..., 121.6B), and zeromini keeps the replicated tensors (wpe, LayerNorms, row-parallel biases)
// whole on every tp rank. So: at MP = 1 the planned figure rounds to the printed one; at MP = t it
// is within t x half a last digit of the MP = 1 figure, plus half a last digit of its own, plus
// the replicated share of one tp rank's elements.
TEST(PlannerTp, PaperTable2TheoreticalColumns) {
  const std::string path = zm_test::inputs_dir() + "/paper/zero-table2-d4096.toml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no paper deck";
  const zm::Deck deck = zm::load_deck(path, {}, zm::BuildChecks::Skip);
  const double B = 1e9, T = 1e12, memory = 32e9;
  // [MP index][stage]: baseline, P_os, P_os+g, P_os+g+p as printed.
  const Printed paper[5][4] = {
      {printed(2, 1, B), printed(7.6, 0.1, B), printed(14.4, 0.1, B), printed(128, 1, B)},
      {printed(4, 1, B), printed(15.2, 0.1, B), printed(28.8, 0.1, B), printed(256, 1, B)},
      {printed(8, 1, B), printed(30.4, 0.1, B), printed(57.6, 0.1, B), printed(0.5, 0.1, T)},
      {printed(16, 1, B), printed(60.8, 0.1, B), printed(115.2, 0.1, B), printed(1, 1, T)},
      {printed(32, 1, B), printed(121.6, 0.1, B), printed(230.4, 0.1, B), printed(2, 1, T)}};
  const zm::ModelConfig& m = deck.model;
  const double C = double(m.dim), L = double(m.layers);
  const double split = double(m.padded_vocab()) * C + L * (12 * C * C + 7 * C);
  const double replicated = double(m.seq_len) * C + L * 6 * C + 2 * C;
  for (int row = 0; row < 5; ++row) {
    const int64_t mp = int64_t(1) << row;
    const zm::Deck d = with_tensor_parallel(deck, mp);
    const double share = replicated / (split / double(mp) + replicated);
    for (int stage = 0; stage <= 3; ++stage) {
      SCOPED_TRACE(fmt::format("MP {} stage {}", mp, stage));
      const zm::ZeroMesh mesh = zm::plan_zero_mesh(d, stage, 64 * mp, nullptr);
      ASSERT_EQ(mesh.data_parallel(), 64);
      const double planned = zm::max_params_for_model_states(d, stage, mesh, memory);
      const Printed& p = paper[row][stage];
      if (mp == 1) {
        EXPECT_DOUBLE_EQ(std::round(planned / p.unit) * p.unit, p.value) << planned;
        continue;
      }
      const double bound = double(mp) * paper[0][stage].unit / 2 + p.unit / 2 + planned * share;
      EXPECT_LE(std::abs(planned - p.value), bound) << planned;
    }
  }
}

// plan --largest per tp degree: each tp rank holds 1/tp of the split model states, so the largest
// model grows with tp at every stage, and at stage 0 (model states replicated over the
// data-parallel ranks) by nearly tp: the activations a block keeps whole on every tp rank (its
// LayerNorm outputs and residual sums) and the replicated tensors hold it below tp, one more layer
// than the depth would give at most above it.
TEST(PlannerTp, LargestGrowsWithTp) {
  const zm::Machine m = two_link_machine(16, 400e9, 25e9);
  const zm::Deck deck = tp_deck(1, 1024, 16, "bf16", 1, "blocks", 1);
  const std::vector<int64_t> tps = {1, 2, 4, 8};
  std::vector<zm::Deck> decks;
  for (int64_t tp : tps) decks.push_back(with_tensor_parallel(deck, tp));
  const auto cells = zm::plan_largest_models(decks, m, {16}, {0, 1, 2, 3});
  ASSERT_EQ(cells.size(), tps.size() * 4 * std::size(zm::kLargestOptions));
  const size_t per_tp = 4 * std::size(zm::kLargestOptions);
  for (size_t k = 0; k < per_tp; ++k) {
    const zm::LargestModel& first = cells[k];
    if (!first.applies || !first.possible) continue;
    SCOPED_TRACE(
        fmt::format("stage {} option {}", first.stage, k % std::size(zm::kLargestOptions)));
    ASSERT_GT(first.layers, 0);
    for (size_t t = 1; t < tps.size(); ++t) {
      const zm::LargestModel& c = cells[t * per_tp + k];
      const zm::LargestModel& before = cells[(t - 1) * per_tp + k];
      const int64_t tp = c.axes[tp_axis()];
      ASSERT_EQ(tp, tps[t]);
      ASSERT_EQ(c.stage, first.stage);
      EXPECT_GT(c.point.params, before.point.params) << "tp " << tp;
      if (c.stage != 0) continue;
      const double ratio = double(c.point.params) / double(first.point.params);
      EXPECT_LE(ratio, double(tp) * double(first.layers + 1) / double(first.layers));
      EXPECT_GE(ratio, 0.8 * double(tp)) << "tp " << tp;
    }
  }
}

}  // namespace
