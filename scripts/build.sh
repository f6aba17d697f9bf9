#!/usr/bin/env bash
# Configures and builds zeromini (Release) into build/ — used by quickstart.sh and test.sh.
#   BUILD_DIR=... BUILD_TYPE=... BUILD_TARGETS="a b" scripts/build.sh [extra cmake arguments]
# BUILD_TARGETS: only these targets (quickstart.sh: the app alone); default everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@" >"$build.configure.log" 2>&1 || {
  cat "$build.configure.log" >&2
  exit 1
}
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
