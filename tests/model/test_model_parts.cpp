// A model held in parts (model/layout.hpp: ModelPart), as a pipeline's stages hold it. Each part's
// layout keeps the whole model's places, so its parameters start as the whole model's; and the
// parts run one after another (the output of one the input of the next, the gradient of that
// input handed back) compute the whole model's loss and block gradients bit for bit: a part
// changes no sum. The embedding's gradient is split between the first part (the embedding's) and
// the last (the tied head's): their sum is the whole model's.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <tuple>

#include "comm/mesh_comms.hpp"
#include "common/gathered_state.hpp"
#include "common/test_team_shape.hpp"
#include "common/test_watchdog.hpp"
#include "common/zero_test_util.hpp"
#include "model/gpt.hpp"
#include "plan/run_options.hpp"
#include "zero/engine.hpp"

namespace {

namespace k = zm::kernels;

// A model (or a part of it) at ZeRO stage `stage` on one rank.
struct Held {
  Held(const zm::Deck& deck, int stage, zm::Communicator& world, zm::ModelPart part)
      : layout(deck.model, nullptr, 1, part),
        comms(world, zm::run_zero_mesh(deck, stage, world)),
        partition(layout, comms.mesh().group_ranks(), comms.mesh().sub_shards()),
        engine(zm::make_engine<float>(stage, partition, comms,
                                      zm::zero_options(deck, stage, comms.mesh()),
                                      zm::gpt_unit_order(layout), zm::testing::test_team_shape())),
        model(layout, deck.train.micro_batch, deck.model.seq_len, {}, zm::GemmMath::FP32,
              zm::testing::test_team_shape()) {
    engine->init_parameters(static_cast<uint64_t>(deck.train.seed));
  }
  // The logical elements of the unit named `name` (its parameters or, after a backward, its
  // gradients on this one rank).
  std::vector<float> unit_values(const std::string& name, bool grads) {
    for (int u = 0; u < layout.num_units(); ++u) {
      if (layout.unit(u).name != name) continue;
      const auto n = static_cast<size_t>(layout.unit(u).size);
      if (!grads) {
        const std::vector<float> all = zm::testing::gathered_parameters(*engine);
        const auto at = all.begin() + layout.unit(u).offset;
        return {at, at + static_cast<std::ptrdiff_t>(n)};
      }
      std::vector<float> host(n);
      Kokkos::deep_copy(
          Kokkos::View<float*, zm::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host.data(),
                                                                                       n),
          Kokkos::View<const float*, zm::MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
              engine->grad_at(u, 0), n));
      return host;
    }
    ADD_FAILURE() << "no unit " << name;
    return {};
  }

  zm::ParamLayout layout;
  zm::MeshComms comms;
  zm::Partition partition;
  std::unique_ptr<zm::ZeroEngineT<float>> engine;
  zm::GPT<float> model;
};

void copy_activation(float* to, const float* from, int64_t count) {
  using View = Kokkos::View<float*, zm::MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::deep_copy(View(to, static_cast<size_t>(count)),
                    View(const_cast<float*>(from), static_cast<size_t>(count)));
}

// (ZeRO stage, a model setting): stage 3 gathers each unit of a part as the part reaches it;
// recomputation and tiles (several units per block) run in parts too.
class ModelParts : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

