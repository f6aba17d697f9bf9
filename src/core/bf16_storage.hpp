// A bfloat16 storage type for host-only builds with Kokkos >= 4, whose
// Kokkos::Experimental::bhalf_t is an alias of float there (KOKKOS_BHALF_T_IS_FLOAT): without a
// real 2-byte type the bf16 path would silently run in fp32 on the host. Values are stored as the
// upper 16 bits of an IEEE float, rounded to nearest even (as CUDA's __float2bfloat16_rn does), and
// all arithmetic goes through float, as the kernels' Acc<T> already arranges.
#pragma once

#include <cstdint>
#include <type_traits>

namespace zm {

struct BF16Storage {
  uint16_t bits;

  BF16Storage() = default;
  template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
  KOKKOS_INLINE_FUNCTION BF16Storage(U value) : bits(round(static_cast<float>(value))) {}
  template <typename U, typename = std::enable_if_t<std::is_arithmetic_v<U>>>
  KOKKOS_INLINE_FUNCTION explicit operator U() const {
    const uint32_t widened = static_cast<uint32_t>(bits) << 16;
    float f;
    __builtin_memcpy(&f, &widened, sizeof(f));
    return static_cast<U>(f);
  }

  KOKKOS_INLINE_FUNCTION static uint16_t round(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
};

static_assert(sizeof(BF16Storage) == 2 && std::is_trivially_copyable_v<BF16Storage>);

KOKKOS_INLINE_FUNCTION bool operator<(BF16Storage a, BF16Storage b) {
  return float(a) < float(b);
}
KOKKOS_INLINE_FUNCTION bool operator>(BF16Storage a, BF16Storage b) {
  return float(a) > float(b);
}
KOKKOS_INLINE_FUNCTION bool operator==(BF16Storage a, BF16Storage b) {
  return float(a) == float(b);
}
KOKKOS_INLINE_FUNCTION bool operator!=(BF16Storage a, BF16Storage b) {
  return float(a) != float(b);
}

}  // namespace zm
