"""The markdown tables of scripts/bench-step-vs.sh: the training step of two builds, from the
runs in WORK (SIDE-THREADS-R/, SIDE old or new, R the round), and the new build's kernels
(kernels-THREADS.json of zeromini-bench).

    python3 -m zeromini_tools.bench_step_vs WORK ROUNDS COMMAND OLD_REV NEW_REV DECK
"""

import json
import os
import statistics
import sys

from zeromini_tools.alternation import joined, per_round, ratio_of_medians, table_head, table_row

THREADS = (1, 2)


def step_ms(work, side, threads, r):
    """The mean step time (ms) of one run."""
    path = os.path.join(work, f"{side}-{threads}-{r}", "summary.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)["stages"][0]["time_seconds"]["step"] * 1e3


def main(argv):
    work, rounds, command, old_rev, new_rev, deck = argv[0], int(argv[1]), *argv[2:6]
    print(f"# Training step: zeromini {new_rev} against {old_rev}, built side by side")
    print()
    print(f"- command: `{command}`")
    print(f"- {deck}, one rank, mean step time over the steps after the first; {rounds} "
          "alternating rounds (old then new, at 1 then 2 threads); the table gives the medians")
    print()
    print("\n".join(table_head([("OpenMP threads", "r"), ("old step ms", "r"),
                                ("new step ms", "r"), ("new / old", "r"), ("per round", "l")])))
    for threads in THREADS:
        old = [step_ms(work, "old", threads, r) for r in range(1, rounds + 1)]
        new = [step_ms(work, "new", threads, r) for r in range(1, rounds + 1)]
        print(table_row([threads, f"{statistics.median(old):.1f}",
                         f"{statistics.median(new):.1f}",
                         f"**{ratio_of_medians(new, old):.3f}**",
                         joined(per_round(new, old), "{:.3f}")]))
    print()
    print("Goal: new / old <= 1.02 at 1 and 2 threads.")
    print()
    print("## Kernels of the new build (zeromini-bench --benchmark_filter='^Kernel_')")
    print()
    print("GB/s counts each operand read or written once; `of copy` is that over the GB/s of a "
          "copy kernel measured in the same run (4 MiB, the operands' size).")
    print()
    tables = {}
    for threads in THREADS:
        with open(os.path.join(work, f"kernels-{threads}.json"), encoding="utf-8") as f:
            runs = json.load(f)["benchmarks"]
        tables[threads] = {run["name"].split("/")[0]: run for run in runs}
    print("\n".join(table_head([("kernel", "l")] + [
        (column, "r") for t in THREADS
        for column in (f"{t} thr: us", "GB/s", "of copy", "GFLOP/s")])))
    for name in tables[1]:
        cells = []
        for threads in THREADS:
            run = tables[threads][name]
            gflops = run.get("GFLOPs")
            cells += [f"{run['real_time']:.1f}", f"{run['bytes_per_second'] / 1e9:.1f}",
                      f"{run['of_copy']:.2f}", f"{gflops:.1f}" if gflops else ""]
        print(table_row([name.removeprefix("Kernel_")] + cells))
    print()
    print("copy GB/s measured in the run: " + ", ".join(
        f"{tables[t]['Kernel_copy']['copy_GBps']:.1f} at {t} thread(s)" for t in THREADS))


if __name__ == "__main__":
    main(sys.argv[1:])
