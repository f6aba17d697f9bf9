# Modules: the optional features, each in one folder beside the core (src/modules/<name>/).
#
# A module's folder holds its sources (every .cpp and .hpp in it, headers included as
# "modules/<name>/file.hpp"), its micro-benchmarks (bench/*.cpp, compiled into zeromini-bench), a
# README.md, optionally a build.cmake (its own build steps, such as linking an external library,
# with ${target} its library) and a module.cmake that declares it:
#
#   zm_module(offload
#     DESCRIPTION "ZeRO-Offload: optimizer state (and stage 3's parameters) in host memory"
#     KEYS zero.offload_optimizer zero.offload_params   # the deck keys it owns
#     NAMES "ZeRO-Offload"                              # other names of it, which the core
#                                                       # never uses either
#     PROVIDES ""                                       # what the core asks for by a general
#                                                       # name, to name this module's option
#                                                       # where it is not built
#     REQUIRES "")                                      # modules it builds on
#
# Each module gets an option ZEROMINI_WITH_<NAME> and, when on, a static library
# zeromini_module_<name> over the whole core (zeromini_train), and its tests in
# tests/modules/<name>/. It defines `void zm::register_module_<name>()`, which registers what it
# adds with the interfaces the core defines. CMake writes modules_generated.cpp: register_modules()
# calls every enabled module's function and records the disabled ones with their keys and
# option, so that a deck asking for one is refused naming the option (core/modules.hpp). The core
# itself names no module.
#
# What a module adds to another module's interface lies in its folder with_<other>/ (e.g.
# src/modules/offload/with_<other>/*.cpp): compiled into the module, linked with <other> and
# registered by `void zm::register_module_<name>_with_<other>()` (after every module's own
# registration) only where <other> is built too, so that either module can be left out.
#
# Which modules a new build directory has by default: ZEROMINI_MODULES, "all" (the default),
# "none" (the core alone: the configuration CI runs `ctest -L core` in) or a list of names; a
# ZEROMINI_WITH_<NAME> given on the command line wins.
set(ZEROMINI_MODULES "all" CACHE STRING "Modules built by default: all, none, or a list of names")

# zm_module(NAME DESCRIPTION text KEYS key... NAMES name... PROVIDES what... REQUIRES module...)
# (NAMES is read by tests/tools/check_core_names.py, which fails where a core file names a module.)
macro(zm_module name)
  cmake_parse_arguments(ZM_MODULE "" "DESCRIPTION" "KEYS;NAMES;PROVIDES;REQUIRES" ${ARGN})
  string(TOUPPER ${name} _zm_upper)
  set(_zm_default OFF)
  if(ZEROMINI_MODULES STREQUAL "all" OR "${name}" IN_LIST ZEROMINI_MODULES)
    set(_zm_default ON)
  endif()
  option(ZEROMINI_WITH_${_zm_upper} "${ZM_MODULE_DESCRIPTION}" ${_zm_default})
  set_property(GLOBAL APPEND PROPERTY ZM_MODULES ${name})
  set_property(GLOBAL PROPERTY ZM_MODULE_DESCRIPTION_${name} "${ZM_MODULE_DESCRIPTION}")
  set_property(GLOBAL PROPERTY ZM_MODULE_KEYS_${name} "${ZM_MODULE_KEYS}")
  set_property(GLOBAL PROPERTY ZM_MODULE_PROVIDES_${name} "${ZM_MODULE_PROVIDES}")
  set_property(GLOBAL PROPERTY ZM_MODULE_REQUIRES_${name} "${ZM_MODULE_REQUIRES}")
  set_property(GLOBAL PROPERTY ZM_MODULE_DIR_${name} "${CMAKE_CURRENT_LIST_DIR}")
endmacro()

# Whether module NAME is part of this build.
function(zm_module_enabled out name)
  string(TOUPPER ${name} upper)
  set(${out} ${ZEROMINI_WITH_${upper}} PARENT_SCOPE)
endfunction()

# A C++ string literal of TEXT.
function(zm_cxx_string out text)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  set(${out} "\"${text}\"" PARENT_SCOPE)
endfunction()

