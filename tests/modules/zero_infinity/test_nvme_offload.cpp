// ZeRO-Infinity's NVMe home for the optimizer state (zero.offload_optimizer = "nvme") changes where
// the fp32 master, Adam m and v live, not the arithmetic: each unit's state is read from the
// rank's swap file into host memory by an exact copy, updated by the offload module's host AdamW
// (the same function as with the state in host memory, in the same order), and written back by an
// exact copy. So a run with the state on NVMe trains the same model as one with it in host memory
// and one without offload, bit for bit, at every stage that shards the optimizer state and every
// rank count, through either I/O engine; and a checkpoint holds that state like any other. So
// too with the gradient shard there (zero.nvme_gradients).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "common/checkpoint_test_util.hpp"
#include "common/equivalence.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "core/memory.hpp"
#include "io/checkpoint.hpp"
#include "modules/zero_infinity/async_io.hpp"

namespace {

using zm::testing::kGlobalBatch;

std::vector<std::string> on_nvme(const std::string& dir, const char* engine = "auto") {
  return {"zero.offload_optimizer=nvme", "zero.nvme_dir=" + dir,
          fmt::format("zero.nvme_engine={}", engine)};
}

zm::testing::TrainedRun train_with(int stage, std::vector<std::string> common,
                                   const std::vector<std::string>& home, zm::Communicator& comm) {
  common.insert(common.end(), home.begin(), home.end());
  return zm::testing::train(zm::testing::test_deck(stage, kGlobalBatch / comm.size(), 1, common),
                            comm);
}

// A trainer of `deck` made with its memory counted in `ledger`.
std::unique_ptr<zm::Trainer> counted_trainer(const zm::Deck& deck, int stage,
                                             zm::Communicator& comm, zm::MemoryLedger& ledger) {
  zm::RunContext context;
  context.ledger = &ledger;
  return zm::make_trainer(deck, stage, comm, context);
}
// The elements of the rank's parameter shard (all units), or of its optimizer piece.
int64_t elements_held(const zm::ZeroEngine& engine, bool optimizer_piece) {
  int64_t elements = 0;
  for (int u = 0; u < engine.partition().num_units(); ++u)
    elements += optimizer_piece ? engine.partition().unit(u).padded / engine.optimizer_piece().count
                                : engine.partition().unit(u).shard;
  return elements;
}

class NvmeOffload : public ::testing::TestWithParam<int> {};

TEST_P(NvmeOffload, TrainsTheSameModelAsHostOffloadAndNoOffloadBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const int stage = GetParam();
  const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, fmt::format("nvme{}", stage));
  for (const std::vector<std::string>& common :
       {std::vector<std::string>{}, std::vector<std::string>{"train.grad_accum=2"}}) {
    SCOPED_TRACE(
        fmt::format("stage {}, {} ranks, {}", stage, comm->size(), fmt::join(common, " ")));
    const auto none = train_with(stage, common, {}, *comm);
    const auto host = train_with(stage, common, {"zero.offload_optimizer=host"}, *comm);
    for (const char* engine : {"auto", "threads"}) {
      SCOPED_TRACE(engine);
      const auto nvme = train_with(stage, common, on_nvme(dir, engine), *comm);
      EXPECT_EQ(nvme.losses, none.losses);
      EXPECT_EQ(nvme.losses, host.losses);
      EXPECT_EQ(nvme.params, none.params);
    }
    // Five staging slots (three units read ahead) and transfers in 4 KiB requests.
    std::vector<std::string> staged = on_nvme(dir);
    staged.insert(staged.end(), {"zero.nvme_buffers=5", "zero.nvme_block_kib=4"});
    const auto nvme = train_with(stage, common, staged, *comm);
    EXPECT_EQ(nvme.losses, none.losses);
    EXPECT_EQ(nvme.params, none.params);
  }
}

// The state is counted where it lives: in files (MemCategory::Storage), 12 bytes per element of
// the rank's optimizer piece, and none of it in device or host memory.
TEST_P(NvmeOffload, TheStateIsCountedInStorageNotInMemory) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const int stage = GetParam();
  const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, fmt::format("nvmemem{}", stage));
  std::vector<std::string> overrides = on_nvme(dir);
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / comm->size(), 1, overrides);
  zm::MemoryLedger ledger;
  const auto trainer = counted_trainer(deck, stage, *comm, ledger);
  const int64_t elements = elements_held(trainer->engine(), true);
  EXPECT_EQ(ledger.current(zm::MemCategory::Storage), static_cast<size_t>(12 * elements));
  EXPECT_EQ(ledger.current(zm::MemCategory::Optimizer), 0u);
}

