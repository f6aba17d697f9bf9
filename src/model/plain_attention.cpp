// The core's attention kernels (kernels/attention.hpp) behind the model's interface.
#include "kernels/attention.hpp"
#include "model/attention_kernels.hpp"

namespace zm {

namespace {

// This rank's heads in head layout (B, NHl, T, hd), and their B x NHl x T x T maps.
struct Size {
  static int64_t heads(const BufferShape& s) { return s.N * s.Cl; }
  static int64_t maps(const BufferShape& s) { return s.B * s.NHl * s.T * s.T; }
};

constexpr MemCategory kAct = MemCategory::Activations, kWork = MemCategory::Workspace;

// Saved: q, k, v and the probabilities; workspace: the kernels' scratch, as buffers() declares.
template <typename Real>
kernels::AttentionSaved<Real> saved_of(const AttentionBuffers<Real>& b) {
  return {b.real[0].data(), b.real[1].data(), b.real[2].data(), b.real[3].data()};
}
template <typename Real>
kernels::AttentionScratch<Real> scratch_of(const AttentionBuffers<Real>& b) {
  return {b.real[0].data(), b.real[1].data(), b.real[2].data(), b.real[3].data(), b.real[4].data()};
}

class PlainAttention final : public AttentionKernels {
 public:
  std::vector<AttentionBuffer> buffers() const override {
    return {
        {"q", kAct, false, Size::heads},       {"k", kAct, false, Size::heads},
        {"v", kAct, false, Size::heads},       {"att", kAct, false, Size::maps},
        {"att_y", kWork, false, Size::heads},  {"att_datt", kWork, false, Size::maps},
        {"att_dq", kWork, false, Size::heads}, {"att_dk", kWork, false, Size::heads},
        {"att_dv", kWork, false, Size::heads},
    };
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
    // Forward's scratch is the head-layout output alone.
    kernels::attention_forward(c.shape, out, saved_of(c.saved),
                               {c.workspace.real[0].data(), nullptr, nullptr, nullptr, nullptr},
                               qkv, c.B, c.T, c.C, c.NH, c.math);
  }
  // The probabilities were saved: backward needs no forward output.
  template <typename Real>
  static void run_backward(const AttentionCall<Real>& c, Real* dqkv, const Real* dout,
                           const Real* /*out*/, kernels::GradWrite write) {
    kernels::attention_backward(c.shape, dqkv, scratch_of(c.workspace), dout, saved_of(c.saved),
                                c.B, c.T, c.C, c.NH, write, c.math);
  }
};

}  // namespace

const AttentionKernels& plain_attention() {
  static const PlainAttention kernels;
  return kernels;
}

}  // namespace zm