TEST_P(ModelParts, InSequenceAreTheWholeModel) {
  auto world = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  const int64_t B = 2, micro_batches = 2;
  const auto [stage, setting] = GetParam();
  const zm::Deck deck =
      zm::testing::test_deck(stage, B, micro_batches, {"model.layers=5", setting});
  const int64_t T = deck.model.seq_len, N = B * T, C = deck.model.dim;
  Held whole(deck, stage, *world, {});
  // Three parts: blocks 0-1 with the embedding, block 2, blocks 3-4 with the head.
  std::vector<std::unique_ptr<Held>> parts;
  for (const zm::ModelPart part : {zm::ModelPart{0, 2}, zm::ModelPart{2, 1}, zm::ModelPart{3, 2}})
    parts.push_back(std::make_unique<Held>(deck, stage, *world, part));
  const int per_block = whole.layout.block_units();
  EXPECT_EQ(parts[1]->layout.num_units(), per_block);
  // The last: the embedding (the tied head), 2 blocks, the final norm.
  EXPECT_EQ(parts[2]->layout.num_units(), 2 + 2 * per_block);
  EXPECT_EQ(parts[2]->layout.unit(1).name.rfind("block.3", 0), 0u);

  // Each held unit starts as the whole model's.
  for (auto& part : parts)
    for (const zm::UnitInfo& unit : part->layout.units())
      EXPECT_EQ(part->unit_values(unit.name, false), whole.unit_values(unit.name, false))
          << unit.name;

  std::mt19937 random(11);
  std::uniform_int_distribution<int> token(0, static_cast<int>(deck.model.vocab) - 1);
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    std::vector<int> inputs(static_cast<size_t>(N)), targets(static_cast<size_t>(N));
    for (size_t i = 0; i < inputs.size(); ++i)
      inputs[i] = token(random), targets[i] = token(random);
    whole.engine->begin_micro_step(micro, micro_batches);
    const double loss =
        whole.model.forward(*whole.engine, whole.model.upload(inputs.data(), targets.data()));
    whole.model.backward(*whole.engine, whole.model.upload(inputs.data(), targets.data()));
    // The parts in turn: forward front to back, backward back to front.
    double part_loss = 0;
    std::vector<zm::Batch> batches;
    for (size_t p = 0; p < parts.size(); ++p) {
      Held& part = *parts[p];
      part.engine->begin_micro_step(micro, micro_batches);
      batches.push_back(part.model.upload(inputs.data(), targets.data()));
      if (p > 0) copy_activation(part.model.part_input(), parts[p - 1]->model.part_output(), N * C);
      part_loss = part.model.forward(*part.engine, batches.back());
    }
    EXPECT_EQ(part_loss, loss) << "micro-batch " << micro;
    for (size_t p = parts.size(); p-- > 0;) {
      Held& part = *parts[p];
      if (p + 1 < parts.size())
        copy_activation(part.model.part_output_grad(), parts[p + 1]->model.part_input_grad(),
                        N * C);
      part.model.backward(*part.engine, batches[p]);
    }
  }
  whole.engine->finish_backward();
  for (auto& part : parts) part->engine->finish_backward();

  // Every block's and the final norm's gradients, accumulated over the micro-batches, are the
  // whole model's bit for bit.
  for (auto& part : parts)
    for (const zm::UnitInfo& unit : part->layout.units()) {
      if (unit.name == "embeddings") continue;
      EXPECT_EQ(part->unit_values(unit.name, true), whole.unit_values(unit.name, true))
          << unit.name;
    }
  // The embedding's: the first part holds the embedding's gradient, the last the head's. The
  // whole model adds both into one buffer micro-batch by micro-batch, in another order than their
  // sum: equal to rounding. Each element is a sum of a few terms, so the difference's norm is
  // within a few roundings of the terms' norms (here 16 eps of ||first|| + ||last||).
  const std::vector<float> first = parts.front()->unit_values("embeddings", true);
  const std::vector<float> last = parts.back()->unit_values("embeddings", true);
  const std::vector<float> both = whole.unit_values("embeddings", true);
  ASSERT_EQ(first.size(), both.size());
  size_t nonzero_first = 0, nonzero_last = 0;
  double differences = 0, first_norm = 0, last_norm = 0;
  for (size_t i = 0; i < both.size(); ++i) {
    nonzero_first += first[i] != 0.0f;
    nonzero_last += last[i] != 0.0f;
    const double d = static_cast<double>(first[i] + last[i]) - both[i];
    differences += d * d;
    first_norm += static_cast<double>(first[i]) * first[i];
    last_norm += static_cast<double>(last[i]) * last[i];
  }
  EXPECT_LE(std::sqrt(differences), 16 * std::numeric_limits<float>::epsilon() *
                                        (std::sqrt(first_norm) + std::sqrt(last_norm)));
  EXPECT_GT(nonzero_first, 0u);
  EXPECT_GT(nonzero_last, 0u);
}

INSTANTIATE_TEST_SUITE_P(StagesAndRecompute, ModelParts,
                         ::testing::Combine(::testing::Values(0, 3),
                                            ::testing::Values("model.recompute=none",
                                                              "model.recompute=blocks",
                                                              "model.tiles=2")));

}  // namespace
