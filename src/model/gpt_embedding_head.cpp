// The model's two ends at the vocabulary: the token embedding (wte[tokens] + wpe) and the LM head
// with its cross-entropy, which share the tied wte. Under model parallelism the scheme may cut wte
// along the vocabulary: then it embeds and computes the cross-entropy over the rows each rank
// holds (model/model_parallel.hpp). Without a scheme each piece is the plain computation.
#include <algorithm>

#include "kernels/crossentropy.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/encoder.hpp"
#include "kernels/matmul.hpp"
#include "model/gpt.hpp"

namespace zm {

template <typename Real>
void GPT<Real>::embed(const Real* embeddings, const Batch& batch, int unit) {
  const int64_t C = layout_->config().dim;
  const Real* wte = embeddings + layout_->wte_offset();
  const Real* wpe = embeddings + layout_->wpe_offset();
  if (scheme_ == nullptr) {
    kernels::encoder_forward(team_shape_, encoded_.data(), batch.inputs, wte, wpe, B_, T_, C);
    return;
  }
  scheme_->embed(call(unit), encoded_.data(), batch.inputs, wte, wpe, layout_->vocab_rows(), B_, T_,
                 C);
  sync(ModelSync::Embedding, encoded_.data(), B_ * T_ * C, unit);
}

template <typename Real>
void GPT<Real>::head_crossentropy(const Batch& batch, int64_t first, int64_t rows, Real dloss,
                                  int unit) {
  namespace k = kernels;
  const int64_t V = layout_->config().vocab, slice = layout_->vocab_rows();
  const int* targets = batch.targets + first;
  Stat* losses = losses_.data() + first;
  const bool fused = layout_->config().chunked_classifier();
  if (scheme_ != nullptr) {
    at_sync(ModelSync::HeadStatistics, rows, unit, [&](const ModelParallelCall<Real>& c) {
      scheme_->crossentropy(c, logits_.data(), losses, targets, rows, V, slice, dloss, fused);
    });
    return;
  }
  if (fused)
    k::softmax_crossentropy_fused(team_shape_, logits_.data(), losses, targets, dloss, rows, V,
                                  slice);
  else
    k::softmax_crossentropy_forward(team_shape_, logits_.data(), losses, targets, rows, V, slice);
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
  // The chunk's rows of d(loss)/d(lnf), and its part of the wte gradient, added in chunk order
  // (matmul_backward accumulates weight gradients).
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
    if (scheme_ == nullptr)
      k::softmax_crossentropy_backward(team_shape_, logits_.data(), batch.targets, dloss, N, V,
                                       rows);
    else
      scheme_->crossentropy_backward(call(unit), logits_.data(), batch.targets, dloss, N, V, rows);
    k::matmul_backward<Real>(team_shape_, dbtc_.data(), dembed + layout_->wte_offset(), nullptr,
                             logits_.data(), lnf_.data(), head_params_ + layout_->wte_offset(), N,
                             C, rows, nullptr, k::GradWrite::Overwrite, gemm_math_);
  }
  sync(ModelSync::HeadInputGrad, dbtc_.data(), N * C, unit);  // each rank's part of d(lnf)
}

#define ZM_INSTANTIATE(R)                                                          \
  template void GPT<R>::embed(const R*, const Batch&, int);                        \
  template double GPT<R>::head_forward(const Batch&, int, R*);                     \
  template void GPT<R>::head_crossentropy(const Batch&, int64_t, int64_t, R, int); \
  template void GPT<R>::head_chunk(const Batch&, int64_t, int64_t, R*, int);       \
  template void GPT<R>::head_backward(R*, const Batch&, int);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm
