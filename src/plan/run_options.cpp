#include "plan/run_options.hpp"

#include "comm/node_split.hpp"
#include "core/offload.hpp"
#include "core/stage_spec.hpp"

namespace zm {

ZeroOptions zero_options(const Deck& deck, int stage, const ZeroMesh& mesh) {
  ZeroOptions options;
  options.policy = deck.train.policy();
  options.grad_accum = deck.train.grad_accum;
  options.bucket_mb = deck.zero.bucket_mb;
  options.overlap = deck.zero.overlap;
  options.prefetch = deck.zero.prefetch;
  options.quantize_weights = deck.zero.quantizes_weights();
  options.quantize_block = deck.zero.quantize_block;
  options.quantize_grads = deck.zero.quantizes_grads();
  options.grad_bits = deck.zero.grad_quantize_bits();
  options.error_feedback = deck.zero.error_feedback;
  options.stochastic_rounding = deck.zero.grad_rounding == "stochastic";
  options.seed = deck.train.seed;
  options.offload = offload_of(deck, stage_spec(stage), mesh);
  return options;
}

int run_ranks_per_node(const Deck& deck, Communicator& world) {
  if (deck.zero.ranks_per_node != 0) return world.size();  // zero_mesh takes the deck's
  return NodeComm(world.mpi_comm()).size();
}

ZeroMesh run_zero_mesh(const Deck& deck, int stage, Communicator& world) {
  // Always asked (not only for "node"): the mesh also says where the nodes are, for the bytes
  // that leave them.
  return zero_mesh(deck, stage, world.size(), run_ranks_per_node(deck, world));
}

}  // namespace zm
