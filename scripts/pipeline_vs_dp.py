#!/usr/bin/env python3
"""A pipeline against data parallelism at the same global batch, measured in alternated rounds,
with the planner's prediction beside each.

At N ranks: data parallelism over N ranks with grad_accum G, against pp 2 x dp N/2 with grad_accum
2G (1F1B over 2G micro-batches), so that both train on N x micro_batch x G sequences per step.
Each round runs both (the order swapped every round, so neither always runs first on a warm
machine); each run's mean step time over its timed steps, its tokens/s per rank and, under the
pipeline, the bubble rank 0 measured (summary.json). The planner's step time (overlapped) and
bubble for the same deck come from `zeromini plan --format csv --machine MACHINE`.

    /usr/bin/python3 scripts/pipeline_vs_dp.py build/bin/zeromini --ranks 2 --rounds 3 \\
        --out results/pipeline-vs-dp-2ranks.md
    /usr/bin/python3 scripts/pipeline_vs_dp.py build/bin/zeromini --ranks 4 --pp-layers 5,1

Standard library only (Python 3.11+)."""
import argparse
import csv
import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def settings(args, pp):
    accum = args.grad_accum * (2 if pp == 2 else 1)
    split = [f'parallel.pp_layers="{args.pp_layers}"'] if pp == 2 and args.pp_layers else []
    return [f"parallel.pp={pp}", f"train.grad_accum={accum}", f"zero.stage={args.stage}",
            f"train.steps={args.steps}"] + split + args.set


def measure(args, pp, out_dir):
    sets = settings(args, pp) + [f"output.dir={out_dir}", "output.overwrite=true"]
    cmd = ["mpiexec", "-n", str(args.ranks), args.zeromini, "run", args.deck]
    for s in sets:
        cmd += ["--set", s]
    run(cmd)
    with open(os.path.join(out_dir, "summary.json")) as f:
        stage = json.load(f)["stages"][0]
    bubble = stage.get("pipeline_bubble", {}).get("measured_rank0")
    times = stage["time_seconds"]
    return {"step": times["step"], "tok": stage["tokens_per_second_per_rank"], "bubble": bubble,
            "compute": times["forward"] + times["backward"], "opt": times["optimizer"],
            "loss": stage["final_loss"]}, cmd


def planned(args, pp):
    cmd = [args.zeromini, "plan", args.deck, "--machine", args.machine, "--ranks",
           str(args.ranks), "--stage", str(args.stage), "--format", "csv"]
    for s in settings(args, pp):
        if not s.startswith("zero.stage"):
            cmd += ["--set", s]
    rows = list(csv.DictReader(io.StringIO(run(cmd))))
    return rows[0], cmd


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("zeromini")
    p.add_argument("--deck", default="inputs/medium-l6d384.toml")
    p.add_argument("--machine", default="inputs/machines/this-host.toml")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--stage", type=int, default=1)
    p.add_argument("--grad-accum", type=int, default=2, help="data parallelism's (the pipeline: 2x)")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--set", action="append", default=[], help="more deck settings, KEY=VALUE")
    p.add_argument("--pp-layers", default="",
                   help="the pipeline's split of the blocks (parallel.pp_layers, e.g. 5,1)")
    p.add_argument("--out", default="/dev/stdout")
    args = p.parse_args()

    results = {1: [], 2: []}
    commands = {}
    with tempfile.TemporaryDirectory(prefix="zeromini-pp-vs-dp.") as tmp:
        for r in range(args.rounds):
            for pp in ((1, 2) if r % 2 == 0 else (2, 1)):
                got, cmd = measure(args, pp, os.path.join(tmp, f"pp{pp}"))
                results[pp].append(got)
                commands[pp] = cmd
                print(f"round {r + 1} pp {pp}: step {got['step']:.4f} s, bubble {got['bubble']}",
                      file=sys.stderr)
    plans = {pp: planned(args, pp) for pp in (1, 2)}

    def label(pp):
        return f"dp {args.ranks}" if pp == 1 else f"pp 2 x dp {args.ranks // 2}"

    lines = ["| run | grad_accum | step s, rounds | median step s | planned step s | measured / "
             "planned | fwd+bwd s (rank 0) | opt s (rank 0) | tok/s/rank | bubble measured "
             "(rank 0) | bubble planned |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    medians = {}
    for pp in (1, 2):
        steps = [g["step"] for g in results[pp]]
        medians[pp] = statistics.median(steps)
        plan = plans[pp][0]
        plan_step = float(plan["step_overlapped_s"])
        bubbles = [g["bubble"] for g in results[pp] if g["bubble"] is not None]
        cells = [label(pp), str(args.grad_accum * pp), ", ".join(f"{s:.3f}" for s in steps),
                 f"{medians[pp]:.3f}", f"{plan_step:.3f}", f"{medians[pp] / plan_step:.2f}",
                 f"{statistics.median(g['compute'] for g in results[pp]):.3f}",
                 f"{statistics.median(g['opt'] for g in results[pp]):.3f}",
                 f"{statistics.median(g['tok'] for g in results[pp]):,.0f}",
                 f"{statistics.median(bubbles):.3f}" if bubbles else "-",
                 f"{float(plan['pipeline_bubble']):.3f}" if pp == 2 else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    ratio_planned = float(plans[2][0]["step_overlapped_s"]) / float(plans[1][0]["step_overlapped_s"])
    text = "\n".join(lines) + "\n\n"
    text += (f"pipeline / data parallelism, step time: measured {medians[2] / medians[1]:.2f} "
             f"(medians), planned {ratio_planned:.2f}\n\n")
    text += "Commands (one round; the rounds alternate their order):\n\n"
    for pp in (1, 2):
        text += "    " + shlex.join(commands[pp]).replace(tmp, "OUT") + "\n"
        text += "    " + shlex.join(plans[pp][1]) + "\n"
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
