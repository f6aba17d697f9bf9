#!/usr/bin/env python3
"""The run's estimate against what the run took, for a deck whose evaluations cost more than its
steps: within a factor of 2 (the estimate includes the evaluations; without them it would be
several times short).

    estimate_vs_measured.py MPIEXEC ZEROMINI DECK OUT_DIR RANKS [--set KEY=VALUE ...]

Measured: each step's time (the slowest rank's) plus each evaluation's (the slowest rank's), from
results.h5, so that start-up and the output writes, which the estimate leaves out, do not count.
"""
import re
import subprocess
import sys

import h5py
import numpy as np

UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def main(argv):
    mpiexec, zeromini, deck, out, ranks, *sets = argv[1:]
    command = [mpiexec, "-n", ranks, zeromini, "run", deck, "--out", out, *sets]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    sys.stdout.write(run.stdout + run.stderr)
    if run.returncode != 0:
        raise SystemExit(f"estimate_vs_measured: the run failed ({run.returncode})")
    found = re.search(r"about ([0-9.e+-]+) (s|min|h|d) for the run's", run.stdout)
    if not found:
        raise SystemExit("estimate_vs_measured: no estimate line")
    estimate = float(found.group(1)) * UNITS[found.group(2)]
    with h5py.File(f"{out}/results.h5", "r") as f:
        stage = next(k for k in f if k.startswith("stage_"))
        times = f[stage]["step_times"]
        total = [c.decode() for c in times.attrs["columns"]].index("total")
        steps = float(np.sum(np.max(times[:, :, total], axis=1)))
        evaluations = float(np.sum(f[stage]["eval_seconds"][:]))
    measured = steps + evaluations
    ratio = estimate / measured
    print(f"estimate_vs_measured: estimate {estimate:.3g} s; measured {measured:.3g} s "
          f"({steps:.3g} s of steps, {evaluations:.3g} s of evaluations): ratio {ratio:.2f}")
    if not 0.5 <= ratio <= 2.0:
        raise SystemExit("estimate_vs_measured: the estimate is not within a factor of 2")


if __name__ == "__main__":
    main(sys.argv)
