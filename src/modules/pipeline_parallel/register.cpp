// The module's registration (core/modules.hpp): the deck key parallel.pp and its checks, the mesh
// dimension "pp" (each coordinate a part of the model, not a slice), the part each stage holds,
// the communicators between neighbouring stages, and the micro-step driver that runs 1F1B.
#include <fmt/format.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/zero_mesh.hpp"
#include "modules/pipeline_parallel/bubble_figures.hpp"
#include "modules/pipeline_parallel/one_f_one_b.hpp"
#include "modules/pipeline_parallel/plan_pipeline.hpp"
#include "modules/pipeline_parallel/stage_driver.hpp"
#include "modules/pipeline_parallel/stage_split.hpp"
#include "plan/run_extensions.hpp"
#include "zero/collective_strategy.hpp"

namespace zm {

namespace {

const char* const kKey = "parallel.pp";

int64_t pp_of(const Deck& deck) {
  return deck.value<int64_t>(kKey);
}

// The split of the blocks into stages (stage_split.hpp), which fails naming the keys.
void check_pipeline(const Deck& deck, BuildChecks) {
  const int64_t pp = pp_of(deck);
  if (pp > 1 || !deck.value<std::string>(pipeline::kLayersKey).empty())
    pipeline::stage_blocks(deck, pp);
}

// Adds the boundaries' and the tied embedding's communicators; no collective strategy.
class PipeCommunicators final : public StrategyProvider {
 public:
  std::vector<std::shared_ptr<CollectiveStrategy>> strategies(
      const ScheduleContext&) const override {
    return {};
  }
  void prepare(MeshComms& comms) const override { pipeline::add_pipe_communicators(comms); }
};

}  // namespace

void register_module_pipeline_parallel() {
  add_deck_keys(
      {deck_keys::integer("pipeline_parallel", "parallel", "pp", 1, 1, 4096,
                          "pipeline parallelism: the blocks in this many consecutive stages, each "
                          "on its own ranks, "
                          "micro-batches (train.grad_accum) run by the 1F1B schedule; it must "
                          "divide the ranks (and "
                          "model.layers, unless parallel.pp_layers splits them)"),
       deck_keys::custom(
           "pipeline_parallel", "parallel", "pp_layers", "",
           "a string of block counts, comma separated, such as \"5,7\"", pipeline::check_block_list,
           "the blocks of each pipeline stage in order, as many counts as parallel.pp "
           "summing to model.layers (e.g. \"7,5\": the last stage, which has the head, "
           "lighter); \"\": equal stages")});
  add_deck_check(check_pipeline);
  ModelDimension dimension{pipeline::kPipeDim, kKey, "pipeline", "pipeline parallelism"};
  dimension.slices = false;
  add_model_dimension(dimension);
  add_run_configurer([](const Deck& deck, int stage, RunExtensions& extensions) {
    const int64_t pp = pp_of(deck);
    if (pp == 1) return;
    extensions.part_dimension = pipeline::kPipeDim;
    // Stage s holds the blocks after those of the stages before it.
    const std::vector<int64_t> blocks = pipeline::stage_blocks(deck, pp);
    extensions.model_part = [blocks](int s) {
      const auto end = blocks.begin() + s;
      return ModelPart{std::accumulate(blocks.begin(), end, int64_t{0}), *end};
    };
    extensions.depth_step = pipeline::split_depth(deck);
    // 1F1B holds at most min(pp - s, m) micro-batches in flight on stage s: a model for each.
    const int micro_batches = static_cast<int>(deck.train.grad_accum);
    extensions.models_held = [pp, micro_batches](int s) {
      return pipeline::in_flight_limit(s, static_cast<int>(pp), micro_batches);
    };
    const int64_t activation = deck.train.micro_batch * deck.model.seq_len * deck.model.dim;
    extensions.added_traffic = [=](int s, const Partition& partition, const ZeroOptions& options,
                                   const ZeroMesh& mesh) {
      return pipeline::stage_traffic(s, static_cast<int>(pp), micro_batches, activation, partition,
                                     options, mesh, stage);
    };
    extensions.strategies.push_back(std::make_shared<PipeCommunicators>());
  });
  pipeline::add_pipeline_plan();
  pipeline::add_bubble_figures();
  add_micro_step_driver([](const Deck& deck, int) -> std::unique_ptr<MicroStepDriver> {
    return pp_of(deck) > 1 ? pipeline::make_stage_driver() : nullptr;
  });
}

}  // namespace zm
