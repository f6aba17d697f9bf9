# Each file with the compiler it needs, in CUDA builds.
#
# With Kokkos' CUDA backend the C++ compiler is nvcc_wrapper, and every translation unit it
# compiles goes through nvcc: a device pass and a host pass, two to three times g++'s time. Only the
# files that include Kokkos (directly or through the project's headers) need that; Kokkos' CUDA
# headers refuse any other compiler. The rest, the deck, the machine files, HDF5 I/O, the command
# line and sweeps, many tests, are host code: nvcc_wrapper's --host-only hands them to the host
# compiler alone.
#
# Why this rather than Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE: that option makes CMake's CUDA
# language compile the files marked as CUDA, but every file that includes Kokkos must still be
# one of them, so the split is the same; it needs a Kokkos built with the option (site modules
# and Spack builds are mostly built without it) and CMake >= 3.18's CUDA language on every
# machine. Deciding per file from its includes keeps the usual nvcc_wrapper build of Kokkos and
# needs no list to maintain: a file that starts including Kokkos moves to nvcc by itself (the
# scanned files are configure dependencies).
#
#   zm_compile_host_only_where_possible(SOURCE...)   in the directory whose targets compile
#                                                    SOURCE (source properties are per
#                                                    directory); no-op unless nvcc_wrapper

# Directories that quoted includes are resolved against, after the including file's own.
set(ZEROMINI_INCLUDE_ROOTS ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests
    ${PROJECT_SOURCE_DIR}/miniapp ${PROJECT_SOURCE_DIR}/miniapp/bench)

# zm_needs_device_compiler(OUT FILE): OUT is ON when FILE includes, directly or through project
# headers, Kokkos, Kokkos Kernels or a CUDA, cuBLAS or NCCL header.
function(zm_needs_device_compiler out file)
  get_property(known GLOBAL PROPERTY ZM_DEVICE_SCAN_${file} SET)
  if(known)
    get_property(result GLOBAL PROPERTY ZM_DEVICE_SCAN_${file})
    set(${out} ${result} PARENT_SCOPE)
    return()
  endif()
  # Taken as host code while being scanned: an include cycle ends here.
  set_property(GLOBAL PROPERTY ZM_DEVICE_SCAN_${file} OFF)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  set(result OFF)
  get_filename_component(here ${file} DIRECTORY)
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*" "\\1" name "${line}")
    if(name MATCHES "^(Kokkos|cuda|cublas|nccl|nvtx)" OR name MATCHES "^impl/Kokkos")
      set(result ON)
      break()
    endif()
    foreach(root IN ITEMS ${here} ${ZEROMINI_INCLUDE_ROOTS})
      if(EXISTS ${root}/${name} AND NOT IS_DIRECTORY ${root}/${name})
        get_filename_component(header ${root}/${name} ABSOLUTE)
        zm_needs_device_compiler(header_needs ${header})
        if(header_needs)
          set(result ON)
        endif()
        break()
      endif()
    endforeach()
    if(result)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY ZM_DEVICE_SCAN_${file} ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(zm_compile_host_only_where_possible)
  if(NOT ZEROMINI_KOKKOS_CUDA OR NOT CMAKE_CXX_COMPILER MATCHES "nvcc_wrapper")
    return()
  endif()
  foreach(source IN LISTS ARGN)
    get_filename_component(source ${source} ABSOLUTE)
    if(NOT source MATCHES "\\.cpp$")
      continue()
    endif()
    zm_needs_device_compiler(device ${source})
    if(NOT device)
      set_property(SOURCE ${source} APPEND PROPERTY COMPILE_OPTIONS --host-only)
      set_property(GLOBAL APPEND PROPERTY ZEROMINI_HOST_ONLY_SOURCES ${source})
    else()
      set_property(GLOBAL APPEND PROPERTY ZEROMINI_DEVICE_SOURCES ${source})
    endif()
  endforeach()
endfunction()

# Says how the project's files were divided, once, at the end of configuring.
function(zm_report_host_only)
  get_property(host GLOBAL PROPERTY ZEROMINI_HOST_ONLY_SOURCES)
  get_property(device GLOBAL PROPERTY ZEROMINI_DEVICE_SOURCES)
  list(LENGTH host host_count)
  list(LENGTH device device_count)
  if(host_count OR device_count)
    message(STATUS "zeromini: ${device_count} files compiled by nvcc, ${host_count} by the host "
                   "compiler alone (they include no Kokkos or CUDA header)")
  endif()
endfunction()
