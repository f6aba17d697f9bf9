"""Run-to-run determinism of real runs, with whatever threads per rank the suite runs (2 in the
Kokkos OpenMP configuration): two runs of the same deck, build and thread count agree bit for
bit, and stages 1-3 agree bit for bit with each other.

    python3 test_run_twice.py ZEROMINI MPIEXEC DECK WORKDIR

- fp32, zero.stage = "all" (stages 0-3 in one run), twice: every stage's losses and gradient
  norms are bitwise those of the other run, and stages 2 and 3 bitwise those of stage 1.
- bf16 (where the build has it), stage 3 with a final checkpoint, twice: losses and the final
  parameters (the fp32 masters) bitwise equal.
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np


def run(zeromini, mpiexec, deck, out, *settings):
    command = [mpiexec, "-n", "2", zeromini, "run", deck, "--out", out, "--set", "train.steps=6",
               "--set", "output.log_every=6"]
    for setting in settings:
        command += ["--set", setting]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAIL: {' '.join(command)} exited {result.returncode}")
    threads = [line for line in result.stdout.splitlines() if line.startswith("threads:")]
    print(f"{out}: {threads[0] if threads else 'no threads line'}")
    return out


def bits(array):
    array = np.ascontiguousarray(array)
    return array.view(np.uint64 if array.dtype == np.float64 else np.uint32)


def stage_series(out, stage):
    with h5py.File(os.path.join(out, "results.h5"), "r") as f:
        group = f[f"stage_{stage}"]
        return {name: np.array(group[name]) for name in ("loss", "grad_norm")}


def same_bits(a, b):
    return a.shape == b.shape and np.array_equal(bits(a), bits(b))


def expect_same(label, a, b, failures):
    for name in a:
        if not same_bits(a[name], b[name]):
            failures.append(f"{label}: {name} differs: {a[name]} vs {b[name]}")


def final_params(out):
    checkpoints = os.path.join(out, "checkpoints")
    with open(os.path.join(checkpoints, "latest")) as f:
        path = os.path.join(checkpoints, f.read().strip())
    with h5py.File(path, "r") as f:
        return {name: np.array(f["params"][name]) for name in sorted(f["params"].keys())}


def main(zeromini, mpiexec, deck, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    first = run(zeromini, mpiexec, deck, os.path.join(work, "fp32-a"), "zero.stage=all")
    second = run(zeromini, mpiexec, deck, os.path.join(work, "fp32-b"), "zero.stage=all")
    for stage in range(4):
        expect_same(f"fp32 stage {stage}, run 1 vs run 2", stage_series(first, stage),
                    stage_series(second, stage), failures)
    for stage in (2, 3):
        expect_same(f"fp32 stage {stage} vs stage 1", stage_series(first, stage),
                    stage_series(first, 1), failures)
    losses = stage_series(first, 1)["loss"]
    if not losses[-1] < losses[0]:
        failures.append(f"the loss did not fall: {losses}")

    version = subprocess.run([zeromini, "--version"], stdout=subprocess.PIPE, text=True).stdout
    if "bf16        available" in version:
        settings = ("zero.stage=3", "train.precision=bf16", "output.checkpoint_every=6")
        first = run(zeromini, mpiexec, deck, os.path.join(work, "bf16-a"), *settings)
        second = run(zeromini, mpiexec, deck, os.path.join(work, "bf16-b"), *settings)
        expect_same("bf16 stage 3, run 1 vs run 2", stage_series(first, 3),
                    stage_series(second, 3), failures)
        expect_same("bf16 final parameters", final_params(first), final_params(second), failures)
    else:
        print("bf16: not in this build (Kokkos < 4); the Kokkos >= 4 configuration runs it")

    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print("ok: two runs agree bitwise; stages 1-3 agree bitwise")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