// Each step reads every unit's state once and writes it back once: its three arrays, each
// rounded up to the O_DIRECT alignment (what the run's records report per step).
TEST_P(NvmeOffload, EachStepReadsAndWritesTheStateOnce) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const int stage = GetParam();
  const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, fmt::format("nvmeio{}", stage));
  const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / comm->size(), 1, on_nvme(dir));
  const auto trainer = zm::make_trainer(deck, stage, *comm);
  trainer->init_parameters();
  const zm::Partition& partition = trainer->engine().partition();
  const int pieces = trainer->engine().optimizer_piece().count;
  int64_t state_bytes = 0;
  for (int u = 0; u < partition.num_units(); ++u)
    state_bytes += 3 * zm::nvme::aligned_size(partition.unit(u).padded / pieces * 4);
  const zm::nvme::IoTotals before = zm::nvme::this_rank_io();
  const int steps = 3;
  for (int s = 0; s < steps; ++s) trainer->step(s);
  const zm::nvme::IoTotals& after = zm::nvme::this_rank_io();
  EXPECT_EQ(after.bytes_read - before.bytes_read, steps * state_bytes);
  EXPECT_EQ(after.bytes_written - before.bytes_written, steps * state_bytes);
  EXPECT_EQ(after.reads - before.reads, steps * partition.num_units());
  EXPECT_EQ(after.writes - before.writes, steps * partition.num_units());
}

INSTANTIATE_TEST_SUITE_P(Stages, NvmeOffload, ::testing::Values(1, 2, 3));

std::vector<std::vector<std::string>> precisions() {
  std::vector<std::vector<std::string>> out = {{"train.precision=fp32"}};
  if (ZEROMINI_HAVE_BF16) out.push_back({"train.precision=bf16"});
  return out;
}

// zero.offload_params = "nvme" (stage 3): the parameter shard in the swap file beside the state
// (under bf16 a fourth array, which AdamW writes in the slot beside the master; in fp32 the
// master itself), read by an exact copy for each gather. The same model as with the shard in
// host memory and on the device, bit for bit, in fp32 and bf16, with gradient accumulation.
TEST(NvmeParams, TrainTheSameModelAsHostOffloadAndNoOffloadBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, "nvmeparams");
  std::vector<std::string> nvme = on_nvme(dir);
  nvme.push_back("zero.offload_params=nvme");
  for (std::vector<std::string> common : precisions())
    for (const char* accum : {"train.grad_accum=1", "train.grad_accum=2"}) {
      common.resize(1);
      common.push_back(accum);
      SCOPED_TRACE(fmt::format("{} ranks, {}", comm->size(), fmt::join(common, " ")));
      const auto none = train_with(3, common, {}, *comm);
      const auto host =
          train_with(3, common, {"zero.offload_optimizer=host", "zero.offload_params=host"}, *comm);
      const auto stored = train_with(3, common, nvme, *comm);
      EXPECT_EQ(stored.losses, none.losses);
      EXPECT_EQ(stored.losses, host.losses);
      EXPECT_EQ(stored.params, none.params);
    }
}

// The shard is counted with the state in storage, none of it in device or host memory: 12 bytes
// per element in fp32 (the parameters are the master), 14 under bf16 (and 2 of bf16 parameters).
TEST(NvmeParams, TheShardIsCountedInStorage) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, "nvmeparamsmem");
  for (const std::vector<std::string>& precision : precisions()) {
    SCOPED_TRACE(precision[0]);
    std::vector<std::string> overrides = on_nvme(dir);
    overrides.push_back("zero.offload_params=nvme");
    overrides.push_back(precision[0]);
    const zm::Deck deck = zm::testing::test_deck(3, kGlobalBatch / comm->size(), 1, overrides);
    zm::MemoryLedger ledger;
    const auto trainer = counted_trainer(deck, 3, *comm, ledger);
    const int64_t elements = elements_held(trainer->engine(), false);
    const int64_t per_element = precision[0] == "train.precision=fp32" ? 12 : 14;
    EXPECT_EQ(ledger.current(zm::MemCategory::Storage),
              static_cast<size_t>(per_element * elements));
    EXPECT_EQ(ledger.current(zm::MemCategory::Optimizer), 0u);
    EXPECT_EQ(ledger.current(zm::MemCategory::Parameters), 0u);
  }
}

// zero.nvme_gradients (stages 2-3): the reduced gradient shard in the swap file too, each
// micro-step's sum written there (a later micro-step's read and added first, on the host as with
// the shard in host memory), read with the state for AdamW. The gradient norm is summed from the
// host buffer each sum passes through, with the core's kernel over the core's ranges, so it too
// is the same bit for bit: the clip below (0.05, well under the test model's norms) makes every
// update depend on it. In fp32, in bf16 and in bf16 reduced in fp32, with accumulation (bf16's
// own fp32 sum of the micro-steps is refused, see tests/modules/zero_infinity/CMakeLists.txt),
// and at stage 3 with the parameter shard there too.
TEST(NvmeGradients, TrainTheSameModelAsHostOffloadAndNoOffloadBitwise) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, "nvmegrads");
  std::vector<std::vector<std::string>> policies = {{"train.precision=fp32"}};
  if (ZEROMINI_HAVE_BF16)
    policies.insert(policies.end(), {{"train.precision=bf16"},
                                     {"train.precision=bf16", "train.reduce_precision=fp32"}});
  for (const int stage : {2, 3})
    for (const std::vector<std::string>& policy : policies)
      for (const int64_t accum : {1, 2}) {
        if (accum > 1 && policy.size() == 1 && policy[0] == "train.precision=bf16") continue;
        std::vector<std::string> common = policy;
        common.insert(common.end(),
                      {fmt::format("train.grad_accum={}", accum), "train.grad_clip=0.05"});
        SCOPED_TRACE(
            fmt::format("stage {}, {} ranks, {}", stage, comm->size(), fmt::join(common, " ")));
        const auto none = train_with(stage, common, {}, *comm);
        const auto host = train_with(stage, common, {"zero.offload_optimizer=host"}, *comm);
        std::vector<std::string> nvme = on_nvme(dir);
        nvme.push_back("zero.nvme_gradients=true");
        std::vector<std::vector<std::string>> homes = {nvme};
        if (stage == 3) {
          homes.push_back(nvme);
          homes.back().push_back("zero.offload_params=nvme");
        }
        for (const std::vector<std::string>& home : homes) {
          SCOPED_TRACE(home.back());
          const auto stored = train_with(stage, common, home, *comm);
          EXPECT_EQ(stored.losses, none.losses);
          EXPECT_EQ(stored.losses, host.losses);
          EXPECT_EQ(stored.params, none.params);
          ASSERT_EQ(stored.records.size(), host.records.size());
          for (size_t s = 0; s < stored.records.size(); ++s) {
            EXPECT_EQ(stored.records[s].grad_norm, host.records[s].grad_norm) << "step " << s;
            EXPECT_GT(stored.records[s].grad_norm, 0.05) << "step " << s << " is not clipped";
          }
        }
      }
}

// The gradient shard is counted with the state in storage: 16 bytes per element in fp32 (12 of
// state, 4 of gradients), none of it in host or device memory.
TEST(NvmeGradients, TheShardIsCountedInStorage) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  if (kGlobalBatch % comm->size() != 0) GTEST_SKIP() << "global batch not divisible";
  const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, "nvmegradsmem");
  for (const int stage : {2, 3}) {
    SCOPED_TRACE(stage);
    std::vector<std::string> overrides = on_nvme(dir);
    overrides.push_back("zero.nvme_gradients=true");
    const zm::Deck deck = zm::testing::test_deck(stage, kGlobalBatch / comm->size(), 1, overrides);
    zm::MemoryLedger ledger;
    const auto trainer = counted_trainer(deck, stage, *comm, ledger);
    const int64_t elements = elements_held(trainer->engine(), false);
    EXPECT_EQ(ledger.current(zm::MemCategory::Storage), static_cast<size_t>(16 * elements));
    EXPECT_EQ(ledger.current(zm::MemCategory::Gradients), 0u);
  }
}

