// zeromini against PyTorch: the same GPT-2 model, initial parameters and batches in both; the
// loss, every parameter gradient, and the parameters after 3 AdamW steps must agree to a relative
// error of 1e-5 (fp32). This side runs zeromini and writes what it computed; the Python side
// (torch_reference.py) recomputes everything in PyTorch and compares.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "comm/communicator.hpp"
#include "common/gathered_state.hpp"
#include "common/test_paths.hpp"
#include "common/test_team_shape.hpp"
#include "common/test_watchdog.hpp"
#include "core/deck.hpp"
#include "train/data.hpp"
#include "train/trainer_typed.hpp"

namespace {

const char* kDeck = R"(
[model]
layers = 2
heads = 4
dim = 64
vocab = 97
seq_len = 16
[train]
micro_batch = 3
steps = 3
lr = 1e-3
warmup = 1
min_lr_ratio = 0.1
weight_decay = 0.1
grad_clip = 1.0
beta1 = 0.9
beta2 = 0.95
eps = 1e-8
seed = 42
[zero]
stage = 0
)";

template <typename T>
void write_raw(const std::filesystem::path& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(T)));
  ASSERT_TRUE(out.good()) << path;
}

// The stage-0 gradient buffer, copied out in logical layout order.
std::vector<float> logical_grads(zm::TrainerT<float>& trainer) {
  const auto& layout = trainer.layout();
  std::vector<float> out(static_cast<size_t>(layout.total()));
  const zm::ZeroEngineT<float>& engine = trainer.typed_engine();
  for (int u = 0; u < layout.num_units(); ++u) {
    using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
    Kokkos::View<const float*, zm::MemSpace, Unmanaged> src(engine.grad_at(u, 0),
                                                            layout.unit(u).size);
    Kokkos::View<float*, zm::HostSpace, Unmanaged> dst(out.data() + layout.unit(u).offset,
                                                       layout.unit(u).size);
    Kokkos::deep_copy(dst, src);
  }
  return out;
}

TEST(TorchReference, LossGradientsAndThreeAdamWStepsMatchPyTorch) {
  const zm::Deck deck = zm::parse_deck(kDeck, "torch-reference");
  auto comm = zm::make_communicator("mpi", MPI_COMM_WORLD, zm::testing::watchdog());
  ASSERT_EQ(comm->size(), 1);
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("zeromini-torch-ref-{}", static_cast<long>(::getpid()));
  std::filesystem::create_directories(dir);
  const int64_t B = deck.train.micro_batch, T = deck.model.seq_len;

  // The batches of steps 0..2 as the trainer draws them.
  auto data = zm::make_data_source(deck);
  std::vector<int> inputs(static_cast<size_t>(3 * B * T)), targets(inputs.size());
  for (int64_t s = 0; s < 3; ++s)
    data->sequences(zm::first_sequence(s, 0, 1, 1, 0, B), B, inputs.data() + s * B * T,
                    targets.data() + s * B * T);
  write_raw(dir / "inputs.i32", inputs);
  write_raw(dir / "targets.i32", targets);

  // Initial parameters, and loss and gradients of the first batch (in teams of several threads
  // under ZEROMINI_TEAM_SHAPE).
  zm::TrainerT<float> trainer(deck, 0, *comm, {}, zm::testing::test_team_shape());
  trainer.init_parameters();
  write_raw(dir / "params_init.f32", zm::testing::gathered_parameters(trainer.engine()));
  trainer.engine().begin_micro_step(0, 1);
  const zm::Batch batch = trainer.model().upload(inputs.data(), targets.data());
  const double loss0 = trainer.model().forward(trainer.typed_engine(), batch);
  trainer.model().backward(trainer.typed_engine(), batch);
  trainer.engine().finish_backward();
  write_raw(dir / "grads_step0.f32", logical_grads(trainer));

  // Three optimizer steps from the same initial parameters.
  trainer.init_parameters();
  std::vector<double> losses;
  for (int64_t s = 0; s < 3; ++s) losses.push_back(trainer.step(s).loss);
  // The step reports the same loss; it passes through the step's fp32 statistics all-reduce.
  EXPECT_NEAR(losses[0], loss0, 1e-6 * loss0);
  write_raw(dir / "losses.f64", losses);
  write_raw(dir / "params_step3.f32", zm::testing::gathered_parameters(trainer.engine()));

  std::ofstream manifest(dir / "manifest.txt");
  manifest << deck.resolved_toml() << "\n# tensors\n";
  for (const auto& t : trainer.layout().tensors()) {
    manifest << "tensor " << t.name << " " << trainer.layout().unit(t.unit).offset + t.offset;
    for (int64_t d : t.shape) manifest << " " << d;
    manifest << "\n";
  }
  manifest << "loss0 " << fmt::format("{:.17g}", loss0) << "\n";
  manifest.close();

  const std::string command =
      fmt::format("{} {} {}", zm_test::path_from_environment("ZEROMINI_PYTHON"),
                  zm_test::path_from_environment("ZEROMINI_REFERENCE_SCRIPT"), dir.string());
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << "the PyTorch comparison failed: " << command;
  if (status == 0) std::filesystem::remove_all(dir);
}

}  // namespace
