# Kokkos and Kokkos Kernels, whichever major version is installed.
#
# All differences between the Kokkos 3.4 packaged by Debian (Trilinos 13.2) and Kokkos >= 4 that
# the build system has to know about live here; the C++ side lives in src/core/compat.hpp.
#
# Result: the interface target `zeromini::kokkos` (Kokkos core + Kokkos Kernels) and the variables
#   ZEROMINI_KOKKOS_VERSION   e.g. 3.4.1 or 4.6.1
#   ZEROMINI_KOKKOS_CUDA      ON when the Kokkos found has the CUDA backend
#   ZEROMINI_KOKKOS_OPENMP    ON when it has the OpenMP backend (host threads)

find_package(Kokkos REQUIRED)
find_package(KokkosKernels REQUIRED)

# Debian's Trilinos-generated Kokkos::kokkos lists "<prefix>/include", which resolves to the
# non-existent /usr/lib/include, and CMake refuses to generate with a missing include directory.
# Replace it with the directory the headers really are in.
get_target_property(_zm_kokkos_incs Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
if(_zm_kokkos_incs)
  set(_zm_kokkos_fixed_incs "")
  foreach(_dir IN LISTS _zm_kokkos_incs)
    if(EXISTS "${_dir}" OR _dir MATCHES "^\\$<")
      list(APPEND _zm_kokkos_fixed_incs "${_dir}")
    else()
      message(STATUS "zeromini: dropping missing Kokkos include directory ${_dir}")
    endif()
  endforeach()
  if(Kokkos_INCLUDE_DIRS)
    foreach(_dir IN LISTS Kokkos_INCLUDE_DIRS)
      get_filename_component(_dir "${_dir}" REALPATH)
      if(EXISTS "${_dir}")
        list(APPEND _zm_kokkos_fixed_incs "${_dir}")
      endif()
    endforeach()
  endif()
  list(REMOVE_DUPLICATES _zm_kokkos_fixed_incs)
  set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                  "${_zm_kokkos_fixed_incs}")
endif()

# The Kokkos Kernels target is `trilinos_kokkoskernels` in Trilinos' packaging (3.x) and
# `Kokkos::kokkoskernels` in stand-alone Kokkos Kernels >= 4.
if(TARGET Kokkos::kokkoskernels)
  set(_zm_kernels_target Kokkos::kokkoskernels)
elseif(TARGET trilinos_kokkoskernels)
  set(_zm_kernels_target trilinos_kokkoskernels)
else()
  message(FATAL_ERROR "zeromini: found Kokkos Kernels but neither Kokkos::kokkoskernels nor "
                      "trilinos_kokkoskernels is defined")
endif()

add_library(zeromini_kokkos INTERFACE)
add_library(zeromini::kokkos ALIAS zeromini_kokkos)
target_link_libraries(zeromini_kokkos INTERFACE Kokkos::kokkos ${_zm_kernels_target})

# Every GEMM goes to a vendor BLAS: cuBLAS where Kokkos runs on CUDA, the host BLAS behind Kokkos
# Kernels where it runs on the host (the condition of src/kernels/gemm_backend.hpp).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LIBRARIES Kokkos::kokkos ${_zm_kernels_target})
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_REQUIRED_QUIET ON)
check_cxx_source_compiles([[
#include <Kokkos_Macros.hpp>
#include <KokkosKernels_config.h>
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#elif !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && !defined(KOKKOS_ENABLE_SYCL) && defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#else
#error no vendor BLAS
#endif
int main() { return 0; }
]] ZEROMINI_KOKKOS_KERNELS_HAS_BLAS)
unset(CMAKE_REQUIRED_LIBRARIES)
unset(CMAKE_TRY_COMPILE_TARGET_TYPE)
unset(CMAKE_REQUIRED_QUIET)
if(NOT ZEROMINI_KOKKOS_KERNELS_HAS_BLAS)
  message(FATAL_ERROR "zeromini: the Kokkos Kernels found has no vendor BLAS for GEMMs: it needs "
                      "cuBLAS (KokkosKernels_ENABLE_TPL_CUBLAS) with CUDA, or a host BLAS "
                      "(KokkosKernels_ENABLE_TPL_BLAS) with host backends; "
                      "scripts/build-kokkos.sh builds it so")
endif()

if(DEFINED Kokkos_VERSION)
  set(ZEROMINI_KOKKOS_VERSION "${Kokkos_VERSION}")
else()
  set(ZEROMINI_KOKKOS_VERSION "unknown")
endif()
# bfloat16 exists from Kokkos 4 on (core/compat.hpp's ZEROMINI_HAVE_BF16, from the same version).
set(ZEROMINI_KOKKOS_HAS_BF16 ON)
if(ZEROMINI_KOKKOS_VERSION VERSION_LESS 4.0)
  set(ZEROMINI_KOKKOS_HAS_BF16 OFF)
endif()

set(ZEROMINI_KOKKOS_CUDA OFF)
if(Kokkos_ENABLE_CUDA)
  set(ZEROMINI_KOKKOS_CUDA ON)
elseif(COMMAND kokkos_check)
  kokkos_check(DEVICES CUDA RETURN_VALUE _zm_has_cuda)
  if(_zm_has_cuda)
    set(ZEROMINI_KOKKOS_CUDA ON)
  endif()
endif()
# Debian's Kokkos 3.4 is Serial only and defines neither variable.
set(ZEROMINI_KOKKOS_OPENMP OFF)
if(Kokkos_ENABLE_OPENMP)
  set(ZEROMINI_KOKKOS_OPENMP ON)
endif()
message(STATUS "zeromini: Kokkos ${ZEROMINI_KOKKOS_VERSION}, CUDA backend: ${ZEROMINI_KOKKOS_CUDA}, "
               "OpenMP backend: ${ZEROMINI_KOKKOS_OPENMP}, Kokkos Kernels target: "
               "${_zm_kernels_target}")
