// Evaluation (train.eval_every) under ZeRO-Offload: stage 3 with its parameter shard on
// the host: the evaluation's gathers stage the parameters as a training forward's do, and leave
// training unchanged.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "common/test_watchdog.hpp"
#include "modules/evaluation/evaluated_run.hpp"

namespace {

TEST(EvaluationOffload, ChangesNothingOfTraining) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  const std::vector<std::string> variant = {"zero.offload_optimizer=host",
                                            "zero.offload_params=host"};
  SCOPED_TRACE(fmt::format("stage 3, {} ranks, {}", N, fmt::join(variant, " ")));
  const zm::Deck deck = zm::testing::deck_at(3, N, variant);
  const zm::testing::EvaluatedRun evaluated = zm::testing::train(deck, *comm, true);
  const zm::testing::EvaluatedRun plain = zm::testing::train(deck, *comm, false);
  EXPECT_EQ(evaluated.losses, plain.losses);
  EXPECT_EQ(evaluated.params, plain.params);
}

}  // namespace
