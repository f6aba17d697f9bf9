#!/usr/bin/env bash
# The whole training step of this build beside that of an earlier revision, built side by side
# against the same Kokkos, in alternating rounds within one invocation: one rank on the medium
# deck (6 layers, dim 384, GPT-2 vocabulary) at 1 and 2 OpenMP threads. Prints a markdown table
# of the median step times and the ratio new / old, then this build's per-kernel table from
# zeromini-bench (time, GB/s beside a copy's GB/s measured in the same run, GFLOP/s) at 1 and 2
# threads.
#
#   scripts/bench-step-vs.sh REV [OUT.md]
#   ZEROMINI_BIN=build-openmp/bin/zeromini ROUNDS=5 STEPS=6 scripts/bench-step-vs.sh 9a49c56
#
# REV is built (Release, without tests) in build-rev-<REV>/ from a git worktree, against the
# Kokkos that ZEROMINI_BIN's build was configured with.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
rev=${1:?usage: scripts/bench-step-vs.sh REV [OUT.md]}
out=${2:-/dev/stdout}
new_bin=${ZEROMINI_BIN:-$root/build-openmp/bin/zeromini}
rounds=${ROUNDS:-5}
steps=${STEPS:-6}
deck=inputs/medium-l6d384.toml

require_executable "$new_bin"
new_build=$(dirname "$(dirname "$new_bin")")
kokkos_root=$(sed -n 's/^Kokkos_ROOT:[A-Z]*=//p' "$new_build/CMakeCache.txt")
[ -n "$kokkos_root" ] || { echo "bench-step-vs: $new_build was not configured with Kokkos_ROOT" >&2; exit 2; }
short=$(git -C "$root" rev-parse --short "$rev")
old_build=$root/build-rev-$short
old_bin=$old_build/bin/zeromini
if [ ! -x "$old_bin" ]; then
  # An interrupted earlier run may have left the worktree; it is reused.
  [ -e "$old_build/source/.git" ] ||
    git -C "$root" worktree add --detach -f "$old_build/source" "$short" >/dev/null
  BUILD_DIR=$old_build/build "$old_build/source/scripts/build.sh" -DKokkos_ROOT="$kokkos_root" \
    -DKokkosKernels_ROOT="$kokkos_root" -DZEROMINI_BUILD_TESTS=OFF >/dev/null
  mkdir -p "$old_build/bin"
  cp "$old_build/build/bin/zeromini" "$old_bin"
fi

work=$(mktemp -d /tmp/zeromini-bench-step.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_PROC_BIND=false
# Every round: at 1 then 2 threads, old then new; the runs and their logs are SIDE-THREADS-R in
# $work; a failed run ends the script with its exit status.
runs=()
for threads in 1 2; do
  for side in old new; do
    bin=$old_bin
    [ "$side" = new ] && bin=$new_bin
    runs+=(--label "$side-$threads" -- env OMP_NUM_THREADS="$threads" mpiexec -n 1 "$bin" run \
      "$root/$deck" --set train.steps="$steps" --out '{run}')
  done
done
tool alternation --rounds "$rounds" --dir "$work" "${runs[@]}"
bench_bin=$(dirname "$new_bin")/zeromini-bench
for threads in 1 2; do
  OMP_NUM_THREADS=$threads "$bench_bin" --benchmark_filter='^Kernel_' --benchmark_format=json \
    >"$work/kernels-$threads.json" 2>"$work/kernels-$threads.log"
done

settings="ZEROMINI_BIN=${ZEROMINI_BIN:-build-openmp/bin/zeromini} ROUNDS=$rounds STEPS=$steps"
tool bench_step_vs "$work" "$rounds" "$settings scripts/bench-step-vs.sh $*" "$short" \
  "$(revision)" "$deck" >"$out"
