// GPT-2: embeddings, L pre-norm transformer blocks, final LayerNorm, LM head tied to the token
// embedding, mean cross-entropy. Forward and backward are written out layer by layer (llm.c
// style) over the kernels in src/kernels; parameters and gradients are reached per unit through
// UnitAccess, so the same code runs under every ZeRO stage.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/run_context.hpp"
#include "core/memory.hpp"
#include "core/precision.hpp"
#include "kernels/accumulate.hpp"
#include "kernels/team_shape.hpp"
#include "kernels/token_groups.hpp"
#include "model/attention_kernels.hpp"
#include "model/buffer_shape.hpp"
#include "model/checkpoint_home.hpp"
#include "model/layout.hpp"
#include "model/model_parallel.hpp"
#include "model/unit_access.hpp"

namespace zm {

// A micro-batch on the device: B sequences of T tokens, and the next-token targets.
struct Batch {
  const int* inputs = nullptr;        // (B, T)
  const int* targets = nullptr;       // (B, T)
  kernels::TokenGroups input_groups;  // the rows of `inputs` grouped by token
};

// What GPT<Real> allocates for micro-batches of B x T with activations of `element_bytes`
// (token buffers are int32 whatever the precision) holding `layout`'s slices (with its scheme's
// buffers), running `attention`; the planner sums the same list. Both walk the model's buffer
// tables (GPT::model_buffers and GPT::layer_buffers, in gpt_buffers.cpp). `checkpoints`: the
// category of the blocks' outputs a CheckpointHome keeps (Activations: none). `shares_scratch`:
// without the scratch buffers (GPT::scratch), for a model that shares another's.
std::vector<BufferSpec> gpt_buffers(const ParamLayout& layout, const AttentionKernels& attention,
                                    int64_t B, int64_t T, int element_bytes,
                                    MemCategory checkpoints = MemCategory::Activations,
                                    bool shares_scratch = false);

// One sync point as a micro-batch reaches it: `rows` rows of tokens combined at `point`, so many
// times in a training micro-batch (forward and backward) and in a forward-only pass.
struct ModelSyncUse {
  ModelSync point;
  int64_t rows;
  int64_t per_micro_batch, per_forward_only;
};
// Where forward() and backward() combine their slices under model parallelism, in the order they
// reach them: the embedding, the blocks' two outputs (again where model.recompute recomputes a
// block) and their inputs' gradients, the head's statistics once per chunk of
// model.classifier_chunk and the head's input gradient. Written beside forward() and backward()
// and checked against what they do after every pass (GPT::check_sync_uses).
// A part of the model (model/layout.hpp) reaches those of its blocks, and the embedding's and the
// head's where it has them.
std::vector<ModelSyncUse> gpt_sync_uses(const ParamLayout& layout, int64_t B, int64_t T);

// The model's collectives over its model-parallel group (none without a scheme): what the step's
// schedule lists and the planner prices (zero/schedule.hpp: ScheduleRole::ModelSync).
std::vector<ModelSyncPost> gpt_sync_posts(const ParamLayout& layout, int64_t B, int64_t T,
                                          int element_bytes);
// The order in which forward() and backward() acquire units (stage 3 prefetches along it).
std::vector<UnitEvent> gpt_unit_order(const ParamLayout& layout);

// A block's parameters (and in backward its gradients) reached through its units: one, or under
// model.tiles one per tile (model/layout.hpp). Asking for a range the held unit lacks releases it
// (in backward handing its gradients over) and acquires the unit that has it. Forward asks in
// increasing order, backward in decreasing order: each unit is acquired once, in the unit order.
template <typename Real>
class BlockUnits {
 public:
  BlockUnits(const ParamLayout& layout, int layer, UnitUse use, UnitAccess<Real>& units)
      : layout_(layout), first_(layout.block_unit(layer)), use_(use), units_(units) {}
  // Elements [offset, offset + count) of the block (offsets as in BlockOffsets).
  const Real* params(int64_t offset, int64_t count) { return held(offset, count).first; }
  Real* grads(int64_t offset, int64_t count) { return held(offset, count).second; }
  void poll() { units_.poll(); }  // between kernels: in-flight communication progresses
  void finish();                  // releases the unit held

