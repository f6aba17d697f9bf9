#include "modules/fused_attention/fused_attention_kernels.hpp"

#include "modules/fused_attention/flash_attention.hpp"

namespace zm {

namespace {

// This rank's heads in head layout (B, NHl, T, hd), and a statistic per row of each of them.
int64_t size_heads(const BufferShape& s) {
  return s.N * s.Cl;
}
int64_t size_rows(const BufferShape& s) {
  return s.B * s.NHl * s.T;
}

constexpr MemCategory kAct = MemCategory::Activations, kWork = MemCategory::Workspace;

// Saved: q, k, v and the log-sum-exps, as buffers() declares them.
template <typename Real>
kernels::FlashAttentionSaved<Real> saved_of(const AttentionBuffers<Real>& b) {
  return {b.real[0].data(), b.real[1].data(), b.real[2].data(), b.arithmetic[0].data()};
}

class FusedAttention final : public AttentionKernels {
 public:
  std::vector<AttentionBuffer> buffers() const override {
    return {
        {"q", kAct, false, size_heads},        {"k", kAct, false, size_heads},
        {"v", kAct, false, size_heads},        {"att_lse", kAct, true, size_rows},
        {"att_delta", kWork, true, size_rows},
    };
  }

  // Backward computes each tile's scores Q K^T again: 2 T C per token and layer.
  double recomputed_flops_per_token(const ModelConfig& m) const override {
    const double L = static_cast<double>(m.layers), C = static_cast<double>(m.dim),
                 T = static_cast<double>(m.seq_len);
    return 2.0 * L * T * C;
  }

  void forward(const AttentionCall<float>& c, float* out, const float* qkv) const override {
    run_forward(c, out, qkv);
  }
  void backward(const AttentionCall<float>& c, float* dqkv, const float* dout, const float* out,
                kernels::GradWrite write) const override {
    run_backward(c, dqkv, dout, out, write);
  }
#if ZEROMINI_HAVE_BF16
  void forward(const AttentionCall<bf16>& c, bf16* out, const bf16* qkv) const override {
    run_forward(c, out, qkv);
  }
  void backward(const AttentionCall<bf16>& c, bf16* dqkv, const bf16* dout, const bf16* out,
                kernels::GradWrite write) const override {
    run_backward(c, dqkv, dout, out, write);
  }
#endif

 private:
  template <typename Real>
  static void run_forward(const AttentionCall<Real>& c, Real* out, const Real* qkv) {
    kernels::flash_attention_forward(c.shape, out, saved_of(c.saved), qkv, c.B, c.T, c.C, c.NH);
  }
  // The workspace holds each row's dout . out.
  template <typename Real>
  static void run_backward(const AttentionCall<Real>& c, Real* dqkv, const Real* dout,
                           const Real* out, kernels::GradWrite write) {
    kernels::flash_attention_backward(c.shape, dqkv, c.workspace.arithmetic[0].data(), dout, out,
                                      saved_of(c.saved), c.B, c.T, c.C, c.NH, write);
  }
};

}  // namespace

const AttentionKernels& fused_attention_kernels() {
  static const FusedAttention kernels;
  return kernels;
}

}  // namespace zm
