#!/usr/bin/env bash
# Configures and builds zeromini (Release) into build/ — used by quickstart.sh and test.sh.
#   BUILD_DIR=... BUILD_TYPE=... BUILD_TARGETS="a b" scripts/build.sh [extra cmake arguments]
# BUILD_TARGETS: only these targets (quickstart.sh: the app alone); default everything.
# Uses ccache when it is installed (ZEROMINI_CCACHE=0 turns it off).
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
# A compiler cache where the machine has one (ZEROMINI_CCACHE=0: none): a second build of the same
# sources, in this clone or any other (paths are taken relative to the clone), compiles nothing.
launcher=()
if [[ ${ZEROMINI_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
fi
# ZEROMINI_PHASE_LOG=FILE: append "configure SECONDS" and "compile SECONDS" (scripts/test.sh's table).
phase() {  # phase NAME COMMAND...
  local name=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  [[ -z ${ZEROMINI_PHASE_LOG:-} ]] || echo "$name $((SECONDS - start))" >>"$ZEROMINI_PHASE_LOG"
  return $status
}
configure() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "${launcher[@]}" "$@" \
    >"$build.configure.log" 2>&1 || {
    cat "$build.configure.log" >&2
    return 1
  }
}
phase configure configure "$@"
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
phase compile cmake --build "$build" -j "$jobs" "${targets[@]}"
