#include "modules/evaluation/evaluation_cost.hpp"

#include "model/flops.hpp"
#include "plan/planner.hpp"
#include "plan/run_declarations.hpp"
#include "plan/run_extensions.hpp"

namespace zm {

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
