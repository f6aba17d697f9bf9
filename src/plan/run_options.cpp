#include "plan/run_options.hpp"

#include "comm/node_split.hpp"
#include "core/stage_spec.hpp"
#include "model/gpt.hpp"
#include "plan/run_extensions.hpp"
#include "zero/engine.hpp"

namespace zm {

ZeroOptions zero_options(const Deck& deck, int stage, const ZeroMesh& mesh, int part) {
  ZeroOptions options;
  options.policy = deck.train.policy();
  options.grad_accum = deck.train.grad_accum;
  options.bucket_mb = deck.zero.bucket_mb;
  options.overlap = deck.zero.overlap;
  options.prefetch = deck.zero.prefetch;
  const RunExtensions extensions = run_extensions(deck, stage);
  options.strategies = extensions.strategies;
  options.tier = extensions.tier;
  if (options.tier) options.homes = options.tier->homes(stage_spec(stage), mesh);
  // The model's own collectives exist only where it is held in slices: no layout built otherwise
  // (the planner asks for options in loops).
  if (mesh.model_parallel() > 1)
    options.model_posts = gpt_sync_posts(run_layout(deck, stage, part), deck.train.micro_batch,
                                         deck.model.seq_len, element_bytes(options.policy.compute));
  return options;
}

int run_ranks_per_node(const Deck& deck, Communicator& world) {
  if (deck.zero.ranks_per_node != 0) return world.size();  // zero_mesh takes the deck's
  return NodeComm(world.mpi_comm()).size();
}

ZeroMesh run_zero_mesh(const Deck& deck, int stage, Communicator& world) {
  // Always asked (not only for "node"): the mesh also says where the nodes are.
  return zero_mesh(deck, stage, world.size(), run_ranks_per_node(deck, world));
}

}  // namespace zm
