#include "modules/offload/host_sums.hpp"

#include "kernels/host_loop.hpp"

namespace zm::kernels {

template <typename T>
void host_add_into(T* y, const T* x, int64_t n) {
  using A = Acc<T>;
  for_each_on_host("zeromini::host_add_into", n, [=](int64_t i) { y[i] = T(A(y[i]) + A(x[i])); });
}

template <typename T>
void host_accumulate_gradient(Acc<T>* sum, const T* x, T* out, int64_t n, bool first) {
  using A = Acc<T>;
  for_each_on_host("zeromini::host_accumulate_gradient", n, [=](int64_t i) {
    const A total = first ? A(x[i]) : sum[i] + A(x[i]);
    sum[i] = total;
    if (out) out[i] = T(total);
  });
}

template void host_add_into<float>(float*, const float*, int64_t);
template void host_accumulate_gradient<float>(float*, const float*, float*, int64_t, bool);
#if ZEROMINI_HAVE_BF16
template void host_add_into<bf16>(bf16*, const bf16*, int64_t);
template void host_accumulate_gradient<bf16>(float*, const bf16*, bf16*, int64_t, bool);
#endif

}  // namespace zm::kernels
