#!/usr/bin/env bash
# Collective bandwidth of the Communicator beside the raw MPI call, as a markdown table.
#   scripts/bench-comm.sh [--backend=mpi|nccl] [RANKS] [OUT.md]   (default: mpi, 2 ranks, stdout)
# Runs zeromini-bench's Comm/* cases (1 KiB .. 256 MiB) under mpiexec and formats their JSON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
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
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
python3 - "$json" "$ranks" "$command" "$revision" "$backend" >"$out" <<'PY'
import json, sys, platform, datetime
data = json.load(open(sys.argv[1]))
ranks = sys.argv[2]
rows = {}
for b in data["benchmarks"]:
    # Medians of 5 repetitions: the shared-memory bandwidth of a VM varies by 10-20% run to run.
    if b.get("aggregate_name") != "median":
        continue
    _, op, size = b["name"].split("/")[:3]
    rows[(op, int(size))] = b
ctx = data["context"]
print(f"# Collective bandwidth at {ranks} ranks: Communicator ({sys.argv[5]}) vs raw MPI")
print()
print(f"- command: `{sys.argv[3]}` (zeromini {sys.argv[4]}; MPICH, shared memory)")
print(f"- date: {ctx.get('date', '')}; host: {ctx.get('host_name', platform.node())}, "
      f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz")
print("- algbw = S/t, busbw = algbw x 2(N-1)/N (all-reduce) or x (N-1)/N (reduce-scatter, "
      "all-gather), S the whole buffer; t the slowest rank's time of one call")
print("- raw MPI (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather) and the Communicator's "
      "blocking call alternate iteration by iteration on the same buffers; each figure is the "
      "median of 5 repetitions")
print("- ratio = Communicator busbw / raw MPI busbw, measured together in each repetition")
labels = sorted({b.get("label", "") for b in rows.values()} - {""})
if labels:
    print(f"- paths: {'; '.join(labels)}")
print()
print("| op | size | raw algbw GB/s | raw busbw GB/s | Communicator algbw GB/s | Communicator busbw GB/s | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
def human(n):
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TiB"
for (op, size), b in sorted(rows.items()):
    print(f"| {op} | {human(size)} | {b['raw_algbw_GBps']:.3f} | {b['raw_busbw_GBps']:.3f} | "
          f"{b['algbw_GBps']:.3f} | {b['busbw_GBps']:.3f} | {b['ratio']:.3f} |")
PY
