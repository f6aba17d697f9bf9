#include "model/gpt.hpp"

#include <algorithm>

#include "comm/phase.hpp"
#include "core/error.hpp"
#include "kernels/crossentropy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/encoder.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/matmul.hpp"

namespace zm {

std::vector<UnitEvent> gpt_unit_order(const ParamLayout& layout) {
  std::vector<UnitEvent> events;
  const int L = layout.blocks(), per_block = layout.block_units();
  if (layout.embeds()) events.push_back({layout.embedding_unit(), UnitUse::Forward});
  for (int u = layout.block_unit(0); u < layout.block_unit(L); ++u)
    events.push_back({u, UnitUse::Forward});
  if (layout.heads()) {
    events.push_back({layout.final_norm_unit(), UnitUse::Forward});
    events.push_back({layout.embedding_unit(), UnitUse::Head});
    events.push_back({layout.final_norm_unit(), UnitUse::Backward});
  }
  for (int l = L - 1; l >= 0; --l) {
    const int first = layout.block_unit(l), end = first + per_block;
    // A whole block stays acquired from its recomputed forward through its backward; tiles are
    // acquired again for each (working memory one tile, at the price of a third gather).
    if (per_block > 1 && layout.config().recomputes_blocks())
      for (int u = first; u < end; ++u) events.push_back({u, UnitUse::Recompute});
    for (int u = end - 1; u >= first; --u) events.push_back({u, UnitUse::Backward});
  }
  return events;
}

// Allocates the buffer of row `e` into its member of `owner`, with the element type it names;
// a declared row, the buffers of its category in the order they are declared.
template <typename Real>
template <typename Owner>
void GPT<Real>::take_buffer(PlannedAllocator& alloc, Owner& owner, const Entry<Owner>& e,
                            const std::string& prefix) {
  const std::string name = prefix + e.name;
  if (e.real_member != nullptr)
    owner.*e.real_member = alloc.take<Real>(name);
  else if (e.stat_member != nullptr)
    owner.*e.stat_member = alloc.take<Stat>(name);
  else if (e.token_member != nullptr)
    owner.*e.token_member = alloc.take<int>(name);
  else
    for (const DeclaredBuffer& b : declared_by(e.declarer, *attention_, scheme_, e.category)) {
      DeclaredBuffers<Real>& buffers = owner.*e.declared_member;
      if (b.arithmetic)
        buffers.arithmetic.push_back(alloc.take<Stat>(prefix + b.name));
      else
        buffers.real.push_back(alloc.take<Real>(prefix + b.name));
    }
}

template <typename Real>
template <typename Owner>
void GPT<Real>::share_buffer(Owner& owner, const Owner& of, const Entry<Owner>& e) {
  if (e.real_member != nullptr)
    owner.*e.real_member = TrackedBuffer<Real>::alias(of.*e.real_member);
  else if (e.stat_member != nullptr)
    owner.*e.stat_member = TrackedBuffer<Stat>::alias(of.*e.stat_member);
  else {  // (tokens are never scratch)
    const DeclaredBuffers<Real>& theirs = of.*e.declared_member;
    DeclaredBuffers<Real>& ours = owner.*e.declared_member;
    for (const auto& b : theirs.real) ours.real.push_back(TrackedBuffer<Real>::alias(b));
    for (const auto& b : theirs.arithmetic)
      ours.arithmetic.push_back(TrackedBuffer<kernels::Acc<Real>>::alias(b));
  }
}

template <typename Real>
GPT<Real>::GPT(const ParamLayout& layout, int64_t B, int64_t T, const RunContext& context,
               GemmMath gemm_math, kernels::TeamShape team_shape, ModelParallelGroup group,
               const AttentionKernels& attention, CheckpointHome* checkpoints,
               const GPT* scratch_of)
    : layout_(&layout),
      B_(B),
      T_(T),
      group_(group),
      scheme_(layout.scheme()),
      context_(context),
      gemm_math_(gemm_math),
      team_shape_(team_shape),
      attention_(&attention),
      checkpoints_(checkpoints) {
  ZM_ASSERT(T <= layout.config().seq_len, "T {} > seq_len {}", T, layout.config().seq_len);
  ZM_ASSERT(group.size == layout.slices() && (group.size == 1 || group.comm != nullptr),
            "a layout of {} slices in a model-parallel group of {}", layout.slices(), group.size);
  // Each buffer of the tables, taken from the plan they also give the planner.
  ZM_ASSERT(!checkpoints || layout.config().recomputes_blocks(), "a checkpoint home, no recompute");
  PlannedAllocator alloc(
      declared_buffers(layout, B, T, attention,
                       checkpoints ? checkpoints->category() : MemCategory::Activations,
                       scratch_of != nullptr),
      context.ledger);
  for (const ModelBuffer& m : model_buffers()) {
    const bool shared = scratch_of != nullptr && scratch(m, layout);
    if (m.blocks_member == nullptr) {
      if (shared)
        share_buffer(*this, *scratch_of, m);
      else
        take_buffer(alloc, *this, m, "");
      continue;
    }
    std::vector<LayerActs>& blocks = this->*m.blocks_member;
    for_each_block_buffer(m, layout, [&](int64_t set, const LayerBuffer& b) {
      if (blocks.size() <= static_cast<size_t>(set)) blocks.resize(static_cast<size_t>(set) + 1);
      LayerActs& acts = blocks[static_cast<size_t>(set)];
      if (shared)
        share_buffer(acts, (scratch_of->*m.blocks_member)[static_cast<size_t>(set)], b);
      else
        take_buffer(alloc, acts, b, block_prefix(m, set));
    });
  }
  alloc.finish();
  if (scheme_ != nullptr) {
    sync_uses_ = gpt_sync_uses(layout, B, T);
    sync_counts_.assign(sync_uses_.size(), 0);
  }
}

template <typename Real>
Batch GPT<Real>::upload(const int* inputs, const int* targets) {
  using HostTokens = Kokkos::View<const int*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const size_t n = static_cast<size_t>(B_ * T_);
  Kokkos::deep_copy(inputs_.view(), HostTokens(inputs, n));
  Kokkos::deep_copy(targets_.view(), HostTokens(targets, n));
  host_groups_.build(inputs, B_ * T_, layout_->config().vocab);
  if (scheme_ != nullptr)
    scheme_->select_token_groups(group_, layout_->vocab_rows(), host_groups_, slice_groups_);
  const kernels::HostTokenGroups& groups_here = scheme_ != nullptr ? slice_groups_ : host_groups_;
  const auto upload_ints = [](const std::vector<int>& host, TrackedBuffer<int>& device) {
    const auto whole = device.view();
    Kokkos::deep_copy(Kokkos::subview(whole, std::make_pair(size_t{0}, host.size())),
                      HostTokens(host.data(), host.size()));
  };
  upload_ints(groups_here.ids, token_ids_);
  upload_ints(groups_here.starts, token_starts_);
  upload_ints(groups_here.rows, token_rows_);
  const kernels::TokenGroups groups{token_ids_.data(), token_starts_.data(), token_rows_.data(),
                                    static_cast<int64_t>(groups_here.ids.size())};
  return Batch{inputs_.data(), targets_.data(), groups};
}

template <typename Real>
std::pair<const Real*, Real*> BlockUnits<Real>::held(int64_t offset, int64_t count) {
  const UnitInfo* unit = unit_ < 0 ? nullptr : &layout_.unit(unit_);
  if (!unit || offset < unit->dataset_offset || offset >= unit->dataset_offset + unit->size) {
    finish();
    unit_ = first_;
    while (offset >= layout_.unit(unit_).dataset_offset + layout_.unit(unit_).size) ++unit_;
    const bool onward = use_ != UnitUse::Backward;
    ZM_ASSERT(last_ < 0 || (onward ? unit_ > last_ : unit_ < last_),
              "unit {} reached after unit {} in a {} pass", unit_, last_,
              onward ? "forward" : "backward");
    last_ = unit_;
    unit = &layout_.unit(unit_);
    params_ = units_.acquire({unit_, use_});
  }
  const int64_t at = offset - unit->dataset_offset;
  ZM_ASSERT(at + count <= unit->size, "elements {}..{} of a block cross unit {}'s end", offset,
            offset + count, unit_);
  return {params_ + at, use_ == UnitUse::Backward ? units_.grads(unit_) + at : nullptr};
}

template <typename Real>
void BlockUnits<Real>::finish() {
  if (unit_ < 0) return;
  units_.release({unit_, use_});
  if (use_ == UnitUse::Backward) units_.grads_ready(unit_);
  unit_ = -1;
}

template <typename Real>
void GPT<Real>::linear_forward(BlockUnits<Real>& p, Real* out, const Real* in, int64_t weight,
                               int64_t bias, int64_t I, int64_t OC, bool summed) {
  const int64_t N = B_ * T_, tiles = layout_->config().tiles, rows = OC / tiles;
  for (int64_t t = 0; t < tiles; ++t) {
    kernels::matmul_forward(team_shape_, out + t * rows, in,
                            p.params(weight + t * rows * I, rows * I),
                            static_cast<const Real*>(nullptr), N, I, rows, gemm_math_, OC);
    p.poll();
  }
  const Real* b = p.params(bias, OC);
  if (summed) b = summed_bias(b);
  if (b) kernels::bias_forward(team_shape_, out, b, N, OC);
}

template <typename Real>
void GPT<Real>::linear_backward(BlockUnits<Real>& p, Real* dinp, const Real* dout, const Real* in,
                                int64_t weight, int64_t bias, int64_t I, int64_t OC) {
  namespace k = kernels;
  const int64_t N = B_ * T_, tiles = layout_->config().tiles, rows = OC / tiles;
  k::bias_backward(team_shape_, p.grads(bias, OC), dout, N, OC, column_partials_.data());
  for (int64_t t = tiles - 1; t >= 0; --t) {
    const int64_t w = weight + t * rows * I;
    // Scratch input gradients are written whole by the first tile: no zeroing pass.
    k::matmul_backward(
        team_shape_, dinp, p.grads(w, rows * I), static_cast<Real*>(nullptr), dout + t * rows, in,
        p.params(w, rows * I), N, I, rows, static_cast<Stat*>(nullptr),
        t == tiles - 1 ? k::GradWrite::Overwrite : k::GradWrite::Accumulate, gemm_math_, OC);
    p.poll();
  }
}

// One transformer block's forward: out = residual2 + mlp(ln2(residual2)), residual2 =
// residual + attention(ln1(residual)); `p` reaches the block's parameters. Under model
// parallelism `p` holds this rank's slices, and the block computes with the widths they have (its
// heads, its part of the MLP's width); the projections' outputs are then summed over the group.
template <typename Real>
void GPT<Real>::block_forward(LayerActs& a, BlockUnits<Real>& p, const Real* residual, Real* out) {
  namespace k = kernels;
  const ModelConfig& c = layout_->config();
  const int64_t B = B_, T = T_, C = c.dim, N = B * T;
  const BlockWidths& w = layout_->widths();
  const int64_t NH = w.heads, Cl = w.attention, F = w.mlp;
  const int unit = -1;  // the block's phase names it in its span
  const BlockOffsets& o = layout_->block();
  k::layernorm_forward(team_shape_, a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), residual,
                       p.params(o.ln1_w, C), p.params(o.ln1_b, C), N, C);
  linear_forward(p, qkv_.data(), a.ln1.data(), o.qkv_w, o.qkv_b, C, 3 * Cl);
  attention_->forward({team_shape_, gemm_math_, B, T, Cl, NH, a.attention, attention_workspace_},
                      a.atty.data(), qkv_.data());
  p.poll();
  linear_forward(p, scratch_btc_.data(), a.atty.data(), o.attproj_w, o.attproj_b, Cl, C, true);
  sync(ModelSync::AttentionOutput, scratch_btc_.data(), N * C, unit);
  k::residual_forward(team_shape_, a.residual2.data(), residual, scratch_btc_.data(), N * C);
  k::layernorm_forward(team_shape_, a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(),
                       a.residual2.data(), p.params(o.ln2_w, C), p.params(o.ln2_b, C), N, C);
  linear_forward(p, a.fch.data(), a.ln2.data(), o.fc_w, o.fc_b, C, F);
  k::gelu_forward(team_shape_, a.fch_gelu.data(), a.fch.data(), N * F);
  linear_forward(p, scratch_btc_.data(), a.fch_gelu.data(), o.fcproj_w, o.fcproj_b, F, C, true);
  sync(ModelSync::MlpOutput, scratch_btc_.data(), N * C, unit);
  k::residual_forward(team_shape_, out, a.residual2.data(), scratch_btc_.data(), N * C);
}

