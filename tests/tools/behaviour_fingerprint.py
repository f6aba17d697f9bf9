#!/usr/bin/python3
"""Fingerprints of what a build computes, to prove a refactoring changed no number.

Runs short training runs (stages 0-3 on 1-4 ranks, hybrid sharding, hpZ, qgZ in its variants,
qwZ, tensor parallelism) and `zeromini plan` commands, and prints one line per run and dataset:
the sha256 of every non-timing dataset of results.h5 (losses, gradient norms, learning rates,
bytes and calls per collective level, memory) and of every plan's output. Two builds computed the
same numbers when their outputs are equal:

    tests/tools/behaviour_fingerprint.py build/bin > before.txt   # on the old commit
    tests/tools/behaviour_fingerprint.py build/bin > after.txt    # on the new one
    diff before.txt after.txt

--bf16 adds the runs in bf16 (a build with bf16: the openmp configuration); --only bf16 runs
only those. The first line names the BLAS kernels the build ran on (OpenBLAS picks them by CPU,
and another set of kernels sums in another order).

Numbers change only on purpose: tests/data/fingerprint.txt (the fp32 runs and the plans) and
tests/data/fingerprint-bf16.txt (the bf16 runs) are this project's fingerprints, and the ctests
`behaviour_fingerprint` / `behaviour_fingerprint_bf16` check a build against them:

    tests/tools/behaviour_fingerprint.py build/bin --expect tests/data/fingerprint.txt

exits 1 listing every line that differs, and 77 (skipped) on a machine whose BLAS kernels are
not the ones the file was made with, unless the file has a sibling made on this machine's
kernels (fingerprint.haswell.txt beside fingerprint.txt: the stem, the kernels' name in lower
case). A commit that moves a number on purpose remakes the files (`... build/bin >
tests/data/fingerprint.txt`, on each machine) and says why in its message.
"""
import argparse
import ctypes
import difflib
import hashlib
import io
import re
import os
import subprocess
import sys
import tempfile

import h5py

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(REPO, "inputs", "quickstart.toml")

# name, ranks, --set overrides (on inputs/quickstart.toml, 6 steps)
RUNS = [(f"stages-np{n}", n, ["zero.stage=all"]) for n in (1, 2, 3, 4)] + [
    ("stages-accum2-np2", 2, ["zero.stage=all", "train.grad_accum=2"]),
    ("stages-no-overlap-np2", 2, ["zero.stage=all", "zero.overlap=false"]),
    ("hybrid-s2-np4", 4, ["zero.stage=all", "zero.shard_size=2"]),
    ("hpz-np4", 4, ["zero.stage=3", "zero.secondary_shard_size=2"]),
    ("hpz-accum2-np4", 4, ["zero.stage=3", "zero.secondary_shard_size=2", "train.grad_accum=2"]),
] + [(f"qgz-int8-s{stage}-np2", 2, [f"zero.stage={stage}", "zero.quantize_grads=int8",
                                    "zero.quantize_block=64"]) for stage in (1, 2, 3)] + [
    ("qgz-int4-np2", 2, ["zero.stage=3", "zero.quantize_grads=int4", "zero.quantize_block=64"]),
    ("qgz-ef-np2", 2, ["zero.stage=2", "zero.quantize_grads=int8", "zero.error_feedback=true",
                       "zero.quantize_block=64"]),
] + [(f"qgz-hybrid-s{stage}-np4", 4, [f"zero.stage={stage}", "zero.quantize_grads=int8",
                                      "zero.shard_size=2", "zero.quantize_block=64"])
       for stage in (1, 2, 3)] + [
    ("qgz-hpz-np4", 4, ["zero.stage=3", "zero.quantize_grads=int4", "zero.secondary_shard_size=2",
                        "zero.quantize_block=64"]),
    ("qgz-two-hops-np4", 4, ["zero.stage=3", "zero.quantize_grads=int8", "zero.ranks_per_node=2",
                             "zero.quantize_block=64"]),
    ("qwz-np2", 2, ["zero.stage=3", "zero.quantize_weights=int8", "zero.quantize_block=64"]),
    ("qwz-hpz-np4", 4, ["zero.stage=3", "zero.quantize_weights=int8", "zero.secondary_shard_size=2",
                        "zero.quantize_block=64"]),
    ("tp2-np2", 2, ["zero.stage=all", "parallel.tp=2"]),
    ("tp2-np4", 4, ["zero.stage=all", "parallel.tp=2"]),
    ("tp2-hybrid-np4", 4, ["zero.stage=3", "parallel.tp=2", "zero.quantize_grads=int8",
                           "zero.quantize_block=64"]),
]
BF16_RUNS = [(name + "-bf16", ranks, sets + ["train.precision=bf16"]) for name, ranks, sets in RUNS
             if not name.startswith("stages-np1")] + [
    ("bf16-fp32-reduce-np2", 2, ["zero.stage=all", "train.precision=bf16",
                                 "train.reduce_precision=fp32", "train.grad_accum=2"]),
]

