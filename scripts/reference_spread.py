#!/usr/bin/env python3
"""How far a deck's losses move between correct builds and runs: the measurement that argues the
tolerance of the references in inputs/references/ (README there).

    /usr/bin/python3 scripts/reference_spread.py DECK --global-batch G --work DIR \
        --build NAME=ZEROMINI[:THREADS,...] ... [--ranks 1,2,4] [--set KEY=VALUE ...] \
        [--variant NAME=KEY=VALUE[,KEY=VALUE...] ...] [--error NAME=KEY=VALUE ...] [--steps 1,3,5]

Runs DECK with zero.stage = "all" for every build (and every OpenMP thread count given for it)
at every rank count, each with train.micro_batch = G / ranks so that the global batch is G; then
each --variant (settings that change how a run is carried out, not what it computes) and each
--error (a deliberate error, to show what a real difference moves the losses by) at 2 ranks on
the first build (a variant may set zero.stage to one stage: it is compared with that stage). Prints a Markdown table: for each run, the largest relative difference of its
losses from the first run's, over every step and stage, and over the --steps a reference keeps.
Needs h5py (Debian's /usr/bin/python3).
"""

import argparse
import os
import shlex
import subprocess
import sys

import h5py
import numpy as np


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("deck")
    p.add_argument("--global-batch", type=int, required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--build", action="append", required=True,
                   help="NAME=ZEROMINI or NAME=ZEROMINI:1,2 (OpenMP threads per rank)")
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--set", action="append", default=[], dest="overrides")
    p.add_argument("--variant", action="append", default=[])
    p.add_argument("--error", action="append", default=[])
    p.add_argument("--steps", default="", help="the steps a reference keeps (1-based)")
    p.add_argument("--mpiexec", default="mpiexec")
    return p.parse_args()


def losses(out):
    """{stage: loss per step} of one run."""
    with h5py.File(os.path.join(out, "results.h5"), "r") as f:
        return {int(k.split("_")[1]): np.array(f[k]["loss"][:], dtype=np.float64)
                for k in f.keys() if k.startswith("stage_")}


def run(args, name, zeromini, threads, ranks, sets):
    out = os.path.join(args.work, name)
    command = [args.mpiexec, "-n", str(ranks), zeromini, "run", args.deck, "--out", out]
    for s in args.overrides + ["zero.stage=all", "output.overwrite=true"] + sets:
        command += ["--set", s]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1",
               OMP_PROC_BIND="false", OMP_WAIT_POLICY="passive")
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"reference_spread: {shlex.join(command)} exited {done.returncode}:\n"
                 f"{done.stdout[-2000:]}")
    print(f"ran {name}", file=sys.stderr)
    return losses(out)


def spread(base, other, steps):
    """The largest relative difference over the stages `other` trained and every step, and over
    `steps` alone."""
    every, kept = 0.0, 0.0
    for stage, loss in other.items():
        rel = np.abs(loss - base[stage]) / np.abs(base[stage])
        every = max(every, float(rel.max()))
        if steps:
            kept = max(kept, float(rel[[s - 1 for s in steps]].max()))
    return every, kept


def main():
    args = parse_args()
    os.makedirs(args.work, exist_ok=True)
    steps = [int(s) for s in args.steps.split(",") if s]
    builds = []
    for spec in args.build:
        name, _, rest = spec.partition("=")
        path, _, threads = rest.partition(":")
        builds.append((name, path, [int(t) for t in threads.split(",")] if threads else [1]))
    runs = []  # (label, losses)
    for name, path, thread_counts in builds:
        for threads in thread_counts:
            for ranks in (int(r) for r in args.ranks.split(",")):
                if args.global_batch % ranks:
                    continue
                label = f"{name}, {threads} thread{'s' if threads > 1 else ''}, {ranks} rank" + \
                    ("s" if ranks > 1 else "")
                micro = f"train.micro_batch={args.global_batch // ranks}"
                runs.append((label, run(args, f"{name}-t{threads}-n{ranks}", path, threads,
                                        ranks, [micro])))
    first_name, first_path, first_threads = builds[0]
    extra = [(v, "variant") for v in args.variant] + [(e, "error") for e in args.error]
    for spec, kind in extra:
        name, _, sets = spec.partition("=")
        sets = sets.split(",")
        ranks = 2
        dp = ranks // 2 if any(s.startswith("parallel.tp=2") for s in sets) else ranks
        micro = f"train.micro_batch={args.global_batch // dp}"
        label = f"{kind}: {name} ({', '.join(sets)}), {first_name}, {ranks} ranks"
        runs.append((label, run(args, f"{kind}-{name}", first_path, first_threads[0], ranks,
                                [micro] + sets)))
    base_label, base = runs[0]
    print(f"Relative difference of the losses from `{base_label}` (zero.stage = \"all\": the "
          f"largest over stages 0-3), global batch {args.global_batch}:\n")
    print(f"| run | every step | steps {args.steps or '-'} |")
    print("|---|---|---|")
    for label, other in runs[1:]:
        every, kept = spread(base, other, steps)
        print(f"| {label} | {every:.2e} | {kept:.2e} |")
    stage_every, stage_kept = 0.0, 0.0
    for stage in base:
        every, kept = spread({0: base[0]}, {0: base[stage]}, steps)
        stage_every, stage_kept = max(stage_every, every), max(stage_kept, kept)
    print(f"| stages 1-3 against stage 0 in `{base_label}` | {stage_every:.2e} | "
          f"{stage_kept:.2e} |")


if __name__ == "__main__":
    main()
