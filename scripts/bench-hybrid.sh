#!/usr/bin/env bash
# Hybrid MPI + OpenMP against MPI alone on one node: tokens/s of 1 rank x T threads beside
# T ranks x 1 thread (T = the cores of this machine), at the same global batch, for the
# quickstart deck and a larger one, in alternating rounds within one invocation. Prints a
# markdown table with the medians, the ratio hybrid / MPI-only and the ratio of every round.
#
#   scripts/bench-hybrid.sh [OUT.md]
#   ZEROMINI_BIN=build-openmp/bin/zeromini THREADS=2 ROUNDS=5 scripts/bench-hybrid.sh
#
# Needs a build whose Kokkos has the OpenMP backend (scripts/test.sh builds one in
# build-openmp/). The threads are not bound and the ranks not pinned, as with a plain mpiexec on
# a workstation; on a cluster use the binding of the recipe in scripts/README.md (Threads and cores) for both.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
out=${1:-/dev/stdout}
bin=${ZEROMINI_BIN:-$root/build-openmp/bin/zeromini}
threads=${THREADS:-$(nproc)}
rounds=${ROUNDS:-5}

require_executable "$bin"
"$bin" --version | grep -q "OpenMP" ||
  { echo "bench-hybrid: $bin has no Kokkos OpenMP backend: one rank cannot run threads" >&2; exit 2; }

# deck, steps, the deck's micro-batch per rank (the MPI-only runs keep it; the hybrid run takes
# T times as many sequences on its one rank)
decks=(
  "inputs/quickstart.toml 150 4"
  "inputs/medium-l6d384.toml 8 4"
)
work=$(mktemp -d /tmp/zeromini-bench-hybrid.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_PROC_BIND=false

# Every round: each deck hybrid, then MPI-only; the runs and their logs are NAME-hybrid-R and
# NAME-mpi-R in $work; a failed run ends the script with its exit status.
runs=()
for entry in "${decks[@]}"; do
  read -r deck steps micro <<<"$entry"
  name=$(basename "$deck" .toml)
  runs+=(--label "$name-hybrid" -- env OMP_NUM_THREADS="$threads" mpiexec -n 1 "$bin" run \
    "$root/$deck" --set train.steps="$steps" --set train.micro_batch=$((micro * threads)) \
    --out '{run}')
  runs+=(--label "$name-mpi" -- env OMP_NUM_THREADS=1 mpiexec -n "$threads" "$bin" run \
    "$root/$deck" --set train.steps="$steps" --set train.micro_batch="$micro" --out '{run}')
done
tool alternation --rounds "$rounds" --dir "$work" "${runs[@]}"

tool bench_hybrid "$work" "$threads" "$rounds" "scripts/bench-hybrid.sh $*" "$(revision)" \
  "${decks[@]}" >"$out"