MACHINES = os.path.join(REPO, "inputs", "machines")
SCALE_MACHINE = os.path.join(REPO, "results", "zeropp", "planner-scale", "machines",
                             "dgx2-v100-100g.toml")
PLANS = [
    ["inputs/quickstart.toml", "--ranks", "4", "--stage", "all", "--format", "csv"],
    ["inputs/tiny-test.toml", "--ranks", "4", "--stage", "all", "--format", "csv"],
    ["inputs/gpt2-124m.toml", "--ranks", "1"],
    ["inputs/gpt2-124m.toml", "--ranks", "1", "--set", "model.recompute=blocks"],
    ["inputs/gpt2-124m.toml", "--ranks", "2", "--precision", "mixed", "--format", "csv"],
    ["inputs/gpt2-124m.toml", "--ranks", "16", "--stage", "3", "--machine",
     f"{MACHINES}/dgx-h100.toml"],
    ["inputs/gpt2-1558m.toml", "--ranks", "1,8,64", "--stage", "all", "--machine",
     f"{MACHINES}/dgx-h100.toml"],
    ["inputs/gpt2-1558m.toml", "--set", "train.precision=bf16", "--machine",
     f"{MACHINES}/dgx-h100.toml", "--largest"],
    ["inputs/long-context.toml", "--ranks", "2", "--stage", "1", "--format", "csv"],
    ["inputs/paper/zero-table1-7.5b.toml", "--ranks", "1,4,16,64,256,1024", "--stage", "all"],
    ["inputs/paper/zero-table2-d4096.toml", "--machine", f"{MACHINES}/dgx2-v100-32gb.toml",
     "--largest", "--ranks", "1024", "--tp", "16"],
    ["inputs/gpt2-350m.toml", "--ranks", "8,64", "--stage", "all", "--tp", "2", "--machine",
     f"{MACHINES}/perlmutter-gpu.toml"],
    ["inputs/gpt2-350m.toml", "--ranks", "64", "--stage", "all", "--machine",
     f"{MACHINES}/frontier.toml", "--set", "zero.shard_size=node"],
] + [
    ["inputs/zeropp-scale.toml", "--ranks", "64,128,256,384,512,1024", "--stage", "3",
     "--machine", SCALE_MACHINE, "--format", "csv", "--set", f"train.micro_batch={mb}"] + extra
    for mb in (1, 2)
    for extra in ([], ["--set", "zero.quantize_grads=int4"],
                  ["--set", "zero.quantize_weights=int8"],
                  ["--set", "zero.secondary_shard_size=node"],
                  ["--set", "zero.quantize_weights=int8", "--set", "zero.secondary_shard_size=node",
                   "--set", "zero.quantize_grads=int4"])
] + [
    ["inputs/zeropp.toml", "--ranks", "4", "--stage", "3", "--format", "csv",
     "--set", "zero.quantize_grads=int8", "--set", "zero.ranks_per_node=2"],
    ["inputs/gpt2-124m.toml", "--ranks", "16", "--stage", "all", "--format", "csv",
     "--set", "train.precision=bf16", "--set", "zero.secondary_shard_size=8",
     "--set", "zero.quantize_weights=int8"],
]


def timing(name):
    return "seconds" in name or name in ("comm_busbw", "step_times")


def run_fingerprint(bindir, name, ranks, sets, out):
    outdir = os.path.join(out, name)
    cmd = ["mpiexec", "-n", str(ranks), os.path.join(bindir, "zeromini"), "run", QUICKSTART,
           "--out", outdir, "--set", "train.steps=6", "--set", "output.log_every=100"]
    for s in sets:
        cmd += ["--set", s]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        print(f"{name} exit {proc.returncode}")
        sys.stderr.write(proc.stdout[-2000:])
        return
    with h5py.File(os.path.join(outdir, "results.h5"), "r") as f:
        lines = []

        def visit(path, obj):
            if isinstance(obj, h5py.Dataset) and not path.startswith("manifest") and \
                    not timing(path.split("/")[-1]):
                lines.append(f"{name} {path} {hashlib.sha256(obj[()].tobytes()).hexdigest()[:16]}")
        f.visititems(visit)
    print("\n".join(sorted(lines)), flush=True)


