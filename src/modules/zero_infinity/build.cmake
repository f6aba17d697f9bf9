# io_uring through Debian's liburing (liburing-dev) where it is installed; without it the module
# builds with its thread pool of pread/pwrite only, and a run says so.
find_path(ZEROMINI_LIBURING_INCLUDE_DIR liburing.h)
find_library(ZEROMINI_LIBURING_LIBRARY uring)
if(ZEROMINI_LIBURING_INCLUDE_DIR AND ZEROMINI_LIBURING_LIBRARY)
  target_include_directories(${target} PRIVATE ${ZEROMINI_LIBURING_INCLUDE_DIR})
  target_link_libraries(${target} PRIVATE ${ZEROMINI_LIBURING_LIBRARY})
  target_compile_definitions(${target} PRIVATE ZEROMINI_HAVE_LIBURING=1)
  message(STATUS "zeromini: zero_infinity: io_uring (${ZEROMINI_LIBURING_LIBRARY})")
else()
  message(STATUS "zeromini: zero_infinity: no liburing (Debian: liburing-dev); pread/pwrite threads only")
endif()
