#!/usr/bin/env python3
"""A resumed run keeps the rows of a results.h5 written without the module's step_times columns
(by a build without it, or by zeromini before exposure was measured: the core's five columns):
its rows come back with comm_exposed and comm_in_flight NaN, the resumed run's rows with values.

    resume_earlier_results.py ZEROMINI MPIEXEC DECK WORKDIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

CORE = ["forward", "backward", "comm_wait", "optimizer", "total"]


def run(zeromini, mpiexec, deck, out, *sets):
    command = [mpiexec, "-n", "2", zeromini, "run", deck, "--out", out, "--set", "zero.stage=1",
               "--set", "output.checkpoint_every=3"]
    for s in sets:
        command += ["--set", s]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        print(done.stdout)
        sys.exit(f"FAIL: {' '.join(command)} exited {done.returncode}")


def names(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def main(zeromini, mpiexec, deck, work):
    shutil.rmtree(work, ignore_errors=True)
    out = os.path.join(work, "run")
    run(zeromini, mpiexec, deck, out, "train.steps=6")
    path = os.path.join(out, "results.h5")
    # The file as a build without the module writes it: step_times of the core's columns.
    with h5py.File(path, "r+") as f:
        group = f["stage_1"]
        times = group["step_times"]
        columns = names(times.attrs["columns"])
        kept = np.array(times)[:, :, [columns.index(c) for c in CORE]]
        attrs = dict(times.attrs)
        del group["step_times"]
        group.create_dataset("step_times", data=kept)
        for key, value in attrs.items():
            group["step_times"].attrs[key] = value
        group["step_times"].attrs["columns"] = np.array([c.encode() for c in CORE], dtype="S9")
    run(zeromini, mpiexec, deck, out, "train.steps=9", "train.resume=latest")
    with h5py.File(path, "r") as f:
        group = f["stage_1"]
        times = np.array(group["step_times"])
        columns = names(group["step_times"].attrs["columns"])
        steps = list(group["step"][:])
    if steps != list(range(1, 10)):
        sys.exit(f"FAIL: steps {steps}")
    if columns != CORE + ["comm_exposed", "comm_in_flight"]:
        sys.exit(f"FAIL: step_times columns {columns}")
    if not np.allclose(times[:6, :, :5], kept):
        sys.exit("FAIL: the earlier rows' core columns changed")
    if not np.all(np.isnan(times[:6, :, 5:])):
        sys.exit("FAIL: the earlier rows have exposure figures they never measured")
    if not np.all(np.isfinite(times[6:, :, 5:])):
        sys.exit("FAIL: the resumed run's rows lack their exposure figures")
    print("ok: the earlier rows kept, the module's columns NaN in them")


if __name__ == "__main__":
    main(*sys.argv[1:])
