// The comparison behind the equivalence tests (test_zero_equivalence, test_hybrid_sharding): a
// run against stage 0 at one rank with the same global batch.
//
// Tolerances. The runs differ only in summation order: the loss is a mean of N per-rank means
// instead of one mean, and gradients are summed over N ranks by the MPI reduction. In fp32 that
// changes gradients in their last bits (relative ~1e-7). AdamW normalises each gradient element
// by its own running RMS, so an element whose gradient is tiny can see a relative change of its
// update far above 1e-7; its parameter moves by at most lr per step, though. Hence: losses agree
// to 1e-5 relative, and every parameter to 1e-5 absolute after 5 steps (lr 1e-2, so a whole
// update is 1e-2; 1e-5 allows a 0.1% disagreement of one update and nothing systematic).
// One family of parameters is exempt: the key part of each QKV bias. Its gradient is exactly
// zero in exact arithmetic (it adds the same q.b_k to every score of a row, and softmax ignores
// a constant shift), so every run computes pure rounding noise for it and AdamW turns that
// noise into updates of size ~lr in a direction that depends on the summation order. For those
// entries the test checks that they stay within Adam's step bound (3 lr per step).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/rounded_masters.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "model/layout.hpp"

namespace zm::testing {

inline constexpr int64_t kGlobalBatch = 12;
inline constexpr double kLossTolerance = 1e-5;
inline constexpr double kParamTolerance = 1e-5;

// The group sizes of `key` (a shard size: zero.shard_size, zero.secondary_shard_size) that make
// two or more groups of N ranks, each with its deck overrides: the number itself, and "node" with
// faked nodes of that many ranks.
inline std::vector<std::vector<std::string>> group_shardings(int N, const std::string& key) {
  std::vector<std::vector<std::string>> out;
  for (int g = 1; g < N; ++g)
    if (N % g == 0) {
      out.push_back({key + "=" + std::to_string(g)});
      out.push_back({key + "=node", "zero.ranks_per_node=" + std::to_string(g)});
    }
  return out;
}

inline const TrainedRun& reference(int64_t grad_accum) {
  static std::map<int64_t, TrainedRun> cache;
  auto found = cache.find(grad_accum);
  if (found != cache.end()) return found->second;
  auto self = zm::make_communicator("mpi", MPI_COMM_SELF, zm::testing::watchdog());
  // One rank, one micro-step, the whole global batch.
  const zm::Deck deck = test_deck(0, kGlobalBatch * grad_accum, 1);
  return cache.emplace(grad_accum, train(deck, *self)).first->second;
}

// Logical indices of the key part of every block's QKV bias.
inline std::vector<bool> key_bias_mask(const zm::ModelConfig& model) {
  const zm::ParamLayout layout(model);
  std::vector<bool> mask(static_cast<size_t>(layout.total()), false);
  for (int64_t l = 0; l < model.layers; ++l) {
    const int64_t base = layout.unit(layout.block_unit(static_cast<int>(l))).offset +
                         layout.block().qkv_b + model.dim;
    for (int64_t c = 0; c < model.dim; ++c) mask[static_cast<size_t>(base + c)] = true;
  }
  return mask;
}

// `param_tolerance`: the parameters' (kParamTolerance unless a caller argues another).
inline void expect_same_training(const TrainedRun& run, const TrainedRun& ref,
                                 double param_tolerance = kParamTolerance) {
  const zm::Deck deck = test_deck(0, 1);
  const std::vector<bool> key_bias = key_bias_mask(deck.model);
  const double adam_bound = 3.0 * deck.train.lr * static_cast<double>(deck.train.steps);
  ASSERT_EQ(run.losses.size(), ref.losses.size());
  for (size_t s = 0; s < ref.losses.size(); ++s)
    EXPECT_NEAR(run.losses[s], ref.losses[s], kLossTolerance * std::fabs(ref.losses[s]))
        << "step " << s;
  ASSERT_EQ(run.params.size(), ref.params.size());
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < ref.params.size(); ++i) {
    if (key_bias[i]) {
      EXPECT_LE(std::fabs(run.params[i]), adam_bound) << "key bias element " << i;
      continue;
    }
    const double d = std::fabs(double(run.params[i]) - double(ref.params[i]));
    if (d > worst) worst = d, worst_at = i;
  }
  EXPECT_LE(worst, param_tolerance) << "largest parameter difference at element " << worst_at;
  // The loss must actually fall: a frozen model would pass the comparisons trivially.
  EXPECT_LT(ref.losses.back(), ref.losses.front());
}

#if ZEROMINI_HAVE_BF16
// A bf16 run of `deck` at `stage`: after its steps every bf16 compute parameter a rank holds is
// the rounding of its fp32 master, and its losses follow `plain`'s (the same run without the
// setting under test) within 1%.
inline void expect_bf16_follows(const zm::Deck& deck, int stage, const zm::Deck& plain,
                                zm::Communicator& comm) {
  zm::TrainerT<zm::bf16> trainer(deck, stage, comm);
  trainer.init_parameters();
  std::vector<double> losses;
  for (int64_t s = 0; s < deck.train.steps; ++s) losses.push_back(trainer.step(s).loss);
  const auto [compared, differing] = compare_with_rounded_masters(trainer);
  EXPECT_GT(compared, 0);
  EXPECT_EQ(differing, 0) << "of " << compared << " parameters";
  const TrainedRun reference_run = train(plain, comm);
  for (size_t s = 0; s < losses.size(); ++s)
    EXPECT_NEAR(losses[s], reference_run.losses[s], 0.01 * reference_run.losses[s]) << "step " << s;
}
#endif

}  // namespace zm::testing
