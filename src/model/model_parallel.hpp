// Model parallelism: the model held in slices along the mesh's model dimension (a module's
// core/zero_mesh.hpp ModelDimension), each rank of a model-parallel group holding one slice of the
// tensors a scheme cuts (model/layout.hpp: TensorCut) and computing its part of the layers that
// use them. A scheme says which tensor is cut how, and acts where the model meets the slices:
//
//   - the sums of partial results over the group, at the points of forward and backward where
//     a layer's output (or its input's gradient) is one (ModelSync);
//   - which rank adds the bias of a layer whose output is such a sum;
//   - the token embedding and the LM head's cross-entropy where the (tied) token embedding is cut
//     along the vocabulary: the tokens each rank embeds, the statistics of the whole rows;
//   - the buffers and the collectives those use, declared (buffers(), collectives()) so that the
//     planner prices what the model allocates and posts.
//
// The model runs without a scheme (ParamLayout::scheme() null) as a whole model, with none of
// these. A scheme lives as long as the program (made once, shared by every model); a run gives it
// to the layout through its options (plan/run_extensions.hpp: RunExtensions::model_parallel).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/precision.hpp"
#include "kernels/accumulate.hpp"
#include "kernels/team_shape.hpp"
#include "kernels/token_groups.hpp"
#include "model/buffer_shape.hpp"
#include "model/layout.hpp"

namespace zm {

// Where forward and backward combine what the ranks of a model-parallel group computed.
enum class ModelSync : int {
  Embedding,           // forward: the token and position embeddings of the micro-batch
  AttentionOutput,     // forward: a block's attention projection (before the residual)
  MlpOutput,           // forward: a block's MLP projection (before the residual)
  MlpInputGrad,        // backward: the gradient of a block's MLP input (before ln2's backward)
  AttentionInputGrad,  // backward: the gradient of a block's attention input (before ln1's)
  HeadStatistics,      // forward: the cross-entropy's per-row statistics of a chunk of the head
  HeadInputGrad,       // backward: the gradient of the LM head's input (the final LayerNorm's)
};

// A collective the model posts: `count` elements of the whole buffer (an all-gather's: of every
// rank's parts together) of `element_bytes` each, over the model-parallel group.
struct ModelCollective {
  CommOp op;
  int64_t count;
  int element_bytes;
};

// Its name for a sync point ("embedding", "attention_output", ...).
const char* model_sync_name(ModelSync point);

// One collective the model posts: at a use of a sync point, each of what the layout's scheme
// declares there (ModelParallelScheme::collectives), so many times in a training micro-batch and
// in a forward-only pass (model/gpt.hpp: gpt_sync_posts).
struct ModelSyncPost {
  ModelSync point;
  ModelCollective wire;
  int64_t per_micro_batch, per_forward_only;
};

// The collectives one use of a sync point posts, in order: what the scheme declares there
// (collectives()); post_model_collective checks each post against the next one declared.
struct ModelPosts {
  std::vector<ModelCollective> declared;
  size_t posted = 0;
};

// This rank's model-parallel group: the communicator along the model dimension (nullptr with
// one rank), its size and this rank's place in it (the slice it holds).
struct ModelParallelGroup {
  Communicator* comm = nullptr;
  int size = 1;
  int rank = 0;
};

// What a scheme's hook is given: the group, the model's team shape, the scheme's buffers as the
// model allocated them (workspace, in declaration order), the unit whose phase runs (-1: a
// block's), for the collectives' tags, and the collectives it may post (nullptr: none).
template <typename Real>
struct ModelParallelCall {
  const ModelParallelGroup& group;
  kernels::TeamShape shape;
  const DeclaredBuffers<Real>& workspace;
  int unit;
  ModelPosts* posts = nullptr;
};

// How a scheme posts: the next of `posts`' declared collectives, as `op` of `count` elements of
// `type` (all-reduce: the whole buffer, in place in `recv`; all-gather: each rank's part) over the
// group, after checking op, type and the whole buffer's count against the declaration.
void post_model_collective(const ModelParallelGroup& group, ModelPosts* posts, int unit, CommOp op,
                           const void* send, void* recv, size_t count, DType type);

class ModelParallelScheme {
 public:
  virtual ~ModelParallelScheme() = default;

