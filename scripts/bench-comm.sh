#!/usr/bin/env bash
# Collective bandwidth of the Communicator beside the raw MPI call, as a markdown table.
#   scripts/bench-comm.sh [--backend=mpi|nccl] [RANKS] [OUT.md]   (default: mpi, 2 ranks, stdout)
# Runs zeromini-bench's Comm/* cases (1 KiB .. 256 MiB) under mpiexec and formats their JSON.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
command="scripts/bench-comm.sh $*"
backend=mpi
case "${1:-}" in
  --backend=*) backend=${1#--backend=}; shift ;;
esac
ranks=${1:-2}
out=${2:-/dev/stdout}
json=$(mktemp /tmp/zeromini-bench-comm.XXXXXX.json)
trap 'rm -f "$json"' EXIT
OPENBLAS_NUM_THREADS=1 mpiexec -n "$ranks" "$root/build/bin/zeromini-bench" --backend="$backend" \
  --benchmark_filter='^Comm/' --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"$json"
tool bench_comm "$json" "$ranks" "$command" "$(revision)" "$backend" >"$out"
