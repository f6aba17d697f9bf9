#include "kernels/init.hpp"

#include "kernels/team.hpp"

namespace zm::kernels {

namespace {

KOKKOS_INLINE_FUNCTION uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform double in (0, 1] from the top 53 bits.
KOKKOS_INLINE_FUNCTION double unit_interval(uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

}  // namespace

template <typename T>
void init_normal(TeamShape shape, T* x, int64_t n, float stddev, uint64_t seed,
                 uint64_t first_index) {
  if (n <= 0) return;
  const uint64_t key = splitmix64(seed ^ 0x5a4f52304d494e49ull);
  for_each_element(
      shape, "zeromini::init_normal", n, KOKKOS_LAMBDA(int64_t i) {
        const uint64_t index = first_index + static_cast<uint64_t>(i);
        const uint64_t a = splitmix64(key + 2 * index);
        const uint64_t b = splitmix64(key + 2 * index + 1);
        // Box-Muller; the cosine branch only, so element i depends on index i alone.
        const double radius = math::sqrt(-2.0 * math::log(unit_interval(a)));
        const double angle = 6.283185307179586 * unit_interval(b);
        // Through float, so that a bf16 copy is the rounding of the fp32 value.
        x[i] = T(static_cast<float>(stddev * radius * math::cos(angle)));
      });
}

template void init_normal<float>(TeamShape, float*, int64_t, float, uint64_t, uint64_t);
#if ZEROMINI_HAVE_BF16
template void init_normal<bf16>(TeamShape, bf16*, int64_t, float, uint64_t, uint64_t);
#endif

}  // namespace zm::kernels