template <typename Real>
double GPT<Real>::forward(UnitAccess<Real>& units, const Batch& batch, ForwardPass pass) {
  namespace k = kernels;
  const ModelConfig& c = layout_->config();
  const int64_t C = c.dim, N = B_ * T_;
  std::fill(sync_counts_.begin(), sync_counts_.end(), 0);  // the uses of this pass

  // Each unit's part is a profiling region and a span, its parameter wait included.
  // Embeddings (a part of the model without them has its input in part_input()).
  const UnitEvent embedding{layout_->embedding_unit(), UnitUse::Forward};
  if (layout_->embeds()) {
    Phase scope(context_, PhaseSpec("forward embedding").span(SpanKind::Compute, embedding.unit));
    embed(units.acquire(embedding), batch, embedding.unit);
    units.release(embedding);
    units.poll();
  }

  // Transformer blocks.
  const Real* residual = encoded_.data();
  for (int l = 0; l < static_cast<int>(layers_.size()); ++l) {
    // Recomputing: the block's activations go to the one shared set, only its output is kept.
    LayerActs& a = recompute_.empty() ? layers_[static_cast<size_t>(l)] : recompute_.front();
    Real* out = block_output(l);
    Phase scope(context_, PhaseSpec("forward block " + std::to_string(layout_->first_block() + l))
                              .span(SpanKind::Compute, layout_->block_unit(l)));
    BlockUnits<Real> p(*layout_, l, UnitUse::Forward, units);
    block_forward(a, p, residual, out);
    p.finish();
    if (checkpoints_ && pass == ForwardPass::Training) copy_checkpoint(l, true);
    units.poll();
    residual = out;
  }
  if (!layout_->heads()) {  // the part's output is in part_output()
    if (pass == ForwardPass::LossOnly) check_sync_uses(pass);
    return 0.0;
  }

  // Final LayerNorm.
  const UnitEvent norm{layout_->final_norm_unit(), UnitUse::Forward};
  {
    Phase scope(context_, PhaseSpec("forward final_norm").span(SpanKind::Compute, norm.unit));
    const Real* pf = units.acquire(norm);
    k::layernorm_forward(team_shape_, lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), residual, pf,
                         pf + C, N, C);
    units.release(norm);
  }

  // LM head (tied to wte) and loss. The embedding unit stays acquired through the head's
  // backward, which comes right after. Under model.classifier_chunk the head's gradients are
  // made here, chunk by chunk: wte's starts in the micro-step's gradient buffer, which every
  // gradient path hands out from the micro-step's start (backward's embedding adds the rest).
  const int embed_unit = layout_->embedding_unit();
  Phase scope(context_, PhaseSpec("forward head").span(SpanKind::Compute, embed_unit));
  const UnitEvent head{embed_unit, UnitUse::Head};
  head_params_ = units.acquire(head);
  const bool training = pass == ForwardPass::Training;
  Real* dembed = training && c.chunked_classifier() ? units.grads(embed_unit) : nullptr;
  const double loss = head_forward(batch, embed_unit, dembed) / static_cast<double>(N);
  if (!training) {  // no backward follows to release the head
    units.release(head);
    head_params_ = nullptr;
    check_sync_uses(pass);
  }
  return loss;
}