 private:
  std::pair<const Real*, Real*> held(int64_t offset, int64_t count);
  const ParamLayout& layout_;
  int first_;
  UnitUse use_;
  UnitAccess<Real>& units_;
  int unit_ = -1, last_ = -1;
  const Real* params_ = nullptr;
};

// What a forward pass is for: training, which backward follows, or the loss only (a forward-only
// pass between steps: it touches no gradient and releases every unit it acquires).
enum class ForwardPass { Training, LossOnly };

// Real: the type of parameters, activations and gradients (float, or bf16 under mixed
// precision; bf16 kernels compute in float and round what they store).
template <typename Real>
class GPT {
 public:
  // Allocates the activations and workspace for micro-batches of B x T. Each unit's forward and
  // backward is a Phase of `context` (a span, core/spans.hpp). `gemm_math`: the policy's
  // arithmetic for every GEMM the model runs (PrecisionPolicy::gemm_math). `team_shape`: the
  // teams of every other kernel it launches.
  // `group`: the model-parallel group whose slices `layout` describes (layout.slices() ranks).
  // `attention`: the kernels every block's attention runs (model/attention_kernels.hpp).
  // `checkpoints`: where model.recompute keeps the blocks' outputs (null: on the device).
  // `scratch_of`: a model, outliving this one, whose scratch() this one shares (null: its own),
  // for a caller that keeps several micro-batches' activations and runs one pass at a time.
  GPT(const ParamLayout& layout, int64_t B, int64_t T, const RunContext& context = {},
      GemmMath gemm_math = GemmMath::FP32,
      kernels::TeamShape team_shape = kernels::kDefaultTeamShape, ModelParallelGroup group = {},
      const AttentionKernels& attention = plain_attention(), CheckpointHome* checkpoints = nullptr,
      const GPT* scratch_of = nullptr);

  static std::vector<BufferSpec> declared_buffers(
      const ParamLayout& layout, int64_t B, int64_t T,
      const AttentionKernels& attention = plain_attention(),
      MemCategory checkpoints = MemCategory::Activations, bool shares_scratch = false) {
    return gpt_buffers(layout, attention, B, T, static_cast<int>(sizeof(Real)), checkpoints,
                       shares_scratch);
  }

  // Copies a micro-batch (host arrays of B*T tokens) to the device buffers the model owns.
  Batch upload(const int* inputs, const int* targets);

  // Runs the forward pass and returns the micro-batch's mean loss. Training keeps what backward
  // needs; under model.classifier_chunk it also adds the LM head's part of the wte gradient into
  // units.grads(embedding unit): every training forward must be followed by its backward. A
  // loss-only forward makes no gradient and ends with every unit released (the units acquired
  // are the schedule's events up to the head's, in order).
  double forward(UnitAccess<Real>& units, const Batch& batch,
                 ForwardPass pass = ForwardPass::Training);
  // Accumulates d(mean loss)/d(params) into units.grads(u), calling grads_ready(u) per unit.
  void backward(UnitAccess<Real>& units, const Batch& batch);

  // Where the token embedding's part of the wte gradient goes (this rank's vocabulary rows x dim;
  // null: into the gradient at once), for a step that adds it once after every micro-batch's
  // head part (model/held_token_grads.hpp).
  void hold_token_grads(Real* dwte) { held_dwte_ = dwte; }

  // Where a part of the model (ParamLayout::embeds, heads) meets its neighbours, each B x T x C on
  // the device: without the embedding, forward reads its first block's input from part_input()
  // and backward leaves that input's gradient in part_input_grad(); without the head, forward
  // leaves its last block's output in part_output() (and returns a loss of 0) and backward reads
  // the gradient of that output from part_output_grad(). The caller writes the inputs.
  kernels::TeamShape team_shape() const { return team_shape_; }
  int64_t part_elements() const { return B_ * T_ * layout_->config().dim; }  // of each below
  Real* part_input() { return encoded_.data(); }
  const Real* part_output() { return block_output(static_cast<int64_t>(layers_.size()) - 1); }
  Real* part_output_grad() { return dresidual_.data(); }
  const Real* part_input_grad() const { return dresidual_.data(); }

