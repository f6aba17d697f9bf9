#!/usr/bin/env bash
# Quickstart: install dependencies, build the app, and train the quickstart model on 2 ranks.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
cd "$root"
scripts/setup-deps.sh
# The app alone: the tests, benchmarks and the fuzzer's sanitized library copy are test.sh's.
# The configuration is the same as test.sh's, so a later test.sh reuses these objects.
BUILD_TARGETS=zeromini scripts/build.sh
# One BLAS thread per rank: every core runs a rank.
export OPENBLAS_NUM_THREADS=1
mpiexec -n 2 build/bin/zeromini run inputs/quickstart.toml "$@"
