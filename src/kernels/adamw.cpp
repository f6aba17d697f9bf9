#include "kernels/adamw.hpp"

#include <cmath>

#include "kernels/host_loop.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

namespace {

struct AdamWConstants {
  float step_size, correction2_sqrt, decay, beta1, beta2, eps, scale;
};

AdamWConstants constants(const AdamWParams& hp) {
  // Bias corrections in double on the host, as PyTorch computes them in Python.
  const double correction1 =
      1.0 - std::pow(static_cast<double>(hp.beta1), static_cast<double>(hp.step));
  const double correction2 =
      1.0 - std::pow(static_cast<double>(hp.beta2), static_cast<double>(hp.step));
  const float step_size = static_cast<float>(static_cast<double>(hp.lr) / correction1);
  const float correction2_sqrt = static_cast<float>(std::sqrt(correction2));
  const float decay = static_cast<float>(1.0 - static_cast<double>(hp.lr) * hp.weight_decay);
  return {step_size, correction2_sqrt, decay, hp.beta1, hp.beta2, hp.eps, hp.grad_scale};
}

// One element of AdamW: updates master, m and v in place and returns the new parameter.
KOKKOS_INLINE_FUNCTION float adamw_element(float grad, float& master, float& m, float& v,
                                           const AdamWConstants& k) {
  const float g = grad * k.scale;
  float p = master * k.decay;
  // Operand order as in PyTorch's mul_/add_(alpha=)/addcmul_(value=).
  const float mi = m * k.beta1 + (1.0f - k.beta1) * g;
  const float vi = v * k.beta2 + (1.0f - k.beta2) * g * g;
  m = mi;
  v = vi;
  p += -k.step_size * (mi / (math::sqrt(vi) / k.correction2_sqrt + k.eps));
  master = p;
  return p;
}

}  // namespace

void host_adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                       const AdamWParams& hp) {
  const AdamWConstants k = constants(hp);
  for_each_on_host("zeromini::host_adamw_update", n,
                   [=](int64_t i) { adamw_element(grads[i], params[i], m[i], v[i], k); });
}

void adamw_update(TeamShape shape, float* params, const float* grads, float* m, float* v, int64_t n,
                  const AdamWParams& hp) {
  const AdamWConstants k = constants(hp);
  for_each_element(
      shape, "zeromini::adamw_update", n,
      KOKKOS_LAMBDA(int64_t i) { adamw_element(grads[i], params[i], m[i], v[i], k); });
}

#if ZEROMINI_HAVE_BF16
template <typename Grad>
void host_adamw_update_mixed(float* master, const Grad* grads, float* m, float* v, bf16* params,
                             int64_t n, const AdamWParams& hp) {
  const AdamWConstants k = constants(hp);
  for_each_on_host("zeromini::host_adamw_update_mixed", n, [=](int64_t i) {
    params[i] = bf16(adamw_element(float(grads[i]), master[i], m[i], v[i], k));
  });
}

template <typename Grad>
void adamw_update_mixed(TeamShape shape, float* master, const Grad* grads, float* m, float* v,
                        bf16* params, int64_t n, const AdamWParams& hp) {
  const AdamWConstants k = constants(hp);
  for_each_element(
      shape, "zeromini::adamw_update_mixed", n, KOKKOS_LAMBDA(int64_t i) {
        params[i] = bf16(adamw_element(float(grads[i]), master[i], m[i], v[i], k));
      });
}

#define ZM_INSTANTIATE(Grad)                                                                       \
  template void host_adamw_update_mixed<Grad>(float*, const Grad*, float*, float*, bf16*, int64_t, \
                                              const AdamWParams&);                                 \
  template void adamw_update_mixed<Grad>(TeamShape, float*, const Grad*, float*, float*, bf16*,    \
                                         int64_t, const AdamWParams&);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE
#endif

}  // namespace zm::kernels
