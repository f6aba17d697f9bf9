#include "plan/planner.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "model/layout.hpp"
#include "zero/engine.hpp"
#include "zero/partition.hpp"
#include "zero/run_plan.hpp"

namespace zm {

Precision plan_precision_from_name(const std::string& name) {
  Precision precision = Precision::FP32;
  if (name == "mixed") return Precision::BF16;
  if (!parse_precision(name, precision)) fail("precision '{}': expected fp32 or mixed", name);
  return precision;
}

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
  for (double b : bytes) sum += b;
  return sum;
}

double PlanPoint::bytes_per_step_total() const {
  double sum = 0;
  for (double b : bytes_per_step) sum += b;
  return sum;
}

namespace {

Deck with_layers(const Deck& deck, int64_t layers) {
  Deck d = deck;
  d.model.layers = layers;
  return d;
}

}  // namespace

double flops_per_token(const ModelConfig& m) {
  const double L = static_cast<double>(m.layers), C = static_cast<double>(m.dim),
               T = static_cast<double>(m.seq_len), Vp = static_cast<double>(m.padded_vocab());
  // Forward 2 and backward 4 FLOPs per weight and token; attention 4 T C per layer forward, 8 T C
  // backward. Recomputing the blocks runs their forward once more.
  const double recompute = m.recomputes_blocks() ? 2.0 * 12.0 * L * C * C + 4.0 * L * T * C : 0.0;
  return 6.0 * (12.0 * L * C * C + C * Vp) + 12.0 * L * T * C + recompute;
}

MemoryPlan plan_memory(const Deck& deck, int stage, int64_t ranks) {
  MemoryPlan plan;
  for (const BufferSpec& spec : run_buffer_plan(deck, stage, static_cast<int>(ranks)))
    plan.bytes[static_cast<int>(spec.category)] += spec.bytes();
  return plan;
}

std::array<double, kCommOps> plan_traffic(const Deck& deck, int stage, int64_t ranks) {
  std::array<double, kCommOps> bytes{};
  const ParamLayout layout(deck.model);
  const PartitionPlan partition(layout, static_cast<int>(ranks));
  const int n = static_cast<int>(ranks);
  for (const auto& c : run_traffic_plan(deck, stage, partition))
    bytes[static_cast<int>(c.op)] +=
        ring_bytes(c.op, static_cast<double>(c.count * c.element_bytes), n);
  return bytes;
}

namespace {

// The deepest model of the deck's width whose per-rank memory fits in `bytes`. Per-rank memory is
// affine in the layer count (every block adds the same buffers), so two evaluations give the
// line and a few more confirm the answer.
int64_t largest_fitting_layers(const Deck& deck, int stage, int64_t ranks, double bytes) {
  auto memory_at = [&](int64_t layers) {
    return plan_memory(with_layers(deck, layers), stage, ranks).total();
  };
  const double m1 = memory_at(1), m2 = memory_at(2);
  const double per_layer = m2 - m1, base = m1 - per_layer;
  int64_t layers = 0;
  if (m1 <= bytes) layers = static_cast<int64_t>(std::floor((bytes - base) / per_layer));
  if (layers > 0 && layers <= 100000) {
    while (layers > 0 && memory_at(layers) > bytes) --layers;
    while (memory_at(layers + 1) <= bytes) ++layers;
  }
  return layers;
}

}  // namespace

PlanPoint plan_point(const Deck& deck, int stage, int64_t ranks, const Machine* machine) {
  if (ranks < 1) fail("--ranks: {} is not a rank count (expected an integer >= 1)", ranks);
  PlanPoint p;
  p.stage = stage;
  p.ranks = ranks;
  p.precision = deck.train.precision;
  const ParamLayout layout(deck.model);
  const PartitionPlan partition(layout, static_cast<int>(ranks));
  p.params = layout.real_param_count();
  p.padded_params = partition.padded_total();
  p.memory = plan_memory(deck, stage, ranks);
  p.bytes_per_step = plan_traffic(deck, stage, ranks);
  if (!machine) return p;

  // Compute: matmul FLOPs at the machine's sustained rate.
  const double tokens =
      static_cast<double>(deck.train.micro_batch * deck.model.seq_len * deck.train.grad_accum);
  p.flops_per_step = tokens * flops_per_token(deck.model);
  const double rate =
      is_mixed(p.precision) ? machine->sustained_flops_mixed : machine->sustained_flops_fp32;
  p.compute_seconds = p.flops_per_step / rate;

  // Communication: alpha-beta ring model; the ring crosses the inter-node network as soon as
  // the ranks span more than one node, and its slowest link sets the pace.
  const bool one_node = ranks <= machine->devices_per_node;
  const double beta = one_node ? machine->intra_node_bandwidth : machine->inter_node_bandwidth;
  const double alpha = one_node ? machine->intra_node_latency : machine->inter_node_latency;
  auto collective_seconds = [&](CommOp op, double whole_bytes) {
    if (ranks == 1) return 0.0;
    const double hops = static_cast<double>(ranks - 1) * (op == CommOp::AllReduce ? 2.0 : 1.0);
    return hops * alpha + ring_bytes(op, whole_bytes, static_cast<int>(ranks)) / beta;
  };
  for (const auto& c : run_traffic_plan(deck, stage, partition))
    p.comm_seconds += collective_seconds(c.op, static_cast<double>(c.count * c.element_bytes));
  p.step_seconds_serial = p.compute_seconds + p.comm_seconds;
  p.step_seconds_overlapped = std::max(p.compute_seconds, p.comm_seconds);

  p.fits = p.memory.total() <= machine->device_memory_bytes;
  const int64_t layers = largest_fitting_layers(deck, stage, ranks, machine->device_memory_bytes);
  p.largest_layers = layers;
  if (layers > 0) {
    const ModelConfig& m = deck.model;
    p.largest_params = ParamLayout(with_layers(deck, 1).model).real_param_count() +
                       (layers - 1) * (12 * m.dim * m.dim + 13 * m.dim);
  }
  return p;
}

}  // namespace zm
