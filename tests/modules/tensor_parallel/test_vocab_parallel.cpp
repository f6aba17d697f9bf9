// The vocabulary-parallel embedding and cross-entropy (tensor parallelism) against the whole-row
// kernels: the slices' results, combined as the model combines them over its tp group, are the
// whole kernel's to fp32 rounding (the log-sum-exp is combined from per-slice partial sums). Run
// with teams of one thread and (OpenMP) teams of several threads and lanes.
#include <gtest/gtest.h>

#include <cmath>

#include "common/kernel_test_util.hpp"
#include "common/test_team_shape.hpp"
#include "kernels/crossentropy.hpp"
#include "kernels/encoder.hpp"
#include "modules/tensor_parallel/vocab_parallel.hpp"

namespace {

namespace k = zm::kernels;
using zm::testing::DeviceVec;

// A vocabulary of 200 padded to 256: with 4 slices of 64 the last holds 8 real columns, with 8
// slices of 32 the last two only padding.
constexpr int64_t kRows = 6, kVocab = 200, kPaddedVocab = 256;

class VocabParallel : public ::testing::TestWithParam<int> {};

TEST_P(VocabParallel, CrossEntropyOfSlicesIsTheWholeRows) {
  const int slices = GetParam();
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t rows = kPaddedVocab / slices;
  const std::vector<float> logits = zm::testing::random_vector<float>(kRows * kPaddedVocab, 3, 2.0);
  const std::vector<int> targets = {0, 57, 63, 64, 130, 199};
  DeviceVec<int> tok(targets);
  // The whole rows.
  DeviceVec<float> whole(logits), whole_losses(kRows);
  k::softmax_crossentropy_forward(shape, whole.data(), whole_losses.data(), tok.data(), kRows,
                                  kVocab, kPaddedVocab);
  const std::vector<float> probs = whole.get(), losses = whole_losses.get();
  k::softmax_crossentropy_backward(shape, whole.data(), tok.data(), 1.0f / kRows, kRows, kVocab,
                                   kPaddedVocab);
  const std::vector<float> dlogits = whole.get();
  // Each slice's statistics, gathered in rank order as the all-gather lays them out.
  std::vector<float> gathered;
  std::vector<DeviceVec<float>> parts;
  for (int r = 0; r < slices; ++r) {
    std::vector<float> part(static_cast<size_t>(kRows * rows));
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < rows; ++j)
        part[i * rows + j] = logits[i * kPaddedVocab + r * rows + j];
    parts.emplace_back(part);
    DeviceVec<float> stats(static_cast<size_t>(k::kSliceStats * kRows));
    k::crossentropy_slice_stats(shape, parts.back().data(), stats.data(), tok.data(), r * rows,
                                kRows, kVocab, rows);
    for (float x : stats.get()) gathered.push_back(x);
  }
  DeviceVec<float> all(gathered), slice_losses(kRows), row_stats(2 * kRows);
  k::crossentropy_combine(shape, all.data(), slices, slice_losses.data(), row_stats.data(), kRows);
  const std::vector<float> combined = slice_losses.get();
  for (int64_t i = 0; i < kRows; ++i)
    EXPECT_NEAR(combined[i], losses[i], 2e-6 * std::fabs(losses[i])) << "row " << i;
  for (int r = 0; r < slices; ++r) {
    k::softmax_slice(shape, parts[r].data(), row_stats.data(), r * rows, kRows, kVocab, rows);
    const std::vector<float> p = parts[r].get();
    k::crossentropy_slice_backward(shape, parts[r].data(), tok.data(), r * rows, 1.0f / kRows,
                                   kRows, kVocab, rows);
    const std::vector<float> d = parts[r].get();
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < rows; ++j) {
        const size_t at = static_cast<size_t>(i * kPaddedVocab + r * rows + j);
        EXPECT_NEAR(p[i * rows + j], probs[at], 1e-6 * std::fabs(probs[at]) + 1e-9);
        EXPECT_NEAR(d[i * rows + j], dlogits[at], 1e-6 * std::fabs(dlogits[at]) + 1e-9);
      }
  }
}

