#include "kernels/init.hpp"

#include "kernels/counter_rng.hpp"
#include "kernels/team.hpp"

namespace zm::kernels {

template <typename T>
void init_normal(TeamShape shape, T* x, int64_t n, float stddev, uint64_t seed,
                 uint64_t first_index) {
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

#define ZM_INSTANTIATE(T) \
  template void init_normal<T>(TeamShape, T*, int64_t, float, uint64_t, uint64_t);
ZM_FOR_EACH_REAL(ZM_INSTANTIATE)
#undef ZM_INSTANTIATE

}  // namespace zm::kernels
