"""The markdown table of scripts/bench-hybrid.sh: 1 rank x T threads against T ranks x 1 thread,
from the runs in WORK (NAME-hybrid-R/ and NAME-mpi-R/ with their logs, NAME the deck's file name
without .toml, R the round).

    python3 -m zeromini_tools.bench_hybrid WORK THREADS ROUNDS COMMAND REVISION \
        "DECK STEPS MICRO"...
"""

import json
import os
import platform
import statistics
import sys

from zeromini_tools.alternation import joined, per_round, ratio_of_medians, table_head, table_row


def per_node(run_dir):
    """Tokens/s of the run's ranks together, and its summary.json."""
    with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    stage = summary["stages"][0]
    return stage["tokens_per_second_per_rank"] * stage["ranks"], summary


def threads_line(log):
    """The run's report of its threads (the log's 'threads:' line)."""
    with open(log, encoding="utf-8") as f:
        return next((line.strip() for line in f if line.startswith("threads:")), "?")


def main(argv):
    work, threads, rounds, command, revision = argv[0], int(argv[1]), int(argv[2]), *argv[3:5]
    decks = [entry.split() for entry in argv[5:]]
    print(f"# Hybrid MPI + OpenMP on one node: 1 rank x {threads} threads against {threads} "
          "ranks x 1 thread")
    print()
    print(f"- command: `{command}` (zeromini {revision})")
    print(f"- host: {platform.node()}, {os.cpu_count()} CPUs; {rounds} alternating rounds of both "
          "configurations for both decks; the table gives the medians of tokens/s per node "
          "(tokens/s per rank x ranks, mean over the steps after the first)")
    print(f"- same global batch: the hybrid rank takes {threads} x the deck's micro-batch; "
          "threads unbound, ranks not pinned, OPENBLAS_NUM_THREADS=1")
    first = decks[0][0].split("/")[-1].replace(".toml", "")
    print(f"- hybrid run reports: `{threads_line(os.path.join(work, f'{first}-hybrid-1.log'))}`")
    print(f"- MPI-only run reports: `{threads_line(os.path.join(work, f'{first}-mpi-1.log'))}`")
    print()
    print("\n".join(table_head(
        [("deck", "l"), ("model", "l"), ("global batch", "r"), (f"1 x {threads} tok/s", "r"),
         (f"{threads} x 1 tok/s", "r"), ("ratio", "r"), ("per round", "l")])))
    for deck, _steps, micro in decks:
        name = deck.split("/")[-1].replace(".toml", "")
        hybrid, mpi = [], []
        for r in range(1, rounds + 1):
            h, summary = per_node(os.path.join(work, f"{name}-hybrid-{r}"))
            m, _ = per_node(os.path.join(work, f"{name}-mpi-{r}"))
            hybrid.append(h)
            mpi.append(m)
        model = summary["model"]
        shape = (f"{model['layers']} layers, dim {model['dim']}, vocab {model['vocab']}, "
                 f"seq {model['seq_len']}")
        print(table_row([deck, shape, f"{int(micro) * threads} x {model['seq_len']}",
                         f"{statistics.median(hybrid):,.0f}", f"{statistics.median(mpi):,.0f}",
                         f"**{ratio_of_medians(hybrid, mpi):.2f}**",
                         joined(per_round(hybrid, mpi), "{:.2f}")]))
    print()
    print("Goal: ratio >= 0.9 on both decks (one rank's threads use the cores as well as ranks "
          "do).")


if __name__ == "__main__":
    main(sys.argv[1:])
