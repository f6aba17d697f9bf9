// The model's two ends at the vocabulary: the token embedding (wte[tokens] + wpe) and the LM head
// with its cross-entropy, which share the tied wte. Under tensor parallelism both are
// vocabulary-parallel (Megatron): each tp rank holds a slice of wte's rows, embeds the tokens of
// its slice and computes its slice's logits, and the cross-entropy's per-row statistics are
// gathered over the tp group. At tp = 1 each piece is the plain computation, with no collective.
#include <algorithm>

#include "comm/phase.hpp"
#include "kernels/crossentropy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/encoder.hpp"
#include "kernels/matmul.hpp"
#include "kernels/vocab_parallel.hpp"
#include "model/gpt.hpp"

namespace zm {

template <typename Real>
void GPT<Real>::select_slice_groups() {
  const int64_t begin = tp_.rank * layout_->vocab_rows(), end = begin + layout_->vocab_rows();
  kernels::HostTokenGroups& out = slice_groups_;
  out.ids.clear();
  out.rows.clear();
  out.starts.assign(1, 0);
  const kernels::HostTokenGroups& all = host_groups_;
  for (size_t u = 0; u < all.ids.size(); ++u) {
    if (all.ids[u] < begin || all.ids[u] >= end) continue;
    out.ids.push_back(static_cast<int>(all.ids[u] - begin));
    for (int k = all.starts[u]; k < all.starts[u + 1]; ++k)
      out.rows.push_back(all.rows[static_cast<size_t>(k)]);
    out.starts.push_back(static_cast<int>(out.rows.size()));
  }
}

template <typename Real>
void GPT<Real>::embed(const Real* embeddings, const Batch& batch, int unit) {
  const int64_t C = layout_->config().dim;
  const Real* wte = embeddings + layout_->wte_offset();
  const Real* wpe = embeddings + layout_->wpe_offset();
  if (tp_.size == 1) {
    kernels::encoder_forward(team_shape_, encoded_.data(), batch.inputs, wte, wpe, B_, T_, C);
    return;
  }
  // Each rank embeds the tokens of its slice (zeros elsewhere), rank 0 adds the positions.
  kernels::encoder_forward_vocab_slice(team_shape_, encoded_.data(), batch.inputs, wte,
                                       tp_.rank * layout_->vocab_rows(), layout_->vocab_rows(),
                                       counts_tp_replicas(tp_.rank) ? wpe : nullptr, B_, T_, C);
  tp_sum(encoded_.data(), B_ * T_ * C, unit);
}

template <typename Real>
void GPT<Real>::head_crossentropy(const Batch& batch, int64_t first, int64_t rows, Real dloss,
                                  int unit) {
  namespace k = kernels;
  const int64_t V = layout_->config().vocab, slice = layout_->vocab_rows();
  const int* targets = batch.targets + first;
  Stat* losses = losses_.data() + first;
  const bool fused = layout_->config().chunked_classifier();
  if (tp_.size == 1) {
    if (fused)
      k::softmax_crossentropy_fused(team_shape_, logits_.data(), losses, targets, dloss, rows, V,
                                    slice);
    else
      k::softmax_crossentropy_forward(team_shape_, logits_.data(), losses, targets, rows, V, slice);
    return;
  }
  // Each slice's {max, sum of exponentials, target logit} per row, gathered from every slice
  // and combined in rank order on every rank: the loss and the softmax of the whole row.
  const int64_t begin = tp_.rank * slice;
  k::crossentropy_slice_stats(team_shape_, logits_.data(), ce_stats_.data(), targets, begin, rows,
                              V, slice);
  tp_.comm->all_gather(ce_stats_.data(), ce_gathered_.data(),
                       static_cast<size_t>(k::kSliceStats * rows), DType::F32,
                       {unit, CommPurpose::TensorParallel});
  k::crossentropy_combine(team_shape_, ce_gathered_.data(), tp_.size, losses, ce_rows_.data(),
                          rows);
  if (fused)
    k::crossentropy_slice_dlogits(team_shape_, logits_.data(), ce_rows_.data(), targets, begin,
                                  dloss, rows, V, slice);
  else
    k::softmax_slice(team_shape_, logits_.data(), ce_rows_.data(), begin, rows, V, slice);
}

template <typename Real>
void GPT<Real>::head_chunk(const Batch& batch, int64_t first, int64_t rows, Real* dwte, int unit) {
  namespace k = kernels;
  const int64_t C = layout_->config().dim, slice = layout_->vocab_rows();
  const Real* wte = head_params_ + layout_->wte_offset();
  const Real* x = lnf_.data() + first * C;
  k::matmul_forward<Real>(team_shape_, logits_.data(), x, wte, nullptr, rows, C, slice, gemm_math_);
  head_crossentropy(batch, first, rows, Real(1.0f / static_cast<float>(B_ * T_)), unit);
  if (dwte == nullptr) return;  // a loss-only forward
  // The chunk's rows of d(loss)/d(lnf), and its part of the wte slice's gradient, added in
  // chunk order (matmul_backward accumulates weight gradients).
  k::matmul_backward<Real>(team_shape_, dbtc_.data() + first * C, dwte, nullptr, logits_.data(), x,
                           wte, rows, C, slice, nullptr, k::GradWrite::Overwrite, gemm_math_);
}

template <typename Real>
double GPT<Real>::head_forward(const Batch& batch, int unit, Real* dembed) {
  namespace k = kernels;
  const ModelConfig& c = layout_->config();
  const int64_t N = B_ * T_, C = c.dim, rows = layout_->vocab_rows();
  if (c.chunked_classifier()) {
    const int64_t chunk = c.classifier_rows(N);
    for (int64_t first = 0; first < N; first += chunk)
      head_chunk(batch, first, std::min(chunk, N - first),
                 dembed ? dembed + layout_->wte_offset() : nullptr, unit);
  } else {
    k::matmul_forward<Real>(team_shape_, logits_.data(), lnf_.data(),
                            head_params_ + layout_->wte_offset(), nullptr, N, C, rows, gemm_math_);
    head_crossentropy(batch, 0, N, Real(0), unit);
  }
  return k::sum(team_shape_, losses_.data(), N);
}

template <typename Real>
void GPT<Real>::head_backward(Real* dembed, const Batch& batch, int unit) {
  namespace k = kernels;
  const ModelConfig& c = layout_->config();
  const int64_t N = B_ * T_, C = c.dim, V = c.vocab, rows = layout_->vocab_rows();
  if (!c.chunked_classifier()) {
    const Real dloss = Real(1.0f / static_cast<float>(N));
    if (tp_.size == 1)
      k::softmax_crossentropy_backward(team_shape_, logits_.data(), batch.targets, dloss, N, V,
                                       rows);
    else
      k::crossentropy_slice_backward(team_shape_, logits_.data(), batch.targets, tp_.rank * rows,
                                     dloss, N, V, rows);
    k::matmul_backward<Real>(team_shape_, dbtc_.data(), dembed + layout_->wte_offset(), nullptr,
                             logits_.data(), lnf_.data(), head_params_ + layout_->wte_offset(), N,
                             C, rows, nullptr, k::GradWrite::Overwrite, gemm_math_);
  }
  tp_sum(dbtc_.data(), N * C, unit);  // each slice's part of d(loss)/d(lnf)
}

#define ZM_INSTANTIATE(R)                                                          \
  template void GPT<R>::select_slice_groups();                                     \
  template void GPT<R>::embed(const R*, const Batch&, int);                        \
  template double GPT<R>::head_forward(const Batch&, int, R*);                     \
  template void GPT<R>::head_crossentropy(const Batch&, int64_t, int64_t, R, int); \
  template void GPT<R>::head_chunk(const Batch&, int64_t, int64_t, R*, int);       \
  template void GPT<R>::head_backward(R*, const Batch&, int);
ZM_INSTANTIATE(float)
#if ZEROMINI_HAVE_BF16
ZM_INSTANTIATE(bf16)
#endif
#undef ZM_INSTANTIATE

}  // namespace zm