// One transformer block's backward, with dresidual_ holding the gradient of its output on entry
// and of its input on return; `p` reaches the block's parameters and gradients.
// Under model parallelism the gradients of the QKV and fc layers' inputs are partial sums, summed
// over the group before the LayerNorms' backward.
template <typename Real>
void GPT<Real>::block_backward(LayerActs& a, BlockUnits<Real>& p, const Real* residual) {
  namespace k = kernels;
  const ModelConfig& c = layout_->config();
  const int64_t B = B_, T = T_, C = c.dim, N = B * T;
  const BlockWidths& w = layout_->widths();
  const int64_t NH = w.heads, Cl = w.attention, F = w.mlp;
  const int unit = -1;
  const BlockOffsets& o = layout_->block();
  // Scratch gradients are written whole by the kernel that produces them: no zeroing pass.
  constexpr k::GradWrite overwrite = k::GradWrite::Overwrite;
  Stat* partials = column_partials_.data();

  // MLP: residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))).
  linear_backward(p, dfch_gelu_.data(), dresidual_.data(), a.fch_gelu.data(), o.fcproj_w,
                  o.fcproj_b, F, C);
  k::gelu_backward(team_shape_, dfch_.data(), a.fch.data(), dfch_gelu_.data(), N * F, overwrite);
  linear_backward(p, dbtc_.data(), dfch_.data(), a.ln2.data(), o.fc_w, o.fc_b, C, F);
  sync(ModelSync::MlpInputGrad, dbtc_.data(), N * C, unit);
  // dresidual (of residual3) also flows straight into residual2: the same buffer continues.
  k::layernorm_backward(team_shape_, dresidual_.data(), p.grads(o.ln2_w, C), p.grads(o.ln2_b, C),
                        dbtc_.data(), a.residual2.data(), p.params(o.ln2_w, C), a.ln2_mean.data(),
                        a.ln2_rstd.data(), N, C, partials);

  // Attention: residual2 = residual + attproj(attention(qkv(ln1(residual)))).
  linear_backward(p, datty_.data(), dresidual_.data(), a.atty.data(), o.attproj_w, o.attproj_b, Cl,
                  C);
  attention_->backward({team_shape_, gemm_math_, B, T, Cl, NH, a.attention, attention_workspace_},
                       dqkv_.data(), datty_.data(), a.atty.data(), overwrite);
  p.poll();
  linear_backward(p, dbtc_.data(), dqkv_.data(), a.ln1.data(), o.qkv_w, o.qkv_b, C, 3 * Cl);
  sync(ModelSync::AttentionInputGrad, dbtc_.data(), N * C, unit);
  k::layernorm_backward(team_shape_, dresidual_.data(), p.grads(o.ln1_w, C), p.grads(o.ln1_b, C),
                        dbtc_.data(), residual, p.params(o.ln1_w, C), a.ln1_mean.data(),
                        a.ln1_rstd.data(), N, C, partials);
}

