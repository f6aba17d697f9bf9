#include "plan/planner.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "core/validate.hpp"
#include "model/layout.hpp"
#include "plan/plan_extensions.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"

namespace zm {

const char* memory_model_name(Precision precision) {
  return is_mixed(precision) ? "mixed" : "fp32";
}

double MemoryPlan::model_states() const {
  return bytes[static_cast<int>(MemCategory::Parameters)] +
         bytes[static_cast<int>(MemCategory::Gradients)] +
         bytes[static_cast<int>(MemCategory::Optimizer)];
}

double MemoryPlan::total() const {
  double sum = 0;
  for (int c = 0; c < kMemCategories; ++c)
    if (on_device(static_cast<MemCategory>(c))) sum += bytes[static_cast<size_t>(c)];
  return sum;
}

double PlanPoint::bytes_at_level(CommLevel level) const {
  const auto& bytes = bytes_per_level[static_cast<size_t>(level)];
  return std::accumulate(bytes.begin(), bytes.end(), 0.0);
}

int64_t ranks_on_a_node(const ZeroMesh& mesh) {
  return std::max<int64_t>(1, std::min<int64_t>(mesh.ranks_per_node, mesh.world()));
}

ZeroMesh plan_zero_mesh(const Deck& deck, int stage, int64_t ranks, const Machine* machine) {
  if (ranks < 1 || ranks > (int64_t(1) << 30))
    fail("--ranks: {} is not a rank count (expected an integer in 1..2^30)", ranks);
  const int64_t per_node = machine ? machine->devices_per_node : ranks;
  validate(deck, {stage, ranks, per_node}, Validation::Plan);
  return zero_mesh(deck, stage, static_cast<int>(ranks), static_cast<int>(per_node));
}

int plan_part(const Deck& deck, int stage, const ZeroMesh& mesh) {
  const std::string dimension = run_extensions(deck, stage).part_dimension;
  int part = 0;
  double most = 0;
  for (int p = 0; p < (dimension.empty() ? 0 : mesh.mesh.size(dimension)); ++p)
    if (const double bytes = plan_memory(deck, stage, mesh, p).total(); bytes > most) {
      part = p;
      most = bytes;
    }
  return part;
}

MemoryPlan plan_memory(const Deck& deck, int stage, const ZeroMesh& mesh, int part) {
  MemoryPlan plan;
  const RunExtensions extensions = run_extensions(deck, stage);
  if (part < 0) part = plan_part(deck, stage, mesh);
  for (const BufferSpec& spec : run_buffers(deck, stage, mesh, attention_kernels(extensions), part))
    plan.bytes[static_cast<int>(spec.category)] += spec.bytes();
  return plan;
}

LevelTraffic plan_traffic(const Deck& deck, int stage, const ZeroMesh& mesh, int part) {
  LevelTraffic bytes{};
  if (part < 0) part = plan_part(deck, stage, mesh);
  const ParamLayout layout = run_layout(deck, stage, part);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  for (const auto& c : run_traffic(deck, stage, partition, mesh, part))
    bytes[static_cast<size_t>(c.level)][static_cast<size_t>(c.op)] +=
        ring_bytes(c.op, static_cast<double>(c.count * c.element_bytes), c.ranks);
  return bytes;
}

MemoryLimits memory_limits(const Machine& machine, const ZeroMesh& mesh) {
  MemoryLimits limits;
  limits.device_bytes = machine.device_memory_bytes;
  if (machine.host) limits.host_bytes_per_node = machine.host->memory_per_node_bytes;
  limits.storage_bytes_per_node = storage_capacity_per_node(machine);
  limits.ranks_per_node = ranks_on_a_node(mesh);
  return limits;
}

// Per-rank memory, device and host, is affine in the layer count (every block adds the same
// buffers): two evaluations give each line, a few more confirm the answer.
int64_t largest_fitting_layers(const Deck& deck, int stage, const ZeroMesh& mesh,
                               const MemoryLimits& limits) {
  const double node = static_cast<double>(limits.ranks_per_node);
  auto fits = [&](const MemoryPlan& m) {
    return m.total() <= limits.device_bytes && m.host() * node <= limits.host_bytes_per_node &&
           m.storage() * node <= limits.storage_bytes_per_node;
  };
  // Depths in steps of one block per part (plan_part's part decides), or as the parts say.
  const RunExtensions extensions = run_extensions(deck, stage);
  const std::string& parts = extensions.part_dimension;
  const int64_t step = extensions.depth_step > 0 ? extensions.depth_step
                                                 : (parts.empty() ? 1 : mesh.mesh.size(parts));
  auto memory_at = [&, d = deck](int64_t steps) mutable {
    d.model.layers = steps * step;
    return plan_memory(d, stage, mesh);
  };
  const MemoryPlan m1 = memory_at(1), m2 = memory_at(2);
  // The deepest that fits under one line: base + layers x per_layer <= limit.
  auto deepest = [](double one, double two, double limit) {
    const double per_layer = two - one, base = one - per_layer;
    return per_layer > 0 ? std::floor((limit - base) / per_layer) : HUGE_VAL;
  };
  int64_t layers = 0;
  if (fits(m1)) {
    const double guess = std::min(
        {deepest(m1.total(), m2.total(), limits.device_bytes),
         deepest(m1.host() * node, m2.host() * node, limits.host_bytes_per_node),
         deepest(m1.storage() * node, m2.storage() * node, limits.storage_bytes_per_node)});
    layers = static_cast<int64_t>(std::min(guess, 1e6));
  }
  if (layers <= 0 || layers > 100000) return layers * step;
  // Memory grows with depth: bisect between a depth that fits and one that does not, from the
  // lines' crossing (where what depth adds is not linear from one layer, far from the answer).
  int64_t fit = 0, over = layers;
  if (fits(memory_at(layers)))
    for (fit = layers, over = 2 * layers; fits(memory_at(over)); over *= 2) fit = over;
  while (over - fit > 1) {
    const int64_t mid = fit + (over - fit) / 2;
    (fits(memory_at(mid)) ? fit : over) = mid;
  }
  return fit * step;
}

namespace {

// The consecutive ranks a collective's group spans. Ranks are placed consecutively,
// devices_per_node to a node, and the mesh is replicate x shard x the model dimensions, those
// innermost: a model-parallel group is model_parallel() consecutive ranks, a shard group (ranks
// of equal model-parallel coordinates) is strided by that over group_ranks x model_parallel()
// consecutive ranks, and a collective across the groups spans the world.
int64_t ranks_spanned(const PlannedCollective& c, const ZeroMesh& mesh) {
  if (c.level == CommLevel::ModelParallel) return mesh.slices();
  if (c.level == CommLevel::IntraGroup) return int64_t(mesh.group_ranks()) * mesh.model_parallel();
  return mesh.world();
}

// Whether a collective's ring crosses the inter-node network: a group's ring stays in a node
// when its span tiles the node; a collective across the groups crosses once the run spans nodes.
bool crosses_nodes(const PlannedCollective& c, const ZeroMesh& mesh, const Machine& machine) {
  const int64_t per_node = machine.devices_per_node;
  if (mesh.world() <= per_node) return false;
  if (c.span) return c.span->nodes > 1;  // a hop by node: within one, or across
  if (c.level == CommLevel::InterGroup) return true;
  const int64_t span = ranks_spanned(c, mesh);
  return span > per_node || per_node % span != 0;
}

// The collective's ranks in each node it spans (a communicator's ranks spread evenly over them).
double ranks_per_node(const PlannedCollective& c, const ZeroMesh& mesh, const Machine& machine) {
  if (c.span) return std::max(1, c.span->per_node);
  const double nodes =
      std::ceil(static_cast<double>(ranks_spanned(c, mesh)) / machine.devices_per_node);
  return std::clamp(static_cast<double>(c.ranks) / nodes, 1.0, static_cast<double>(c.ranks));
}

// Alpha-beta ring model of one collective on its link; the slowest link of a ring sets its pace.
// A ring that crosses nodes with k ranks in each runs as k rings at once (NCCL's channels, one
// per network card, as nccl-tests' bus bandwidth shows), so its links between nodes carry
// k x the per-device network bandwidth, up to the intra-node link that feeds them. An all-to-all
// sends each rank's bytes through its own card: the per-device rate.
double collective_seconds(const PlannedCollective& c, const ZeroMesh& mesh,
                          const Machine& machine) {
  if (c.ranks <= 1) return 0.0;
  const bool inter = crosses_nodes(c, mesh, machine);
  const double cards = c.op == CommOp::AllToAll ? 1.0 : ranks_per_node(c, mesh, machine);
  const double beta =
      inter ? std::min(machine.intra_node_bandwidth, cards * machine.inter_node_bandwidth)
            : machine.intra_node_bandwidth;
  const double alpha = inter ? machine.inter_node_latency : machine.intra_node_latency;
  const double hops = static_cast<double>(c.ranks - 1) * (c.op == CommOp::AllReduce ? 2.0 : 1.0);
  return hops * alpha +
         ring_bytes(c.op, static_cast<double>(c.count * c.element_bytes), c.ranks) / beta;
}

}  // namespace

CollectiveSeconds collectives_seconds(const PlannedCollectives& collectives, const ZeroMesh& mesh,
                                      const Machine& machine) {
  CollectiveSeconds out;
  for (const PlannedCollective& c : collectives) {
    out.comm += collective_seconds(c, mesh, machine);
    if (c.pass_bytes > 0)
      out.passes += static_cast<double>(c.pass_bytes) / machine.memory_bandwidth;
  }
  return out;
}

PlanPoint plan_point(const Deck& deck, int stage, int64_t ranks, const Machine* machine) {
  PlanPoint p;
  p.stage = stage;
  p.ranks = ranks;
  p.precision = deck.train.precision;
  const ZeroMesh mesh = plan_zero_mesh(deck, stage, ranks, machine);
  p.mesh = mesh;
  p.part = plan_part(deck, stage, mesh);
  const ParamLayout layout = run_layout(deck, stage, p.part);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  p.params = layout.real_param_count();
  p.padded_params = partition.padded_total();
  p.memory = plan_memory(deck, stage, mesh, p.part);
  p.host_bytes_per_node = p.memory.host() * static_cast<double>(ranks_on_a_node(mesh));
  p.bytes_per_level = plan_traffic(deck, stage, mesh, p.part);
  for (const auto& level : p.bytes_per_level)
    for (int op = 0; op < kCommOps; ++op)
      p.bytes_per_step[static_cast<size_t>(op)] += level[static_cast<size_t>(op)];
  // FLOPs (model/flops.hpp): the hardware FLOPs are priced at the machine's sustained rate. Each
  // data-parallel replica takes micro_batch x grad_accum sequences; the work divides evenly over
  // the ranks (over a model-parallel group as its ranks split every matmul).
  const double global_tokens = static_cast<double>(deck.train.micro_batch * deck.model.seq_len *
                                                   deck.train.grad_accum * mesh.data_parallel());
  const StepFlops flops =
      step_flops(deck.model, attention_kernels(run_extensions(deck, stage)), global_tokens, ranks);
  p.flops_per_step = flops.hardware_per_rank();
  p.model_flops_per_step = flops.model_per_rank();
  if (!machine) {
    for (const PlanPricing& price : plan_pricings()) price(deck, stage, mesh, nullptr, 0.0, p);
    return p;
  }

  const double rate = deck.train.policy().compute == Element::BF16 ? machine->sustained_flops_mixed
                                                                   : machine->sustained_flops_fp32;
  p.compute_seconds = p.flops_per_step / rate;

  const CollectiveSeconds seconds =
      collectives_seconds(run_traffic(deck, stage, partition, mesh, p.part), mesh, *machine);
  p.comm_seconds = seconds.comm;
  p.pass_seconds = seconds.passes;
  const double device_seconds = p.compute_seconds + p.pass_seconds;
  // Backward's share of the compute: 4 of the 6 FLOPs per weight and token, the recomputed
  // forward's 2 more where blocks are recomputed (model/flops.hpp).
  const double backward_share = deck.model.recompute == "blocks" ? 6.0 / 8.0 : 4.0 / 6.0;
  // What modules add to the step, the overlapped step hiding what each says backward hides.
  for (const PlanPricing& price : plan_pricings())
    price(deck, stage, mesh, machine, backward_share * p.compute_seconds, p);
  p.step_seconds_serial = device_seconds + p.comm_seconds + p.added_serial_seconds;
  p.step_seconds_overlapped = std::max(device_seconds, p.comm_seconds) + p.added_exposed_seconds;

  const MemoryLimits limits = memory_limits(*machine, mesh);
  p.device_fits = p.memory.total() <= limits.device_bytes;
  p.host_fits = p.host_bytes_per_node <= limits.host_bytes_per_node;
  p.storage_fits = p.memory.storage() * static_cast<double>(limits.ranks_per_node) <=
                   limits.storage_bytes_per_node;
  p.fits = p.device_fits && p.host_fits && p.storage_fits;
  const int64_t layers = largest_fitting_layers(deck, stage, mesh, limits);
  p.largest_layers = layers;
  if (layers > 0) {
    ModelConfig m = deck.model;
    m.layers = 1;
    // The whole model's parameters (the uncut layout), not one rank's slices.
    p.largest_params =
        ParamLayout(m).real_param_count() + (layers - 1) * (12 * m.dim * m.dim + 13 * m.dim);
  }
  return p;
}

}  // namespace zm