# Reads every src/modules/*/module.cmake, builds the enabled modules and zeromini_modules (the
# generated registration and the enabled modules' libraries). ZEROMINI_ENABLED_MODULES lists them.
function(zm_add_modules modules_dir)
  file(GLOB declarations CONFIGURE_DEPENDS ${modules_dir}/*/module.cmake)
  foreach(declaration IN LISTS declarations)
    include(${declaration})
  endforeach()
  get_property(modules GLOBAL PROPERTY ZM_MODULES)
  set(enabled "")
  set(declare "")
  set(calls "")
  foreach(name IN LISTS modules)
    string(TOUPPER ${name} upper)
    get_property(description GLOBAL PROPERTY ZM_MODULE_DESCRIPTION_${name})
    get_property(keys GLOBAL PROPERTY ZM_MODULE_KEYS_${name})
    zm_cxx_string(name_literal "${name}")
    zm_cxx_string(option_literal "ZEROMINI_WITH_${upper}")
    zm_cxx_string(description_literal "${description}")
    get_property(provides GLOBAL PROPERTY ZM_MODULE_PROVIDES_${name})
    set(key_literals "")
    foreach(key IN LISTS keys)
      string(APPEND key_literals "\"${key}\", ")
    endforeach()
    set(provides_literals "")
    foreach(what IN LISTS provides)
      zm_cxx_string(what_literal "${what}")
      string(APPEND provides_literals "${what_literal}, ")
    endforeach()
    set(present false)
    if(ZEROMINI_WITH_${upper})
      set(present true)
      list(APPEND enabled ${name})
      string(APPEND declare "void register_module_${name}();\n")
    endif()
    string(APPEND calls "  add_module({${name_literal}, ${option_literal}, ${description_literal}, "
                        "{${key_literals}}, ${present}, {${provides_literals}}});\n")
    if(ZEROMINI_WITH_${upper})
      string(APPEND calls "  register_module_${name}();\n")
    endif()
  endforeach()
  # A module needs the modules it builds on.
  foreach(name IN LISTS enabled)
    get_property(requires GLOBAL PROPERTY ZM_MODULE_REQUIRES_${name})
    foreach(required IN LISTS requires)
      string(TOUPPER ${required} required_upper)
      if(NOT ZEROMINI_WITH_${required_upper})
        string(TOUPPER ${name} upper)
        message(FATAL_ERROR "zeromini: the module ${name} needs the module ${required}: configure "
                            "with -DZEROMINI_WITH_${required_upper}=ON, or turn ${name} off "
                            "(-DZEROMINI_WITH_${upper}=OFF)")
      endif()
    endforeach()
  endforeach()
  set(with_calls "")
  foreach(name IN LISTS enabled)
    get_property(dir GLOBAL PROPERTY ZM_MODULE_DIR_${name})
    file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cpp)
    # Its parts for other modules built (with_<other>/).
    set(with_modules "")
    foreach(other IN LISTS enabled)
      file(GLOB with_sources CONFIGURE_DEPENDS ${dir}/with_${other}/*.cpp)
      if(with_sources)
        list(APPEND sources ${with_sources})
        list(APPEND with_modules ${other})
        string(APPEND declare "void register_module_${name}_with_${other}();\n")
        string(APPEND with_calls "  register_module_${name}_with_${other}();\n")
      endif()
    endforeach()
    set(target zeromini_module_${name})
    add_library(${target} STATIC ${sources})
    set(include_root ${CMAKE_CURRENT_BINARY_DIR}/module_include/${name})
    file(MAKE_DIRECTORY ${include_root}/modules)
    file(CREATE_LINK ${dir} ${include_root}/modules/${name} SYMBOLIC)
    target_include_directories(${target} PUBLIC ${include_root})
    target_link_libraries(${target} PUBLIC zeromini_train PRIVATE zeromini_warnings)
    get_property(requires GLOBAL PROPERTY ZM_MODULE_REQUIRES_${name})
    foreach(required IN LISTS requires with_modules)
      target_link_libraries(${target} PUBLIC zeromini_module_${required})
    endforeach()
    zm_compile_host_only_where_possible(${sources})
    # The module's own build steps, if any (an external library it links): its build.cmake,
    # included here with ${target} its library.
    if(EXISTS ${dir}/build.cmake)
      include(${dir}/build.cmake)
    endif()
  endforeach()
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/generated/modules_generated.cpp)
  file(WRITE ${generated}.in
       "// Generated by CMake (cmake/ZeroMiniModules.cmake): the modules of this build.\n"
       "#include \"core/modules.hpp\"\n\nnamespace zm {\n\n${declare}\n"
       "void register_modules() {\n  static bool registered = false;\n"
       "  if (registered) return;\n  registered = true;\n${calls}${with_calls}}\n\n"
       "}  // namespace zm\n")
  configure_file(${generated}.in ${generated} COPYONLY)
  add_library(zeromini_modules STATIC ${generated})
  target_link_libraries(zeromini_modules PUBLIC zeromini_core PRIVATE zeromini_warnings)
  foreach(name IN LISTS enabled)
    target_link_libraries(zeromini_modules PUBLIC zeromini_module_${name})
  endforeach()
  zm_compile_host_only_where_possible(${generated})
  set(ZEROMINI_ENABLED_MODULES ${enabled} PARENT_SCOPE)
  set(bench_sources "")
  foreach(name IN LISTS enabled)
    get_property(dir GLOBAL PROPERTY ZM_MODULE_DIR_${name})
    file(GLOB module_bench CONFIGURE_DEPENDS ${dir}/bench/*.cpp)
    list(APPEND bench_sources ${module_bench})
  endforeach()
  set_property(GLOBAL PROPERTY ZEROMINI_MODULE_BENCH_SOURCES ${bench_sources})
  string(REPLACE ";" ", " enabled_text "${enabled}")
  message(STATUS "zeromini: modules: ${enabled_text}")
endfunction()