// The final LayerNorm's backward: dresidual starts as the gradient of the last block's output.
template <typename Real>
void GPT<Real>::final_norm_backward(UnitAccess<Real>& units) {
  const int64_t C = layout_->config().dim, N = B_ * T_;
  const Real* last_residual = layers_.empty() ? encoded_.data() : layers_.back().residual3.data();
  const int norm_unit = layout_->final_norm_unit();
  Phase scope(context_, PhaseSpec("backward final_norm").span(SpanKind::Compute, norm_unit));
  const UnitEvent norm{norm_unit, UnitUse::Backward};
  const Real* pf = units.acquire(norm);
  Real* gf = units.grads(norm_unit);
  kernels::fill(team_shape_, dresidual_.data(), N * C, Real(0));
  kernels::layernorm_backward(team_shape_, dresidual_.data(), gf, gf + C, dbtc_.data(),
                              last_residual, pf, lnf_mean_.data(), lnf_rstd_.data(), N, C,
                              column_partials_.data());
  units.release(norm);
  units.grads_ready(norm_unit);
  units.poll();
}

template <typename Real>
void GPT<Real>::backward(UnitAccess<Real>& units, const Batch& batch) {
  namespace k = kernels;
  const ModelConfig& c = layout_->config();
  const int64_t B = B_, T = T_, C = c.dim;
  const int embed_unit = layout_->embedding_unit();

  // LM head and loss: d(mean loss)/d(logit) = (p - onehot) / N (made in the forward under
  // model.classifier_chunk). A part of the model without the head has the gradient of its output
  // in part_output_grad().
  if (layout_->heads()) {
    const UnitEvent head_event{embed_unit, UnitUse::Head};
    ZM_ASSERT(head_params_ != nullptr, "backward without a forward");
    Phase scope(context_, PhaseSpec("backward head").span(SpanKind::Compute, embed_unit));
    head_backward(units.grads(embed_unit), batch, embed_unit);
    units.release(head_event);
    head_params_ = nullptr;
    units.poll();
  }
  if (layout_->heads()) final_norm_backward(units);

  // Blocks, last to first. dresidual_ carries the gradient of the residual stream.
  for (int l = static_cast<int>(layers_.size()) - 1; l >= 0; --l) {
    const Real* residual = l == 0 ? encoded_.data() : block_output(l - 1);
    if (checkpoints_) copy_checkpoint(l - 2, false);  // l - 1's is back: l - 2's comes meanwhile
    const int unit = layout_->block_unit(l);
    const std::string name = std::to_string(layout_->first_block() + l);
    Phase scope(context_, PhaseSpec("backward block " + name).span(SpanKind::Compute, unit));
    // A whole block is acquired once for the recomputed forward and the backward; tiles for each.
    BlockUnits<Real> p(*layout_, l, UnitUse::Backward, units);
    LayerActs& a = recompute_.empty() ? layers_[static_cast<size_t>(l)] : recompute_.front();
    if (!recompute_.empty()) {
      // The same kernels on the same input: the activations are bitwise those of the forward.
      Phase recompute(context_, PhaseSpec("recompute block " + name).span(SpanKind::Compute, unit));
      BlockUnits<Real> again(*layout_, l, UnitUse::Recompute, units);
      block_forward(a, layout_->block_units() > 1 ? again : p, residual, a.residual3.data());
      again.finish();
    }
    block_backward(a, p, residual);
    p.finish();
    units.poll();
  }

  // Embeddings: needs no parameters, only their gradients (wte's already holds the head's part
  // where the part has the head; the token part goes into it now, or is held for the step's
  // reduction: hold_token_grads). Without them the input's gradient is in part_input_grad().
  if (layout_->embeds()) {
    Phase scope(context_, PhaseSpec("backward embedding").span(SpanKind::Compute, embed_unit));
    Real* dembed = units.grads(embed_unit);
    Real* dwte = held_dwte_ ? held_dwte_ : dembed + layout_->wte_offset();
    k::encoder_backward(team_shape_, dwte, dembed + layout_->wpe_offset(), dresidual_.data(),
                        batch.input_groups, B, T, C);
  }
  if (layout_->embeds() || layout_->heads()) units.grads_ready(embed_unit);
  if (scheme_ != nullptr) check_sync_uses(ForwardPass::Training);
}

