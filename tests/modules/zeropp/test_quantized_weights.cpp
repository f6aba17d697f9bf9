// qwZ (zero.quantize_weights, stage 3): the parameter all-gathers move int8 blocks, dequantized
// into the compute type on arrival.
//   - "none" is the unquantized run bit for bit: every step's loss and the final model equal stage
//     2's, which gathers no unit but reduces the gradients as stage 3 does (every micro-step; the
//     stages agree bitwise, test_zero_equivalence), whatever zero.quantize_block says;
//   - "int8" trains close to the unquantized run (the bound below), but not bitwise like it (the
//     gathers really are quantized), alone, within shard groups and under hpZ, and every rank
//     ends with the same model (the master weights themselves are never quantized);
//   - under hpZ and bf16 the gather of the updated sub-shards across the groups is int8 too: the
//     replicas hold bitwise the same compute parameters (each its own sub-shard dequantized like
//     the others'), which are then not all the rounded masters, and the plan and the run move the
//     exact bytes of the int8 segments across the groups, about half of bf16's.
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/equivalence.hpp"
#include "common/gathered_state.hpp"
#include "common/rounded_masters.hpp"
#include "common/test_watchdog.hpp"
#include "plan/planner.hpp"

namespace {

using zm::testing::kGlobalBatch;
using zm::testing::largest_difference_from_rank0;
using zm::testing::with;

// Relative loss difference allowed at every step of the 5-step test deck (lr 1e-2): 1%, as for
// int8 gradients. Round to nearest moves each weight by at most scale / 2 = max|w| / 254 of its
// block; the loss of the small test model moves by far less than 1% under such perturbations
// (measured: see the report printed by the test).
using zm::testing::kInt8LossTolerance;

// The sharding variants of N ranks: one group; shard groups of 2 and hpZ groups of 2 where N
// makes two or more of them.
std::vector<std::vector<std::string>> shardings(int N) {
  std::vector<std::vector<std::string>> out = {{}};
  if (N >= 4 && N % 2 == 0) {
    out.push_back({"zero.shard_size=2"});
    out.push_back({"zero.secondary_shard_size=2"});
  }
  return out;
}

TEST(QuantizedWeights, NoneIsBitwiseTheUnquantizedRun) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible by " << N;
  for (const int64_t grad_accum : {1, 2}) {
    SCOPED_TRACE(fmt::format("{} ranks, grad_accum {}", N, grad_accum));
    const auto stage2 =
        zm::testing::train(zm::testing::test_deck(2, kGlobalBatch / N, grad_accum), *comm);
    const auto none = zm::testing::train(
        zm::testing::test_deck(3, kGlobalBatch / N, grad_accum,
                               {"zero.quantize_weights=none", "zero.quantize_block=7"}),
        *comm);
    EXPECT_EQ(none.losses, stage2.losses);
    EXPECT_EQ(none.params, stage2.params);
    EXPECT_LT(none.losses.back(), none.losses.front());
  }
}

TEST(QuantizedWeights, Int8TrainsCloseToTheUnquantizedRun) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (kGlobalBatch % N != 0) GTEST_SKIP() << "global batch not divisible by " << N;
  for (const auto& sharding : shardings(N))
    for (const char* block : {"2048", "32"}) {
      SCOPED_TRACE(fmt::format("{} ranks, {}, block {}", N, fmt::join(sharding, " "), block));
      const auto plain = zm::testing::train(
          zm::testing::test_deck(3, kGlobalBatch / N, 2, with(sharding, {})), *comm);
      const auto int8 = zm::testing::train(
          zm::testing::test_deck(3, kGlobalBatch / N, 2,
                                 with(sharding, {"zero.quantize_weights=int8",
                                                 std::string("zero.quantize_block=") + block})),
          *comm);
      ASSERT_EQ(int8.losses.size(), plain.losses.size());
      double worst = 0;
      for (size_t s = 0; s < plain.losses.size(); ++s)
        worst = std::max(worst, std::fabs(int8.losses[s] / plain.losses[s] - 1.0));
      EXPECT_LE(worst, kInt8LossTolerance);
      EXPECT_NE(int8.losses, plain.losses) << "the gathers were not quantized";
      EXPECT_LT(int8.losses.back(), int8.losses.front());
      EXPECT_EQ(largest_difference_from_rank0(int8.params), 0.0f) << "the ranks' models differ";
      if (comm->rank() == 0)
        std::printf("[ info ] %d ranks, %s, block %s: largest relative loss gap %.3g\n", N,
                    fmt::format("{}", fmt::join(sharding, " ")).c_str(), block, worst);
    }
}