 private:
  using Stat = kernels::Acc<Real>;  // LayerNorm's saved mean and rstd
  struct LayerActs {
    TrackedBuffer<Real> ln1, atty, ln2, fch, fch_gelu, residual2, residual3;
    TrackedBuffer<Stat> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;
    AttentionBuffers<Real> attention;  // what the attention kernels save
  };

  // Who declares the buffers a row stands for: the attention kernels, or the model-parallel
  // scheme (its workspace).
  enum class Declarer { Attention, ModelParallel };
  // One row of a buffer table: a buffer and the member of Owner it is allocated into. Exactly
  // one member pointer is set, and it gives the element type: Real, Stat or int32 tokens; or
  // the blocks, which stand for the table of LayerActs once per layer, "{name}{l}.{buffer}"; or
  // the buffers of the row's category that the attention kernels or the model-parallel scheme
  // declare, by the names they give them.
  template <typename Owner>
  struct Entry {
    using Count = int64_t (*)(const BufferShape&);
    // Named member-pointer types: nvcc's generated host code parenthesises a plain
    // `T Owner::*name` declaration, which the host compiler then warns about (-Wparentheses).
    template <typename T>
    using MemberOf = T Owner::*;
    const char* name;
    MemCategory category;
    Count count;
    MemberOf<TrackedBuffer<Real>> real_member;
    MemberOf<TrackedBuffer<Stat>> stat_member;
    MemberOf<TrackedBuffer<int>> token_member;
    MemberOf<std::vector<LayerActs>> blocks_member;
    MemberOf<DeclaredBuffers<Real>> declared_member;
    Declarer declarer;

