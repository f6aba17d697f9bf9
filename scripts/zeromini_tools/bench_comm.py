"""The markdown table of scripts/bench-comm.sh: Communicator against raw MPI bandwidth, from
zeromini-bench's JSON of the Comm/* cases.

    python3 -m zeromini_tools.bench_comm BENCH.json RANKS COMMAND REVISION BACKEND
"""

import json
import platform
import sys

from zeromini_tools.alternation import table_head, table_row


def human(n):
    """A byte count in B, KiB, MiB, GiB or TiB."""
    for unit in ["B", "KiB", "MiB", "GiB"]:
        if n < 1024:
            return f"{n:g} {unit}"
        n /= 1024
    return f"{n:g} TiB"


def main(argv):
    bench_json, ranks, command, revision, backend = argv
    with open(bench_json, encoding="utf-8") as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        # Medians of 5 repetitions: the shared-memory bandwidth of a VM varies by 10-20% run to run.
        if b.get("aggregate_name") != "median":
            continue
        _, op, size = b["name"].split("/")[:3]
        rows[(op, int(size))] = b
    ctx = data["context"]
    print(f"# Collective bandwidth at {ranks} ranks: Communicator ({backend}) vs raw MPI")
    print()
    print(f"- command: `{command}` (zeromini {revision}; MPICH, shared memory)")
    print(f"- date: {ctx.get('date', '')}; host: {ctx.get('host_name', platform.node())}, "
          f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz")
    print("- algbw = S/t, busbw = algbw x 2(N-1)/N (all-reduce) or x (N-1)/N (reduce-scatter, "
          "all-gather), S the whole buffer; t the slowest rank's time of one call")
    print("- raw MPI (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather) and the "
          "Communicator's blocking call alternate iteration by iteration on the same buffers; "
          "each figure is the median of 5 repetitions")
    print("- ratio = Communicator busbw / raw MPI busbw, measured together in each repetition")
    labels = sorted({b.get("label", "") for b in rows.values()} - {""})
    if labels:
        print(f"- paths: {'; '.join(labels)}")
    print()
    print("\n".join(table_head(
        [("op", "l"), ("size", "r"), ("raw algbw GB/s", "r"), ("raw busbw GB/s", "r"),
         ("Communicator algbw GB/s", "r"), ("Communicator busbw GB/s", "r"), ("ratio", "r")])))
    for (op, size), b in sorted(rows.items()):
        print(table_row([op, human(size), f"{b['raw_algbw_GBps']:.3f}",
                         f"{b['raw_busbw_GBps']:.3f}", f"{b['algbw_GBps']:.3f}",
                         f"{b['busbw_GBps']:.3f}", f"{b['ratio']:.3f}"]))


if __name__ == "__main__":
    main(sys.argv[1:])