// A run of a stage that gathers no unit refuses int8 weights, naming the key; the deck itself
// parses (the planner prices stages 0-2 of it without quantized gathers).
TEST(QuantizedWeights, NeedsStageThree) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  for (int stage = 0; stage <= 2; ++stage) {
    const zm::Deck deck = zm::testing::test_deck(stage, 1, 1, {"zero.quantize_weights=int8"});
    try {
      zm::make_trainer(deck, stage, *comm);
      ADD_FAILURE() << "stage " << stage << " ran with zero.quantize_weights = \"int8\"";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("zero.quantize_weights"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("zero.stage = 3"), std::string::npos) << e.what();
    }
  }
  EXPECT_ANY_THROW(zm::testing::test_deck(3, 1, 1, {"zero.quantize_block=0"}));
  EXPECT_ANY_THROW(zm::testing::test_deck(3, 1, 1, {"zero.quantize_weights=int4"}));
}

#if ZEROMINI_HAVE_BF16

// hpZ groups of 2 (two replicas of each shard) in bf16, with the given keys.
zm::Deck hpz_bf16_deck(int N, std::vector<std::string> more) {
  return zm::testing::test_deck(
      3, kGlobalBatch / N, 2, with({"train.precision=bf16", "zero.secondary_shard_size=2"}, more));
}

// The compute parameters this rank holds (under hpZ its group shard), in unit order.
std::vector<float> held_compute_parameters(zm::TrainerT<zm::bf16>& trainer) {
  const zm::ZeroEngineT<zm::bf16>& engine = trainer.typed_engine();
  std::vector<float> out;
  for (int u = 0; u < trainer.layout().num_units(); ++u) {
    const auto [begin, end] = engine.held_range(engine.param_storage(), u);
    if (end <= begin) continue;
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    Kokkos::View<const zm::bf16*, zm::MemSpace, Unmanaged> device(engine.param_at(u, begin),
                                                                  static_cast<size_t>(end - begin));
    auto host = Kokkos::create_mirror_view_and_copy(zm::HostSpace(), device);
    for (size_t i = 0; i < host.extent(0); ++i) out.push_back(static_cast<float>(host(i)));
  }
  return out;
}

// The elements of this rank's compute parameters whose bits differ from those of a replica (a
// rank holding the same shard in another group), summed over all ranks: 0 when they agree.
int64_t bits_differing_between_replicas(zm::TrainerT<zm::bf16>& trainer) {
  const std::vector<float> mine = held_compute_parameters(trainer);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm replicas;
  MPI_Comm_split(MPI_COMM_WORLD, trainer.engine().comm().rank(), world_rank, &replicas);
  int count = 0;
  MPI_Comm_size(replicas, &count);
  std::vector<float> all(mine.size() * static_cast<size_t>(count));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(),
                static_cast<int>(mine.size()), MPI_FLOAT, replicas);
  MPI_Comm_free(&replicas);
  int64_t differing = 0, total = 0;
  for (size_t i = 0; i < all.size(); ++i)
    differing += std::memcmp(&all[i], &mine[i % mine.size()], sizeof(float)) != 0;
  MPI_Allreduce(&differing, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

struct Bf16Run {
  zm::testing::TrainedRun run;
  zm::testing::MasterComparison masters;  // the compute parameters against the rounded masters
  int64_t replica_bits_differing = 0;
};

Bf16Run train_bf16(const zm::Deck& deck, zm::Communicator& comm) {
  zm::TrainerT<zm::bf16> trainer(deck, 3, comm);
  trainer.init_parameters();
  Bf16Run out;
  for (int64_t s = 0; s < deck.train.steps; ++s) out.run.losses.push_back(trainer.step(s).loss);
  out.run.params =
      zm::testing::whole_model(trainer, zm::testing::gathered_parameters(trainer.engine()));
  out.masters = zm::testing::compare_with_rounded_masters(trainer);
  out.replica_bits_differing = bits_differing_between_replicas(trainer);
  return out;
}

// hpZ + int8 under bf16, with and without overlap: close to the unquantized run, the replicas
// bitwise equal, and their compute copy the dequantized one (without the int8 gather across the
// groups it would be the rounded masters, as the unquantized run's is).
TEST(QuantizedWeightsHpzBf16, Int8TrainsCloseWithBitwiseEqualReplicas) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 4 || N % 2 != 0 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs hpZ groups of 2";
  for (const char* overlap : {"zero.overlap=true", "zero.overlap=false"}) {
    SCOPED_TRACE(fmt::format("{} ranks, {}", N, overlap));
    const Bf16Run plain = train_bf16(hpz_bf16_deck(N, {overlap}), *comm);
    const Bf16Run int8 = train_bf16(
        hpz_bf16_deck(N, {overlap, "zero.quantize_weights=int8", "zero.quantize_block=32"}), *comm);
    ASSERT_EQ(int8.run.losses.size(), plain.run.losses.size());
    double worst = 0;
    for (size_t s = 0; s < plain.run.losses.size(); ++s)
      worst = std::max(worst, std::fabs(int8.run.losses[s] / plain.run.losses[s] - 1.0));
    EXPECT_LE(worst, kInt8LossTolerance);
    EXPECT_NE(int8.run.losses, plain.run.losses) << "the gathers were not quantized";
    EXPECT_LT(int8.run.losses.back(), int8.run.losses.front());
    EXPECT_EQ(largest_difference_from_rank0(int8.run.params), 0.0f) << "the masters differ";
    EXPECT_EQ(int8.replica_bits_differing, 0) << "the replicas' compute parameters differ";
    EXPECT_EQ(plain.replica_bits_differing, 0);
    EXPECT_EQ(plain.masters.differing, 0);
    EXPECT_GT(int8.masters.differing, 0) << "the gather across the groups was not quantized";
    if (comm->rank() == 0)
      std::printf("[ info ] %d ranks, hpZ bf16 %s: largest relative loss gap %.3g\n", N, overlap,
                  worst);
  }
}