// The previous copy is waited first: the next block writes (forward) or reads (backward) its
// device buffer.
template <typename Real>
void GPT<Real>::copy_checkpoint(int64_t l, bool to_home) {
  checkpoints_->wait();
  if (l < 0 || l >= static_cast<int64_t>(layers_.size()) - 2) return;
  Real* home = layers_[static_cast<size_t>(l)].residual3.data();
  Real* device = block_output(l);
  checkpoints_->copy(to_home, to_home ? home : device, to_home ? device : home,
                     sizeof(Real) * static_cast<size_t>(B_ * T_ * layout_->config().dim),
                     layout_->block_unit(static_cast<int>(l)));
}

template <typename Real>
void GPT<Real>::sync(ModelSync point, Real* data, int64_t count, int unit) {
  if (scheme_ == nullptr) return;
  at_sync(point, count / layout_->config().dim, unit,
          [&](const ModelParallelCall<Real>& c) { scheme_->sum(c, point, data, count); });
}

template <typename Real>
void GPT<Real>::at_sync(ModelSync point, int64_t rows, int unit,
                        const std::function<void(const ModelParallelCall<Real>&)>& hook) {
  ModelPosts posts{scheme_->collectives(point, buffer_shape(*layout_, B_, T_), rows,
                                        static_cast<int>(sizeof(Real)))};
  hook(call(unit, &posts));
  ZM_ASSERT(posts.posted == posts.declared.size(), "{} of {} rows: {} of {} collectives posted",
            model_sync_name(point), rows, posts.posted, posts.declared.size());
  size_t use = 0;
  while (use < sync_uses_.size() &&
         (sync_uses_[use].point != point || sync_uses_[use].rows != rows))
    ++use;
  ZM_ASSERT(use < sync_uses_.size(), "{} of {} rows is not a use gpt_sync_uses declares",
            model_sync_name(point), rows);
  ++sync_counts_[use];
}