// Stopped after step 4 and resumed with the gradient shard on NVMe, a run gives the
// uninterrupted one bit for bit (the gradients of a step never outlive it: the checkpoint is the
// state's), at stages 2 and 3, with accumulation.
TEST(NvmeGradients, ResumeExactly) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  for (int stage : {2, 3}) {
    SCOPED_TRACE(fmt::format("stage {}, {} ranks", stage, comm->size()));
    const std::string dir =
        zm::testing::shared_dir(MPI_COMM_WORLD, fmt::format("nvmegradsck{}", stage));
    std::vector<std::string> nvme = on_nvme(dir);
    nvme.insert(nvme.end(), {"zero.nvme_gradients=true", "train.grad_accum=2"});
    zm::testing::expect_exact_resume(zm::testing::deck_for(stage, 2, dir, 8, "fp32", nvme), stage,
                                     *comm);
  }
}

// Stopped after step 4 and resumed, a run with the shard on NVMe gives the uninterrupted run, bit
// for bit; its checkpoint loads into a run with the shard in host memory and on the device.
TEST(NvmeParams, ResumeExactlyAndMoveToOtherHomes) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  for (const std::vector<std::string>& precision : precisions()) {
    const std::string name = precision[0].substr(precision[0].find('=') + 1);
    SCOPED_TRACE(fmt::format("{}, {} ranks", name, comm->size()));
    const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, "nvmeparamsck" + name);
    std::vector<std::string> nvme = on_nvme(dir);
    nvme.push_back("zero.offload_params=nvme");
    const zm::Deck deck = zm::testing::deck_for(3, 2, dir, 8, name, nvme);
    const std::string path = zm::testing::expect_exact_resume(deck, 3, *comm);
    const zm::testing::State written = [&] {
      const auto trainer = zm::make_trainer(deck, 3, *comm);
      zm::load_checkpoint(trainer->engine(), trainer->deck(), path);
      return zm::testing::full_state(trainer->engine());
    }();
    for (const std::vector<std::string>& home :
         {std::vector<std::string>{"zero.offload_optimizer=host", "zero.offload_params=host"},
          std::vector<std::string>{}}) {
      const auto trainer =
          zm::make_trainer(zm::testing::deck_for(3, 2, dir, 8, name, home), 3, *comm);
      EXPECT_EQ(zm::load_checkpoint(trainer->engine(), trainer->deck(), path), 4);
      EXPECT_TRUE(zm::testing::full_state(trainer->engine()) == written)
          << fmt::format("{}", fmt::join(home, " "));
    }
  }
}

// A run with the state on NVMe stopped after step 4 and resumed gives the uninterrupted run, bit
// for bit; its checkpoint loads into a run with the state in host memory and into one without
// offload, at another stage.
TEST(CheckpointNvme, ResumesExactlyAndMovesToOtherHomes) {
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  for (int stage : {1, 3}) {
    SCOPED_TRACE(fmt::format("stage {}, {} ranks", stage, comm->size()));
    const std::string dir = zm::testing::shared_dir(MPI_COMM_WORLD, fmt::format("nvmeck{}", stage));
    const std::vector<std::string> nvme = on_nvme(dir);
    const zm::Deck deck = zm::testing::deck_for(stage, 2, dir, 8, "fp32", nvme);
    const std::string path = zm::testing::expect_exact_resume(deck, stage, *comm);
    const zm::testing::State written = [&] {
      const auto trainer = zm::make_trainer(deck, stage, *comm);
      zm::load_checkpoint(trainer->engine(), trainer->deck(), path);
      return zm::testing::full_state(trainer->engine());
    }();
    for (const auto& [other_stage, home] :
         {std::pair<int, std::vector<std::string>>{2, {"zero.offload_optimizer=host"}},
          std::pair<int, std::vector<std::string>>{3, {}}}) {
      const auto trainer = zm::make_trainer(
          zm::testing::deck_for(other_stage, 2, dir, 8, "fp32", home), other_stage, *comm);
      EXPECT_EQ(zm::load_checkpoint(trainer->engine(), trainer->deck(), path), 4);
      EXPECT_TRUE(zm::testing::full_state(trainer->engine()) == written)
          << "stage " << other_stage << " " << fmt::format("{}", fmt::join(home, " "));
    }
  }
}

}  // namespace
