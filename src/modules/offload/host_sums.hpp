// ZeRO-Offload's gradient sums on the host: where the gradient shard lives in host memory
// (core/offload.hpp), each micro-step's reduced shard arrives there and joins it with the same
// element arithmetic as the device kernels (kernels/elementwise.hpp add_into and
// accumulate_gradient), so that the sums are the device's bit for bit.
#pragma once

#include <cstdint>

#include "kernels/accumulate.hpp"

namespace zm::kernels {

// y += x.
template <typename T>
void host_add_into(T* y, const T* x, int64_t n);
// sum = x (first) or sum + x, in Acc<T>; out = sum rounded to T where out is given.
template <typename T>
void host_accumulate_gradient(Acc<T>* sum, const T* x, T* out, int64_t n, bool first);

}  // namespace zm::kernels