  // How tensor `name` (GPT-2 style, e.g. "h.3.attn.c_attn.weight") is cut into slices.
  virtual TensorCut cut(const std::string& name) const = 0;
  // The buffers its hooks use (MemCategory::Workspace), allocated by the model.
  virtual std::vector<DeclaredBuffer> buffers() const { return {}; }
  // What it posts at `point` for `rows` rows of tokens (a chunk of the head, or all N) of
  // activations of `element_bytes`, in order; the hooks post exactly these.
  virtual std::vector<ModelCollective> collectives(ModelSync point, const BufferShape& shape,
                                                   int64_t rows, int element_bytes) const = 0;
  // Whether the rank at `rank` of its group adds the bias of a layer whose output is summed over
  // the group (so that the sum has it once).
  virtual bool adds_summed_bias(int rank) const = 0;
  // The groups of `all` (every token of the micro-batch, kernels/token_groups.hpp) whose tokens lie
  // in this rank's `vocab_rows` rows of the token embedding, renumbered from its first row: what
  // its slice of the embedding's gradient needs.
  virtual void select_token_groups(const ModelParallelGroup& group, int64_t vocab_rows,
                                   const kernels::HostTokenGroups& all,
                                   kernels::HostTokenGroups& out) const = 0;

  // In place: the sum over the group of `count` elements at `point`.
  virtual void sum(const ModelParallelCall<float>& call, ModelSync point, float* data,
                   int64_t count) const = 0;
  // out (B,T,C) = wte[tokens] + wpe as the whole model's embedding gives it once summed at
  // ModelSync::Embedding, from this rank's `vocab_rows` rows of wte.
  virtual void embed(const ModelParallelCall<float>& call, float* out, const int* tokens,
                     const float* wte, const float* wpe, int64_t vocab_rows, int64_t B, int64_t T,
                     int64_t C) const = 0;
  // The cross-entropy of `rows` rows of logits, this rank's `vocab_rows` columns of each (V real
  // vocabulary columns in the whole row): the losses into `losses`, and in place the logits
  // become their probabilities, or with `fused` their gradient dloss * (p - onehot(target)).
  virtual void crossentropy(const ModelParallelCall<float>& call, float* logits,
                            kernels::Acc<float>* losses, const int* targets, int64_t rows,
                            int64_t V, int64_t vocab_rows, float dloss, bool fused) const = 0;
  // In place: probabilities (crossentropy without `fused`) become dloss * (p - onehot(target)).
  virtual void crossentropy_backward(const ModelParallelCall<float>& call, float* probs,
                                     const int* targets, float dloss, int64_t rows, int64_t V,
                                     int64_t vocab_rows) const = 0;
#if ZEROMINI_HAVE_BF16
  virtual void sum(const ModelParallelCall<bf16>& call, ModelSync point, bf16* data,
                   int64_t count) const = 0;
  virtual void embed(const ModelParallelCall<bf16>& call, bf16* out, const int* tokens,
                     const bf16* wte, const bf16* wpe, int64_t vocab_rows, int64_t B, int64_t T,
                     int64_t C) const = 0;
  virtual void crossentropy(const ModelParallelCall<bf16>& call, bf16* logits,
                            kernels::Acc<bf16>* losses, const int* targets, int64_t rows, int64_t V,
                            int64_t vocab_rows, bf16 dloss, bool fused) const = 0;
  virtual void crossentropy_backward(const ModelParallelCall<bf16>& call, bf16* probs,
                                     const int* targets, bf16 dloss, int64_t rows, int64_t V,
                                     int64_t vocab_rows) const = 0;
#endif
};

}  // namespace zm