template <typename Real>
void GPT<Real>::check_sync_uses(ForwardPass pass) {
  for (size_t use = 0; use < sync_uses_.size(); ++use) {
    const ModelSyncUse& u = sync_uses_[use];
    const int64_t declared = pass == ForwardPass::Training ? u.per_micro_batch : u.per_forward_only;
    ZM_ASSERT(sync_counts_[use] == declared, "a {} pass used {} of {} rows {} times, declared {}",
              pass == ForwardPass::Training ? "training" : "forward-only", model_sync_name(u.point),
              u.rows, sync_counts_[use], declared);
    sync_counts_[use] = 0;
  }
}

std::vector<ModelSyncUse> gpt_sync_uses(const ParamLayout& layout, int64_t B, int64_t T) {
  const ModelConfig& c = layout.config();
  const int64_t N = B * T, L = layout.blocks(), chunk = c.classifier_rows(N);
  const int64_t forwards = c.recomputes_blocks() ? 2 : 1;  // a block's in a training micro-batch
  std::vector<ModelSyncUse> uses = {{ModelSync::AttentionOutput, N, forwards * L, L},
                                    {ModelSync::MlpOutput, N, forwards * L, L},
                                    {ModelSync::MlpInputGrad, N, L, 0},
                                    {ModelSync::AttentionInputGrad, N, L, 0}};
  if (layout.embeds()) uses.insert(uses.begin(), {ModelSync::Embedding, N, 1, 1});
  if (!layout.heads()) return uses;
  uses.push_back({ModelSync::HeadStatistics, chunk, N / chunk, N / chunk});
  if (N % chunk != 0) uses.push_back({ModelSync::HeadStatistics, N % chunk, 1, 1});
  uses.push_back({ModelSync::HeadInputGrad, N, 1, 0});
  return uses;
}

std::vector<ModelSyncPost> gpt_sync_posts(const ParamLayout& layout, int64_t B, int64_t T,
                                          int element_bytes) {
  const ModelParallelScheme* scheme = layout.scheme();
  if (scheme == nullptr) return {};
  const BufferShape shape = buffer_shape(layout, B, T);
  std::vector<ModelSyncPost> posts;
  for (const ModelSyncUse& u : gpt_sync_uses(layout, B, T))
    for (const ModelCollective& wire : scheme->collectives(u.point, shape, u.rows, element_bytes))
      posts.push_back({u.point, wire, u.per_micro_batch, u.per_forward_only});
  return posts;
}

#define ZM_INSTANTIATE(R)       \
  template class BlockUnits<R>; \
  template class GPT<R>;
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