def plan_fingerprint(bindir, args):
    proc = subprocess.run([os.path.join(bindir, "zeromini"), "plan"] + args, cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    digest = hashlib.sha256(proc.stdout).hexdigest()[:16]
    print(f"plan[{' '.join(args).replace(REPO + '/', '')}] exit {proc.returncode} {digest}",
          flush=True)


def blas_core(zeromini):
    """The name of the kernels OpenBLAS runs on this CPU (openblas_get_corename of the BLAS the
    binary loads), or "unknown" for another BLAS."""
    out = subprocess.run(["ldd", zeromini], capture_output=True, text=True).stdout
    for library in re.findall(r"=> (\S*blas\S*)", out):
        try:
            corename = getattr(ctypes.CDLL(library), "openblas_get_corename", None)
        except OSError:
            continue
        if corename:
            corename.restype = ctypes.c_char_p
            return corename().decode()
    return "unknown"


def fingerprint(args, bindir):
    print(f"# blas core: {blas_core(os.path.join(bindir, 'zeromini'))}", flush=True)
    if args.only != "plans":
        runs = (RUNS if args.only != "bf16" else []) + (BF16_RUNS if args.bf16 or
                                                        args.only == "bf16" else [])
        with tempfile.TemporaryDirectory(prefix="zm-fingerprint-") as out:
            for name, ranks, sets in runs:
                run_fingerprint(bindir, name, ranks, sets, out)
    if args.only not in ("runs", "bf16"):
        for plan in PLANS:
            plan_fingerprint(bindir, plan)


def check(expected_path, lines):
    """0 when `lines` equal the file's, 77 when the file was made on other BLAS kernels, else 1
    with the differing lines."""
    with open(expected_path, encoding="utf-8") as f:
        expected = f.read().splitlines()
    # The same fingerprint made on these kernels, where there is one: FILE's stem, the kernels'
    # name, .txt (tests/data/fingerprint.haswell.txt).
    kernels = lines[0].rsplit(":", 1)[-1].strip().lower() if lines else ""
    sibling = re.sub(r"\.txt$", "", expected_path) + f".{kernels}.txt"
    if expected[:1] != lines[:1] and kernels and os.path.exists(sibling):
        with open(sibling, encoding="utf-8") as f:
            expected, expected_path = f.read().splitlines(), sibling
    if expected[:1] != lines[:1]:
        print(f"behaviour_fingerprint: {expected_path} was made on '{expected[0]}', this build "
              f"runs on '{lines[0]}': other kernels sum in another order; not compared")
        return 77
    if expected == lines:
        print(f"behaviour_fingerprint: equal to {expected_path} ({len(lines)} lines)")
        return 0
    sys.stdout.writelines(line + "\n" for line in difflib.unified_diff(
        expected, lines, expected_path, "this build", n=0, lineterm=""))
    print(f"behaviour_fingerprint: this build computes other numbers than {expected_path}. If "
          "the change is on purpose, remake the file in the same commit and say why in its "
          "message (the docstring of tests/tools/behaviour_fingerprint.py says how)")
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bindir", help="the build's bin/ (zeromini)")
    parser.add_argument("--bf16", action="store_true", help="also the bf16 runs")
    parser.add_argument("--only", choices=("runs", "plans", "bf16"),
                        help="only the fp32 runs, the plans, or the bf16 runs")
    parser.add_argument("--expect", metavar="FILE",
                        help="compare with FILE instead of printing (exit 0, 1 or 77)")
    args = parser.parse_args()
    bindir = os.path.abspath(args.bindir)
    if not args.expect:
        fingerprint(args, bindir)
        return 0
    captured = io.StringIO()
    stdout, sys.stdout = sys.stdout, captured
    try:
        fingerprint(args, bindir)
    finally:
        sys.stdout = stdout
    return check(args.expect, captured.getvalue().splitlines())


if __name__ == "__main__":
    sys.exit(main())
