// Everything that differs between the Kokkos versions zeromini builds against, in one place:
// Debian's Kokkos 3.4 (Trilinos 13.2, Serial only) and Kokkos >= 4 (CUDA builds).
#pragma once

#include <Kokkos_Core.hpp>

#include <cmath>
#include <string>
#include <type_traits>

// Math functions moved from Kokkos::Experimental (3.x) to Kokkos (4.x).
namespace zm::math {
#if KOKKOS_VERSION >= 40000
using Kokkos::cos;
using Kokkos::exp;
using Kokkos::fabs;
using Kokkos::floor;
using Kokkos::fma;
using Kokkos::log;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::cos;
using Kokkos::Experimental::exp;
using Kokkos::Experimental::fabs;
using Kokkos::Experimental::floor;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
// 3.4 has no fma; it is built here for the host only (Serial), where the C library's is the one.
KOKKOS_INLINE_FUNCTION float fma(float a, float b, float c) {
  return std::fma(a, b, c);
}
KOKKOS_INLINE_FUNCTION double fma(double a, double b, double c) {
  return std::fma(a, b, c);
}
#endif
}  // namespace zm::math

// A bfloat16 type exists from Kokkos 4 on (Kokkos::Experimental::bhalf_t); 3.4 only has half_t.
// Host-only Kokkos 4 builds make bhalf_t an alias of float: zeromini stores real bf16 there.
#if KOKKOS_VERSION >= 40000
#define ZEROMINI_HAVE_BF16 1
#if defined(KOKKOS_BHALF_T_IS_FLOAT) && KOKKOS_BHALF_T_IS_FLOAT
#include "core/bf16_storage.hpp"
namespace zm {
using bf16 = BF16Storage;
}
#else
namespace zm {
using bf16 = Kokkos::Experimental::bhalf_t;
}
#endif
#else
#define ZEROMINI_HAVE_BF16 0
#endif

// Explicit instantiations: MACRO applied to each compute type of the model and the engine (float,
// and bf16 where this Kokkos has it), or to each element type of the kernels (those and double).
#if ZEROMINI_HAVE_BF16
#define ZM_FOR_EACH_REAL(MACRO) MACRO(float) MACRO(bf16)
#else
#define ZM_FOR_EACH_REAL(MACRO) MACRO(float)
#endif
#define ZM_FOR_EACH_KERNEL_REAL(MACRO) MACRO(double) ZM_FOR_EACH_REAL(MACRO)

namespace zm {

// Execution and memory spaces every kernel runs in: the default device (CUDA in GPU builds,
// Serial here). Host mirrors appear only where I/O needs them.
using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using HostSpace = Kokkos::HostSpace;

// Kokkos::initialize on a chosen GPU (InitializationSettings in 4.x, InitArguments in 3.x);
// host-only builds take Kokkos' command-line flags instead.
inline void initialize_kokkos(int& argc, char** argv, int device_id) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  (void)argc;
  (void)argv;
#if KOKKOS_VERSION >= 40000
  Kokkos::initialize(Kokkos::InitializationSettings().set_device_id(device_id));
#else
  Kokkos::InitArguments arguments;
  arguments.device_id = device_id;
  Kokkos::initialize(arguments);
#endif
#else
  (void)device_id;
  Kokkos::initialize(argc, argv);
#endif
}

inline bool device_is_host() {
  return std::is_same<MemSpace, HostSpace>::value;
}

}  // namespace zm
