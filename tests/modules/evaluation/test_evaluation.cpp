// Evaluation (train.eval_every): a forward pass over held-out sequences between steps. It must
// read only the held-out split, leave training exactly as it was (stage 3 gathers parameters for
// it as for a training forward, and the next step's gathers must be unaffected), and give the
// same loss at every stage, as the stages' training losses are the same.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "common/token_shard_writer.hpp"
#include "common/zero_test_util.hpp"
#include "modules/evaluation/evaluated_run.hpp"

namespace {

using zm::testing::deck_at;
using zm::testing::EvaluatedRun;
using zm::testing::train;

// Evaluating after every step changes no training loss and no parameter, and the held-out loss
// is the same at every stage, bit for bit where the training is (stages 1-3 always; stage 0, which
// all-reduces where they reduce-scatter, at 1 and 2 ranks: tests/zero/test_zero_equivalence.cpp).
TEST(Evaluation, ChangesNothingOfTrainingAndAgreesAcrossStages) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  const std::vector<std::vector<std::string>> variants = {
      {},
      {"model.classifier_chunk=24", "model.recompute=blocks"},
      {"zero.prefetch=2", "zero.overlap=false"},
  };
  for (const auto& variant : variants) {
    std::vector<double> stage0_eval, sharded_eval;
    for (int stage = 0; stage <= 3; ++stage) {
      SCOPED_TRACE(fmt::format("stage {}, {} ranks, {}", stage, N, fmt::join(variant, " ")));
      const zm::Deck deck = deck_at(stage, N, variant);
      const EvaluatedRun evaluated = train(deck, *comm, true);
      const EvaluatedRun plain = train(deck, *comm, false);
      EXPECT_EQ(evaluated.losses, plain.losses);
      EXPECT_EQ(evaluated.params, plain.params);
      ASSERT_EQ(evaluated.eval_losses.size(), static_cast<size_t>(deck.train.steps));
      for (double loss : evaluated.eval_losses) EXPECT_TRUE(std::isfinite(loss));
      // The model learns: the held-out loss falls from the first evaluation to the last.
      EXPECT_LT(evaluated.eval_losses.back(), evaluated.eval_losses.front());
      if (stage == 1) sharded_eval = evaluated.eval_losses;
      if (stage == 0) stage0_eval = evaluated.eval_losses;
      if (stage > 1) {
        EXPECT_EQ(evaluated.eval_losses, sharded_eval);
      }
      if (stage == 1 && N <= 2) {
        EXPECT_EQ(stage0_eval, sharded_eval);
      }
    }
  }
}

// A shard for every rank of the test, written by rank 0: its path (the same on every rank).
std::string shared_shard(const std::string& name, const std::vector<uint16_t>& tokens) {
  int id = ::getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("zeromini-evaluation-{}-{}.bin", id, name))
                               .string();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) zm::testing::write_token_shard(path, tokens);
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

std::vector<uint16_t> random_tokens(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<uint16_t> tokens(count);
  for (uint16_t& t : tokens) t = static_cast<uint16_t>(generator() % 97);
  return tokens;
}

// Tokens of the held-out split changed: the training losses are unchanged and the evaluation
// losses change. Tokens of the training split changed: the training losses change.
TEST(Evaluation, ReadsOnlyTheHeldOutSplit) {
  if (!zm::testing::reads_data_files()) GTEST_SKIP() << "this build reads no data files";
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  // 2,000 tokens; the last quarter held out (31 sequences of 16 for the 24 evaluated).
  const std::vector<uint16_t> tokens = random_tokens(2000, 11);
  std::vector<uint16_t> other_tail = tokens, other_head = tokens;
  for (size_t i = 1500; i < other_tail.size(); ++i) other_tail[i] = (tokens[i] + 1) % 97;
  for (size_t i = 0; i < 200; ++i) other_head[i] = (tokens[i] + 1) % 97;
  const std::string original = shared_shard("original", tokens);
  const std::string tail_changed = shared_shard("tail", other_tail);
  const std::string head_changed = shared_shard("head", other_head);
  const std::string held_out_a = shared_shard("held-out-a", random_tokens(600, 12));
  const std::string held_out_b = shared_shard("held-out-b", random_tokens(600, 13));
  auto run_on = [&](const std::string& source, const std::string& val_source) {
    std::vector<std::string> sets = {"data.source=" + source, "data.val_fraction=0.25"};
    if (!val_source.empty()) sets.push_back("data.val_source=" + val_source);
    return train(deck_at(3, N, sets), *comm, true);
  };
  const EvaluatedRun base = run_on(original, "");
  const EvaluatedRun tail = run_on(tail_changed, "");
  EXPECT_EQ(tail.losses, base.losses);
  for (size_t i = 0; i < base.eval_losses.size(); ++i)
    EXPECT_NE(tail.eval_losses[i], base.eval_losses[i]) << "evaluation " << i + 1;
  const EvaluatedRun head = run_on(head_changed, "");
  EXPECT_NE(head.losses.front(), base.losses.front());
  // With a shard of its own (data.val_source), the whole training shard trains.
  const EvaluatedRun a = run_on(original, held_out_a);
  const EvaluatedRun b = run_on(original, held_out_b);
  EXPECT_EQ(a.losses, b.losses);
  for (size_t i = 0; i < a.eval_losses.size(); ++i)
    EXPECT_NE(a.eval_losses[i], b.eval_losses[i]) << "evaluation " << i + 1;
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm->rank() == 0)
    for (const std::string& path : {original, tail_changed, head_changed, held_out_a, held_out_b})
      std::filesystem::remove(path);
}

}  // namespace