// "none" under hpZ and bf16 is the run without the key, bit for bit, whatever the block says.
TEST(QuantizedWeightsHpzBf16, NoneIsBitwiseTheUnquantizedRun) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 4 || N % 2 != 0 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs hpZ groups of 2";
  const Bf16Run plain = train_bf16(hpz_bf16_deck(N, {}), *comm);
  const Bf16Run none =
      train_bf16(hpz_bf16_deck(N, {"zero.quantize_weights=none", "zero.quantize_block=7"}), *comm);
  EXPECT_EQ(none.run.losses, plain.run.losses);
  EXPECT_EQ(none.run.params, plain.run.params);
  EXPECT_EQ(none.masters.differing, 0);
  EXPECT_EQ(none.replica_bits_differing, 0);
}

// Bytes sent across the groups by one rank's all-gathers in a step under hpZ + int8 + bf16: per
// unit, the ring share of the replicas' int8 segments of the sub-shard (codes padded to 4 bytes,
// then a 4-byte scale per block), counted here from that layout; the plan says exactly that, the
// run sends it, and it is about half of the bf16 gather's.
TEST(QuantizedWeightsHpzBf16, CrossGroupGatherBytesAreTheInt8Segments) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int N = comm->size();
  if (N < 4 || N % 2 != 0 || kGlobalBatch % N != 0) GTEST_SKIP() << "needs hpZ groups of 2";
  constexpr int64_t kBlock = 256;
  const zm::Deck plain = hpz_bf16_deck(N, {});
  const zm::Deck int8 = hpz_bf16_deck(
      N, {"zero.quantize_weights=int8", fmt::format("zero.quantize_block={}", kBlock)});
  const zm::ZeroMesh mesh = zm::plan_zero_mesh(int8, 3, N, nullptr);
  const zm::ParamLayout layout(int8.model);
  const zm::Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  const int replicas = partition.sub_shards();
  ASSERT_GE(replicas, 2);
  double expected = 0;
  for (int u = 0; u < partition.num_units(); ++u) {
    const int64_t n = partition.unit(u).sub_shard;
    const int64_t segment = (n + 3) / 4 * 4 + 4 * ((n + kBlock - 1) / kBlock);
    expected += zm::ring_bytes(zm::CommOp::AllGather, double(replicas * segment), replicas);
  }
  const auto across = [&](const zm::Deck& deck) {
    return zm::plan_traffic(deck, 3, mesh)[static_cast<size_t>(zm::CommLevel::InterGroup)]
                                          [static_cast<size_t>(zm::CommOp::AllGather)];
  };
  EXPECT_EQ(across(int8), expected);
  const double ratio = across(int8) / across(plain);
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.5 * (1.0 + 4.0 / kBlock) + 0.01);
  const zm::testing::TrainedRun run = zm::testing::train(int8, *comm);
  const int all_gather = static_cast<int>(zm::CommOp::AllGather);
  for (const zm::StepRecord& record : run.records)
    EXPECT_EQ(record.comm_inter_group.ops[all_gather].bytes, expected);
  if (comm->rank() == 0)
    std::printf(
        "[ info ] %d ranks, hpZ bf16: across the groups %.0f bytes of all-gather per step "
        "(int8, block %lld), %.0f (bf16): %.4f\n",
        N, across(int8), static_cast<long long>(kBlock), across(plain), ratio);
}

#else

TEST(QuantizedWeightsHpzBf16, NeedsABuildWithBf16) {
  GTEST_SKIP() << "this build's Kokkos has no bfloat16 type; the deck is refused (test_deck)";
}

#endif

}  // namespace