    static Entry real(const char* n, MemCategory c, Count k, MemberOf<TrackedBuffer<Real>> m) {
      return {n, c, k, m, nullptr, nullptr, nullptr, nullptr, Declarer::Attention};
    }
    static Entry stat(const char* n, MemCategory c, Count k, MemberOf<TrackedBuffer<Stat>> m) {
      return {n, c, k, nullptr, m, nullptr, nullptr, nullptr, Declarer::Attention};
    }
    static Entry token(const char* n, MemCategory c, Count k, MemberOf<TrackedBuffer<int>> m) {
      return {n, c, k, nullptr, nullptr, m, nullptr, nullptr, Declarer::Attention};
    }
    static Entry blocks(const char* n, MemberOf<std::vector<LayerActs>> m) {
      return {n,       MemCategory::Activations, nullptr, nullptr, nullptr, nullptr, m,
              nullptr, Declarer::Attention};
    }
    static Entry declared(Declarer who, MemCategory c, MemberOf<DeclaredBuffers<Real>> m) {
      return {"declared", c, nullptr, nullptr, nullptr, nullptr, nullptr, m, who};
    }
    // Bytes per element, given those of Real: Stat is fp32 and tokens int32 whatever Real is.
    int element_bytes(int real_bytes) const { return real_member != nullptr ? real_bytes : 4; }
  };
  using LayerBuffer = Entry<LayerActs>;
  using ModelBuffer = Entry<GPT>;
  // Whether a row's buffers hold nothing from one pass to the next, so that models of `layout`
  // running one pass at a time may share them: the workspace and the block being recomputed; not
  // the residual's gradient (a part's gradients in and out) nor a head's input gradient.
  static bool scratch(const ModelBuffer& row, const ParamLayout& layout) {
    return row.blocks_member == &GPT::recompute_ ||
           (row.category == MemCategory::Workspace && row.real_member != &GPT::dresidual_ &&
            (row.real_member != &GPT::dbtc_ || !layout.heads()));
  }
  static_assert(sizeof(Stat) == 4 && sizeof(int) == 4, "Entry::element_bytes");
  // The tables, in plan order: what the planner prices and the constructor allocates.
  static const std::vector<LayerBuffer>& layer_buffers();
  static const std::vector<ModelBuffer>& model_buffers();
  // "{name}{set}.": what the names of a set of block buffers start with.
  static std::string block_prefix(const ModelBuffer& blocks, int64_t set);
  // Calls f(set, buffer) for each block buffer a "blocks" row stands for in `layout`'s blocks:
  // every buffer of every layer, or under model.recompute = "blocks" only each layer's output
  // (residual3, the next block's input) and one full set for the block being recomputed.
  template <typename F>
  static void for_each_block_buffer(const ModelBuffer& blocks, const ParamLayout& layout, F f) {
    const bool recompute = layout.config().recomputes_blocks();
    const bool per_layer = blocks.blocks_member == &GPT::layers_;
    const int64_t sets = per_layer ? layout.blocks() : (recompute ? 1 : 0);
    for (int64_t set = 0; set < sets; ++set)
      for (const LayerBuffer& b : layer_buffers())
        if (!per_layer || !recompute || b.real_member == &LayerActs::residual3) f(set, b);
  }
  // The buffers a declared row stands for: the attention kernels' or the scheme's (none without
  // one), of the row's category.
  static std::vector<DeclaredBuffer> declared_by(Declarer who, const AttentionKernels& attention,
                                                 const ModelParallelScheme* scheme,
                                                 MemCategory category);
  // Allocates the buffers of row `e` (one, or those declared), named `prefix` + name.
  template <typename Owner>
  void take_buffer(PlannedAllocator& alloc, Owner& owner, const Entry<Owner>& e,
                   const std::string& prefix);
  // The buffers of row `e` as another names them (`of`: its owner of them).
  template <typename Owner>
  static void share_buffer(Owner& owner, const Owner& of, const Entry<Owner>& e);
  friend std::vector<BufferSpec> gpt_buffers(const ParamLayout&, const AttentionKernels&, int64_t,
                                             int64_t, int, MemCategory, bool);
  // Where block l's output is on the device: its own buffer, or with a CheckpointHome that of
  // one of the last two blocks, by parity (model/checkpoint_home.hpp).
  Real* block_output(int64_t l) {
    const auto L = static_cast<int64_t>(layers_.size());
    const int64_t kept = checkpoints_ == nullptr || l >= L - 2 ? l : L - 2 + (L - l) % 2;
    return layers_[static_cast<size_t>(kept)].residual3.data();
  }
  // With a CheckpointHome: the copy of block l's output to it, or back (none for the last two).
  void copy_checkpoint(int64_t l, bool to_home);

  // Model parallelism (model/model_parallel.hpp); without a scheme each is the plain
  // computation. The sum over the group at `point`, in place.
  void sync(ModelSync point, Real* data, int64_t count, int unit);
  // Runs `hook` (a scheme's, given a call) at a use of `point` for `rows` rows: with the
  // collectives the scheme declares there, each of which it must post, and counted.
  void at_sync(ModelSync point, int64_t rows, int unit,
               const std::function<void(const ModelParallelCall<Real>&)>& hook);
  // Whether the pass that ends posted at each use of a sync point as gpt_sync_uses says (fails
  // the run where not); starts the next pass's counts.
  void check_sync_uses(ForwardPass pass);
  ModelParallelCall<Real> call(int unit, ModelPosts* posts = nullptr) const {
    return {group_, team_shape_, split_workspace_, unit, posts};
  }
  // The bias of a layer whose output is summed over the group: added by one rank only.
  const Real* summed_bias(const Real* bias) const {
    return scheme_ == nullptr || scheme_->adds_summed_bias(group_.rank) ? bias : nullptr;
  }
  // The embedding and the LM head (gpt_embedding_head.cpp), over the vocabulary rows this rank
  // holds. encoded_ = wte[tokens] + wpe.
  void embed(const Real* embeddings, const Batch& batch, int unit);
  // logits_ from lnf_ and the (tied) wte slice, then probabilities; returns the sum of the losses.
  // Under model.classifier_chunk, chunk by chunk, the head's backward too (head_chunk), into
  // `dembed` (the embedding unit's gradients; unused otherwise): a training forward is always
  // followed by backward, and the logits exist only one chunk at a time. With `dembed` null
  // (the loss only) the chunks make their losses only.
  double head_forward(const Batch& batch, int unit, Real* dembed);
  // The cross-entropy of rows [first, first + rows) from their logits in logits_ (this rank's
  // columns), which become their gradient; the losses into losses_. dloss: d(mean)/d(loss_i).
  void head_crossentropy(const Batch& batch, int64_t first, int64_t rows, Real dloss, int unit);
  // One chunk of the chunked head: its logits, loss and gradient, its rows of dbtc_ (this rank's
  // part) and its sum into the wte gradient `dwte` (with `dwte` null: the loss only).
  void head_chunk(const Batch& batch, int64_t first, int64_t rows, Real* dwte, int unit);
  // dbtc_ = d(loss)/d(lnf) summed over the group; the wte gradient from the head (under
  // model.classifier_chunk both were made in the forward: only the sum remains).
  void head_backward(Real* dembed, const Batch& batch, int unit);