// The chunked LM head's one-pass kernels give bitwise what the two-pass pairs they replace give:
// the whole rows' losses and dlogits, and each slice's dlogits from the combined statistics.
// Bitwise also where the compiler contracts multiply-adds (nvcc by default, GCC with FMA): both
// paths evaluate the same inline functions (softmax_row.hpp, fast_exp), the whole-row kernel
// reads each probability back from memory after a team barrier as the pair does, and the slice
// kernel rounds it explicitly (rounded_product) where it would otherwise subtract the one-hot
// from a product still in a register, a multiply-add the pair cannot form.
TEST_P(VocabParallel, FusedPassesAreBitwiseTheTwoPasses) {
  const int slices = GetParam();
  const k::TeamShape shape = zm::testing::test_team_shape();
  const int64_t rows = kPaddedVocab / slices;
  const std::vector<float> logits = zm::testing::random_vector<float>(kRows * kPaddedVocab, 5, 2.0);
  const std::vector<int> targets = {199, 0, 64, 63, 131, 57};
  DeviceVec<int> tok(targets);
  DeviceVec<float> two(logits), two_losses(kRows), one(logits), one_losses(kRows);
  k::softmax_crossentropy_forward(shape, two.data(), two_losses.data(), tok.data(), kRows, kVocab,
                                  kPaddedVocab);
  k::softmax_crossentropy_backward(shape, two.data(), tok.data(), 1.0f / kRows, kRows, kVocab,
                                   kPaddedVocab);
  k::softmax_crossentropy_fused(shape, one.data(), one_losses.data(), tok.data(), 1.0f / kRows,
                                kRows, kVocab, kPaddedVocab);
  EXPECT_EQ(one.get(), two.get());
  EXPECT_EQ(one_losses.get(), two_losses.get());
  // Row statistics of the whole rows, as crossentropy_combine gives them.
  std::vector<float> gathered;
  std::vector<std::vector<float>> parts;
  for (int r = 0; r < slices; ++r) {
    std::vector<float> part(static_cast<size_t>(kRows * rows));
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < rows; ++j)
        part[i * rows + j] = logits[i * kPaddedVocab + r * rows + j];
    parts.push_back(part);
    DeviceVec<float> slice(part), stats(static_cast<size_t>(k::kSliceStats * kRows));
    k::crossentropy_slice_stats(shape, slice.data(), stats.data(), tok.data(), r * rows, kRows,
                                kVocab, rows);
    for (float x : stats.get()) gathered.push_back(x);
  }
  DeviceVec<float> all(gathered), losses(kRows), row_stats(2 * kRows);
  k::crossentropy_combine(shape, all.data(), slices, losses.data(), row_stats.data(), kRows);
  for (int r = 0; r < slices; ++r) {
    DeviceVec<float> pair(parts[r]), fused(parts[r]);
    k::softmax_slice(shape, pair.data(), row_stats.data(), r * rows, kRows, kVocab, rows);
    k::crossentropy_slice_backward(shape, pair.data(), tok.data(), r * rows, 1.0f / kRows, kRows,
                                   kVocab, rows);
    k::crossentropy_slice_dlogits(shape, fused.data(), row_stats.data(), tok.data(), r * rows,
                                  1.0f / kRows, kRows, kVocab, rows);
    EXPECT_EQ(fused.get(), pair.get()) << "slice " << r;
  }
}

TEST_P(VocabParallel, EmbeddingSlicesSumToTheWholeEmbedding) {
  const int slices = GetParam();
  const k::TeamShape shape = zm::testing::test_team_shape();
  constexpr int64_t B = 2, S = 3, C = 8;
  const int64_t rows = kPaddedVocab / slices;
  const std::vector<float> wte = zm::testing::random_vector<float>(kPaddedVocab * C, 5);
  const std::vector<float> wpe = zm::testing::random_vector<float>(S * C, 6);
  DeviceVec<int> tok(std::vector<int>{0, 63, 64, 199, 120, 5});
  DeviceVec<float> wte_d(wte), wpe_d(wpe), whole(B * S * C);
  k::encoder_forward(shape, whole.data(), tok.data(), wte_d.data(), wpe_d.data(), B, S, C);
  std::vector<float> sum(static_cast<size_t>(B * S * C), 0.0f);
  for (int r = 0; r < slices; ++r) {
    DeviceVec<float> out(B * S * C);
    k::encoder_forward_vocab_slice(shape, out.data(), tok.data(), wte_d.data() + r * rows * C,
                                   r * rows, rows, r == 0 ? wpe_d.data() : nullptr, B, S, C);
    const std::vector<float> o = out.get();
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += o[i];
  }
  EXPECT_EQ(sum, whole.get());  // every other term is zero: bitwise the whole embedding
}

INSTANTIATE_TEST_SUITE_P(Slices, VocabParallel, ::testing::Values(1, 2, 4, 8));

}  // namespace
