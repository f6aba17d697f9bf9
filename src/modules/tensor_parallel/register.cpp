// The module's registration (core/modules.hpp): its deck key and the checks of it, the mesh
// dimension "tp", the scheme a run with tp > 1 gets, and what `zeromini plan` says of it (the --tp
// axis, its columns and notes).
#include <fmt/format.h>

#include <algorithm>

#include "core/deck_keys.hpp"
#include "core/error.hpp"
#include "core/zero_mesh.hpp"
#include "modules/tensor_parallel/megatron.hpp"
#include "modules/tensor_parallel/tp_traffic.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/run_extensions.hpp"
#include "train/training_extensions.hpp"

namespace zm {

namespace {

const char* const kKey = "parallel.tp";

int64_t tp_of(const Deck& deck) {
  return deck.value<int64_t>(kKey);
}

// The tp dimension's size on a point's mesh.
int tp_of(const ZeroMesh& mesh) {
  return mesh.mesh.has("tp") ? mesh.mesh.size("tp") : 1;
}

bool any_tensor_parallel(const std::vector<PlanPoint>& points) {
  return std::any_of(points.begin(), points.end(),
                     [](const PlanPoint& p) { return tp_of(p.mesh) > 1; });
}

// parallel.tp splits the heads, the MLP's 4C and the padded vocabulary evenly.
void check_divides_model(const Deck& deck, BuildChecks) {
  const ModelConfig& m = deck.model;
  const int64_t tp = tp_of(deck);
  const std::string where = deck.where(kKey);
  if (m.heads % tp != 0)
    fail("{}: parallel.tp = {} must divide model.heads = {} (set at {})", where, tp, m.heads,
         deck.where("model.heads"));
  if (4 * m.dim % tp != 0)
    fail("{}: parallel.tp = {} must divide the MLP width 4 x model.dim = {}", where, tp, 4 * m.dim);
  if (m.padded_vocab() % tp != 0)
    fail(
        "{}: parallel.tp = {} must divide the padded vocabulary {} (model.vocab = {} rounded up "
        "to a multiple of 128)",
        where, tp, m.padded_vocab(), m.vocab);
  // A slice's tensors and a tile's rows would cut each other (model/layout.hpp): one or the other.
  if (tp > 1 && m.tiles > 1)
    fail(
        "{}: parallel.tp = {} with model.tiles = {} (set at {}): tiling cuts whole weights only; "
        "expected model.tiles = 1 under tensor parallelism",
        where, tp, m.tiles, deck.where("model.tiles"));
}

// The deck at tensor-parallel degree `tp` (`zeromini plan --tp`).
Deck with_tensor_parallel(const Deck& deck, int64_t tp) {
  const ModelConfig& m = deck.model;
  if (tp < 1 || m.heads % tp != 0 || 4 * m.dim % tp != 0 || m.padded_vocab() % tp != 0)
    fail(
        "tensor-parallel degree {}: expected a divisor of model.heads = {}, of the MLP width "
        "4 x model.dim = {} and of the padded vocabulary {}",
        tp, m.heads, 4 * m.dim, m.padded_vocab());
  Deck d = deck;
  d.set_value(kKey, tp);
  return d;
}

std::string gb(double bytes) {
  return fmt::format("{:.3f}", bytes / 1e9);
}

void add_plan_parts() {
  PlanAxis axis;
  axis.option = "--tp";
  axis.help =
      "Tensor-parallel degrees, comma separated (e.g. 1,2,4,8); default: the deck's "
      "parallel.tp. Rank counts that a degree does not divide are left out";
  axis.name = "tp";
  axis.what = "tensor-parallel degree";
  axis.value = [](const Deck& deck) { return tp_of(deck); };
  axis.at = with_tensor_parallel;
  add_plan_axis(std::move(axis));

  // The CSV: the mesh's tp and the bytes of the model's collectives, after the traffic by level.
  PlanColumns columns;
  columns.at = PlanColumnsAt::AfterLevels;
  columns.shown = [](const Deck&, const std::vector<PlanPoint>& points) {
    return any_tensor_parallel(points);
  };
  columns.header = ",tp,tensor_parallel_bytes";
  columns.row = [](const Deck&, const PlanPoint& p, bool) {
    return fmt::format(",{},{:.0f}", tp_of(p.mesh), p.bytes_at_level(CommLevel::ModelParallel));
  };
  add_plan_columns(std::move(columns));

  // The table: the mesh and the bytes of the model's collectives, after the traffic by level.
  PlanTableColumns table;
  table.at = PlanTableColumnsAt::AfterLevels;
  table.shown = any_tensor_parallel;
  table.heading = [](bool) { return fmt::format(" | {:>9} {:>10}", "tp x dp", "tensor-par"); };
  table.cells = [](const PlanPoint& p, bool) {
    return fmt::format(" | {:>9} {:>10}",
                       fmt::format("{}x{}", tp_of(p.mesh), p.mesh.data_parallel()),
                       gb(p.bytes_at_level(CommLevel::ModelParallel)));
  };
  add_plan_table_columns(std::move(table));

  add_plan_table_note([](const Deck&, const std::vector<PlanPoint>& points) -> std::string {
    if (!any_tensor_parallel(points)) return "";
    return "Tensor parallelism (parallel.tp): a tp group is tp consecutive ranks, each holding "
           "1/tp "
           "of the split tensors (Megatron's blocks, the vocabulary-parallel embedding and head); "
           "ZeRO shards over the dp = ranks / tp ranks with the same slices. tp x dp: the mesh; "
           "tensor-par: the bytes of the model's tp collectives (level tensor_parallel).\n";
  });
}

}  // namespace

void register_module_tensor_parallel() {
  add_deck_keys({deck_keys::integer(
      "tensor_parallel", "parallel", "tp", 1, 1, 4096,
      "tensor (Megatron model) parallelism: consecutive ranks that split each block's matrices, "
      "the heads and the vocabulary; it must divide the ranks, model.heads, 4 x model.dim and the "
      "padded vocabulary")});
  add_deck_check(check_divides_model);
  add_model_dimension({"tp", kKey, "tensor-parallel", "tensor parallelism"});
  add_run_configurer([](const Deck& deck, int /*stage*/, RunExtensions& extensions) {
    if (tp_of(deck) > 1) extensions.model_parallel = &megatron_scheme();
  });
  add_plan_parts();
  add_training_extension(make_tensor_parallel_traffic);
}

}  // namespace zm