  // Writes the block's output to `out` (a.residual3 unless recomputing).
  void block_forward(LayerActs& a, BlockUnits<Real>& p, const Real* residual, Real* out);
  void final_norm_backward(UnitAccess<Real>& units);
  void block_backward(LayerActs& a, BlockUnits<Real>& p, const Real* residual);
  // A block's linear layer, out (N, OC) = in (N, I) W^T + b, W and b at block offsets `weight`
  // and `bias`: its rows tile by tile (model.tiles; one tile: the whole), the bias after them
  // (`summed`: an output summed over the model-parallel group, whose bias one rank adds).
  void linear_forward(BlockUnits<Real>& p, Real* out, const Real* in, int64_t weight, int64_t bias,
                      int64_t I, int64_t OC, bool summed = false);
  // Its backward: dinp (written) = dout W, summed over the tiles, last to first; dW += dout^T in,
  // tile by tile; db += the column sums of dout first (where the units reach the bias first).
  void linear_backward(BlockUnits<Real>& p, Real* dinp, const Real* dout, const Real* in,
                       int64_t weight, int64_t bias, int64_t I, int64_t OC);

  const ParamLayout* layout_;
  int64_t B_, T_;
  ModelParallelGroup group_;
  const ModelParallelScheme* scheme_;    // the layout's (nullptr: a whole model)
  std::vector<ModelSyncUse> sync_uses_;  // gpt_sync_uses, with scheme_
  std::vector<int64_t> sync_counts_;     // this pass's uses of each
  RunContext context_;
  GemmMath gemm_math_;
  kernels::TeamShape team_shape_;
  const AttentionKernels* attention_;
  CheckpointHome* checkpoints_;
  const Real* head_params_ = nullptr;  // the embedding unit, held from the LM head's forward
  Real* held_dwte_ = nullptr;          // hold_token_grads
  // Saved activations (each buffer is allocated through the tables above).
  TrackedBuffer<Real> encoded_;
  std::vector<LayerActs> layers_;  // under recompute: only each block's output (residual3), those
                                   // a CheckpointHome keeps in its category
  std::vector<LayerActs> recompute_;  // under recompute: one block's activations, else empty
  TrackedBuffer<Real> lnf_, logits_;
  TrackedBuffer<Stat> losses_, lnf_mean_, lnf_rstd_;
  TrackedBuffer<int> inputs_, targets_, token_ids_, token_starts_, token_rows_;
  kernels::HostTokenGroups host_groups_;
  // Workspace (reused by every layer).
  TrackedBuffer<Real> qkv_, scratch_btc_, dresidual_, dbtc_, datty_, dqkv_, dfch_, dfch_gelu_;
  TrackedBuffer<Stat> column_partials_;         // the bias and LayerNorm gradients' two-level sums
  AttentionBuffers<Real> attention_workspace_;  // the attention kernels'
  DeclaredBuffers<Real> split_workspace_;       // the model-parallel scheme's
  kernels::HostTokenGroups slice_groups_;       // host_groups_ in this rank's vocabulary rows
};

}  // namespace zm
