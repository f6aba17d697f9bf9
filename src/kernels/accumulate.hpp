// The arithmetic type of a storage type: bf16 data is computed (and accumulated) in float, and
// the statistics kernels save for backward (LayerNorm's mean and rstd) are kept in it.
#pragma once

#include "core/compat.hpp"

namespace zm::kernels {

template <typename T>
struct AccumulateType {
  using type = T;
};
#if ZEROMINI_HAVE_BF16
template <>
struct AccumulateType<bf16> {
  using type = float;
};
#endif
template <typename T>
using Acc = typename AccumulateType<T>::type;

}  // namespace zm::kernels
