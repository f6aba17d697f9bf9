# The small libraries: toml++, CLI11 and fmt (always), GoogleTest (with the tests) and Google
# Benchmark (with zeromini-bench).
#
# On a cluster they are rarely modules. Each is looked for with find_package first (a distribution
# package, a module, a prefix on CMAKE_PREFIX_PATH); where it is absent, it is built from source
# with FetchContent, inside this build:
#   - from ZEROMINI_DEPS_DIR (cache variable or environment), a directory of release tarballs
#     named as in the table below, for machines without a network;
#   - else from the upstream repository at the release's commit, where the machine has a network.
# A tarball is checked against its sha256, a clone by its commit. ZEROMINI_DEPS_FROM_SOURCE=ON skips
# find_package, for a build that must not pick up a system copy. configure says, per dependency,
# which it used ("zeromini: fmt: ...").
#
# The versions are those Debian 12 ships, so that the code that builds against Debian's packages
# builds against these.
include_guard(GLOBAL)
include(FetchContent)

set(ZEROMINI_DEPS_DIR "$ENV{ZEROMINI_DEPS_DIR}" CACHE PATH
    "Directory of release tarballs for the dependencies that are not installed (empty: download)")
option(ZEROMINI_DEPS_FROM_SOURCE "Build toml++, CLI11, fmt, GoogleTest and Google Benchmark from \
source even where installed" OFF)

# name: find_package name | tarball (`git archive` of the tag) and its sha256 | upstream
# repository and the tag's commit | the libraries it compiles
set(_zm_dep_tomlplusplus
    tomlplusplus
    tomlplusplus-3.3.0.tar.gz 2569407c1a86f7fe718ca09b4f3a87a8b31d542df1fc6e44f43d044e7ffd7ee4
    https://github.com/marzer/tomlplusplus.git c635f218c0aefc801d9748841930365e54fe3089)
set(_zm_dep_CLI11
    CLI11
    CLI11-2.1.2.tar.gz 0036e3964a60c3d8464c8cd9b13f0529424aa9099191ab458b4dd971e834487f
    https://github.com/CLIUtils/CLI11.git 70f8072f9dd2292fd0b9f9e5f58e279f60483ed3)
set(_zm_dep_fmt
    fmt
    fmt-9.1.0.tar.gz 6cab5846961256045f378f79d2cce58b4b574382dcae2eb180376ec17960c858
    https://github.com/fmtlib/fmt.git a33701196adfad74917046096bf5a2aa0ab0bb50
    fmt)
set(_zm_dep_googletest
    GTest
    googletest-1.12.1.tar.gz 49d75684d225db6520e404dabc6e04688d3f8b83437ef414a299108c3e456dde
    https://github.com/google/googletest.git 58d77fa8070e8cec2dc1ed015d66b454c8d78850
    gtest gtest_main)
set(_zm_dep_benchmark
    benchmark
    benchmark-1.7.1.tar.gz fc5d1e987dbf9419b049f1806da2d96b0c52dc452bef70d5669791bfccf28e56
    https://github.com/google/benchmark.git d572f4777349d43653b21d6c2fc63020ab326db2
    benchmark benchmark_main)

# Options of the fetched projects: only their libraries, nothing installed, no tests of theirs.
set(_zm_dep_options_googletest BUILD_GMOCK=OFF INSTALL_GTEST=OFF gtest_force_shared_crt=OFF)
set(_zm_dep_options_benchmark BENCHMARK_ENABLE_TESTING=OFF BENCHMARK_ENABLE_GTEST_TESTS=OFF
    BENCHMARK_ENABLE_INSTALL=OFF BENCHMARK_INSTALL_DOCS=OFF BENCHMARK_ENABLE_WERROR=OFF)
set(_zm_dep_options_fmt FMT_INSTALL=OFF FMT_TEST=OFF FMT_DOC=OFF)
set(_zm_dep_options_CLI11 CLI11_BUILD_TESTS=OFF CLI11_BUILD_EXAMPLES=OFF CLI11_BUILD_DOCS=OFF
    CLI11_INSTALL=OFF)

# zm_dependency(NAME TARGET): makes TARGET (e.g. fmt::fmt) available, from an installed package or
# built from source. Called from the top directory, so that the targets reach every directory.
macro(zm_dependency name target)
  list(GET _zm_dep_${name} 0 _zm_package)
  list(GET _zm_dep_${name} 1 _zm_tarball)
  list(GET _zm_dep_${name} 2 _zm_sha256)
  list(GET _zm_dep_${name} 3 _zm_repository)
  list(GET _zm_dep_${name} 4 _zm_commit)
  list(LENGTH _zm_dep_${name} _zm_fields)
  set(_zm_libraries "")
  if(_zm_fields GREATER 5)
    list(SUBLIST _zm_dep_${name} 5 -1 _zm_libraries)
  endif()
  set(_zm_found OFF)
  if(NOT ZEROMINI_DEPS_FROM_SOURCE)
    find_package(${_zm_package} QUIET)
    if(${_zm_package}_FOUND AND TARGET ${target})
      set(_zm_found ON)
      set(_zm_where "${${_zm_package}_DIR}")
      if(NOT _zm_where)
        set(_zm_where "found by CMake's Find${_zm_package}")
      endif()
      message(STATUS "zeromini: ${name}: installed ${${_zm_package}_VERSION} (${_zm_where})")
    endif()
  endif()
  if(NOT _zm_found)
    if(ZEROMINI_DEPS_DIR)
      set(_zm_source ${ZEROMINI_DEPS_DIR}/${_zm_tarball})
      if(NOT EXISTS ${_zm_source})
        message(FATAL_ERROR
                "zeromini: ${name} is not installed and ZEROMINI_DEPS_DIR has no ${_zm_tarball} "
                "(looked for ${_zm_source}). Put the release tarball there (sha256 ${_zm_sha256}), "
                "load a module that provides ${_zm_package}, or add its prefix to "
                "CMAKE_PREFIX_PATH.")
      endif()
      set(_zm_fetch URL ${_zm_source} URL_HASH SHA256=${_zm_sha256} DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
    else()
      set(_zm_source "${_zm_repository} at ${_zm_commit}")
      set(_zm_fetch GIT_REPOSITORY ${_zm_repository} GIT_TAG ${_zm_commit})
    endif()
    foreach(_zm_option IN LISTS _zm_dep_options_${name})
      string(REPLACE "=" ";" _zm_option "${_zm_option}")
      list(GET _zm_option 0 _zm_key)
      list(GET _zm_option 1 _zm_value)
      set(${_zm_key} ${_zm_value} CACHE INTERNAL "set by zeromini for the fetched ${name}")
    endforeach()
    FetchContent_Declare(zm_${name} ${_zm_fetch})
    FetchContent_MakeAvailable(zm_${name})
    if(NOT TARGET ${target})
      message(FATAL_ERROR "zeromini: ${name} built from ${_zm_source} provides no ${target}")
    endif()
    # Host code: where the C++ compiler is Kokkos' nvcc_wrapper, the host compiler alone.
    if(CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper")
      foreach(_zm_library IN LISTS _zm_libraries)
        target_compile_options(${_zm_library} PRIVATE --host-only)
      endforeach()
    endif()
    message(STATUS "zeromini: ${name}: built from source, ${_zm_source}")
  endif()
endmacro()
