#include "modules/evaluation/evaluation_cost.hpp"

#include "core/stage_spec.hpp"
#include "model/flops.hpp"
#include "model/layout.hpp"
#include "plan/planner.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"
#include "plan/run_options.hpp"
#include "zero/schedule.hpp"

namespace zm {

namespace {

// What a forward-only pass of `micro_batches` micro-batches per rank posts and copies
// (Trainer::forward_only_loss): per micro-batch the schedule's entries a forward reaches and a
// tier's copies for them, then the statistics' all-reduce of the loss. Not the model's own
// collectives over its model-parallel group.
struct ForwardOnlyDeclaration {
  PlannedCollectives collectives;
  CopyVolume copies;  // between the memories (none without a tier)
};
ForwardOnlyDeclaration run_forward_only(const Deck& deck, int stage, const ZeroMesh& mesh,
                                        int64_t micro_batches) {
  const StageSpec& spec = stage_spec(stage);
  const ParamLayout layout = run_layout(deck, stage);
  const Partition partition(layout, mesh.group_ranks(), mesh.sub_shards());
  const ZeroOptions options = zero_options(deck, stage, mesh);
  const StepSchedule schedule = build_step_schedule(spec, partition, options, mesh);
  ForwardOnlyDeclaration out;
  PlannedCollectives one;  // each entry's hops as often as one forward-only micro-batch posts it
  for (const ScheduledCollective& c : schedule.collectives())
    for (int64_t post = 0; post < c.per_forward_only; ++post)
      for (const ScheduleHop& hop : c.hops) one.push_back(hop.wire);
  const CopyVolume copies =
      options.tier
          ? options.tier->forward_only_copies(
                spec, schedule_context(spec, partition, options, mesh), schedule.collectives())
          : CopyVolume{};
  for (int64_t micro = 0; micro < micro_batches; ++micro) {
    out.collectives.insert(out.collectives.end(), one.begin(), one.end());
    out.copies.bytes += copies.bytes;
    out.copies.copies += copies.copies;
  }
  // The losses summed over the ranks once, as a step's statistics are.
  for (const ScheduleHop& hop : schedule.of(-1, ScheduleRole::StepStatistics).hops)
    out.collectives.push_back(hop.wire);
  return out;
}

}  // namespace

double EvaluationCost::total_bytes() const {
  double sum = 0;
  for (double b : bytes) sum += b;
  return sum;
}

EvaluationCost evaluation_cost(const Deck& deck, int stage, const ZeroMesh& mesh,
                               const Machine* machine, int64_t micro_batches) {
  const ForwardOnlyDeclaration pass = run_forward_only(deck, stage, mesh, micro_batches);
  EvaluationCost cost;
  for (const PlannedCollective& c : pass.collectives) {
    const auto op = static_cast<size_t>(c.op);
    cost.bytes[op] += ring_bytes(c.op, static_cast<double>(c.count * c.element_bytes), c.ranks);
    cost.calls[op] += 1;
  }
  cost.copies = pass.copies;
  if (!machine) return cost;
  // A forward is 2 of the 6 FLOPs per weight and token, 4 T C of attention's 12 T C, and the
  // head's padded rows' third (model/flops.hpp); nothing is recomputed. Each data-parallel rank
  // reads micro_batches x B x T tokens, its model-parallel group sharing the work.
  const FlopsPerToken f =
      flops_per_token(deck.model, attention_kernels(run_extensions(deck, stage)));
  const double tokens =
      static_cast<double>(micro_batches * deck.train.micro_batch * deck.model.seq_len) /
      static_cast<double>(mesh.model_parallel());
  const double rate = deck.train.policy().compute == Element::BF16 ? machine->sustained_flops_mixed
                                                                   : machine->sustained_flops_fp32;
  cost.compute_seconds = (f.model() + f.padding) / 3.0 * tokens / rate;
  const CollectiveSeconds seconds = collectives_seconds(pass.collectives, mesh, *machine);
  cost.comm_seconds = seconds.comm;
  cost.pass_seconds = seconds.passes;
  if (machine->host)
    cost.transfer_seconds = cost.copies.bytes / machine->host->link_bandwidth +
                            static_cast<double>(cost.copies.copies) * machine->host->link_latency;
  return cost;
}

}  // namespace zm
