# The no_gpu tests' setup, for this directory and a module's tests (tests/modules/<name>/): in a
# CUDA build with CUDA's stub driver, zm_no_gpu_test(NAME COMMAND...) adds the ctest entry
# no_gpu_NAME (label no_gpu) with the stub in place of libcuda.so.1, and ZM_NO_GPU_TESTS is TRUE;
# elsewhere ZM_NO_GPU_TESTS is FALSE and no function is defined. Sets ZM, INPUTS, CORPUS (the
# checkpoints host builds wrote) and OUT for the tests.
set(ZM_NO_GPU_TESTS FALSE)
if(NOT ZEROMINI_KOKKOS_CUDA)
  return()
endif()
find_package(CUDAToolkit REQUIRED)
set(_zm_stub ${CUDAToolkit_LIBRARY_DIR}/stubs/libcuda.so)
if(NOT EXISTS ${_zm_stub})
  message(WARNING "zeromini: no CUDA stub driver at ${_zm_stub}; the no_gpu tests are not defined")
  return()
endif()
set(_zm_stub_dir ${CMAKE_CURRENT_BINARY_DIR}/stub-driver)
file(MAKE_DIRECTORY ${_zm_stub_dir})
file(CREATE_LINK ${_zm_stub} ${_zm_stub_dir}/libcuda.so.1 SYMBOLIC)

set(ZM ${PROJECT_SOURCE_DIR}/tests/cli/expect.sh)
set(INPUTS ${PROJECT_SOURCE_DIR}/inputs)
set(CORPUS ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/checkpoint)
set(OUT ${CMAKE_CURRENT_BINARY_DIR}/out)
file(MAKE_DIRECTORY ${OUT})

function(zm_no_gpu_test name)
  add_test(NAME no_gpu_${name} COMMAND ${ARGN})
  set_tests_properties(no_gpu_${name} PROPERTIES LABELS "no_gpu" TIMEOUT 120
                       ENVIRONMENT "LD_LIBRARY_PATH=${_zm_stub_dir}:$ENV{LD_LIBRARY_PATH}")
endfunction()

set(ZM_NO_GPU_TESTS TRUE)
