// Megatron-LM's tensor parallelism (Shoeybi et al., 2019) as the model's model-parallel scheme
// (model/model_parallel.hpp), along the mesh dimension "tp" (parallel.tp ranks, innermost):
//
//   - c_attn and mlp.c_fc are column-parallel: each rank holds rows of their weights and biases
//     (q, k and v cut apart, so that each rank holds whole heads), and computes its heads and its
//     part of the MLP's width with no communication;
//   - attn.c_proj and mlp.c_proj are row-parallel: each rank holds their weights' columns, so
//     their outputs are partial sums, all-reduced over the group (Megatron's g), and their biases
//     are added by the group's first rank only; in backward the gradients of the column-parallel
//     layers' inputs are all-reduced (Megatron's f);
//   - the token embedding, tied to the LM head, is vocabulary-parallel: each rank holds
//     padded_vocab / tp rows of wte, embeds the tokens among them (the embeddings summed over the
//     group) and computes their logits; the cross-entropy gathers each row's {max, sum of
//     exponentials, target logit} from every rank (vocab_parallel.hpp) and never forms the whole
//     row;
//   - LayerNorms, wpe and the row-parallel biases are held whole by every rank.
//
// Its collectives are declared in one place (megatron_collective) and posted through the core's
// post_model_collective, which checks each against it; the step's schedule lists them.
#pragma once

#include <cstdint>

#include "model/model_parallel.hpp"

namespace zm {

const ModelParallelScheme& megatron_scheme();

// What the scheme posts at `point` for `rows` rows of tokens of width C (B x T x C activations
// summed, or at the head's statistics the per-row statistics of every rank gathered, fp32), on a
// group of `slices` ranks; `element_bytes` of the activations.
ModelCollective megatron_collective(ModelSync point, int64_t rows, int64_t C, int64_t slices,
                                    int element_bytes);

}  // namespace zm
