#!/usr/bin/env python3
"""Table and plot of the runs scripts/zeropp-curves.sh made (see there).

    /usr/bin/python3 scripts/zeropp_curves.py WORK OUT --rounds N --combo NAME=SETS... \
        [--command C] [--revision R] [--deck D]

WORK holds one output directory per combination and round, NAME-ROUND/ (results.h5 and
summary.json); the first --combo is the baseline ("none"). Writes OUT/table.md, OUT/loss.png,
OUT/losses.csv and OUT/runs/NAME.json. Where the deck evaluates (train.eval_every) with a
train.target_loss, table.md also has the time to that validation loss of each combination. Needs h5py and matplotlib (run with /usr/bin/python3).
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys

import h5py
import numpy as np

from zeromini_tools.alternation import joined, median_of_ratios, per_round, table_head, table_row
from zeromini_tools.plotting import pyplot, save

LAST = 10  # final loss: mean over the last LAST steps
KINDS = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast"]


def read_run(run_dir):
    """The loss per step and the stage's summary of one run (one stage per run)."""
    with h5py.File(os.path.join(run_dir, "results.h5"), "r") as f:
        stages = [k for k in f.keys() if k.startswith("stage_")]
        if len(stages) != 1:
            raise SystemExit(f"zeropp_curves: {run_dir}: expected one stage, found {stages}")
        loss = np.array(f[stages[0]]["loss"][:], dtype=np.float64)
    with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    return loss, summary


def gather(work, combos, rounds):
    """Per combination: round 1's loss and summary, and the step time of every round."""
    runs = {}
    for name, _ in combos:
        loss, summary = read_run(os.path.join(work, f"{name}-1"))
        if summary.get("end") != "completed":
            raise SystemExit(f"zeropp_curves: {name}: run did not complete")
        step_s = [summary["stages"][0]["time_seconds"]["step"]]
        target_s = [target_seconds(summary)]
        for r in range(2, rounds + 1):
            again, other = read_run(os.path.join(work, f"{name}-{r}"))
            # The runs are deterministic: a repeat that differs is a bug, not noise.
            if not np.array_equal(loss, again):
                raise SystemExit(f"zeropp_curves: {name}: round {r}'s losses differ from round 1's")
            if evaluations(other) != evaluations(summary):
                raise SystemExit(f"zeropp_curves: {name}: round {r}'s validation losses differ "
                                 "from round 1's")
            step_s.append(other["stages"][0]["time_seconds"]["step"])
            target_s.append(target_seconds(other))
        runs[name] = {"loss": loss, "summary": summary, "step_s": step_s, "target_s": target_s}
    return runs


def evaluations(summary):
    """(step, validation loss) of every evaluation of the run's stage."""
    stage = summary["stages"][0]
    return [(e["step"], e["loss"]) for e in stage.get("evaluation", {}).get("evaluations", [])]


def target_seconds(summary):
    """The training seconds to train.target_loss, or None where it was not reached."""
    target = summary["stages"][0].get("time_to_target", {})
    return target["seconds"] if target.get("reached") else None


def target_table(runs, combos):
    """Time to the deck's target validation loss: steps, tokens and training seconds, and the
    ratio of seconds to none's (within each round, median over rounds)."""
    base = runs[combos[0][0]]
    target = base["summary"]["stages"][0]["time_to_target"]["target_loss"]
    lines = table_head([("combination", "l"), ("final val loss", "r"), ("gap to none", "r"),
                        ("steps to target", "r"), ("tokens to target", "r"),
                        ("seconds to target (median)", "r"), ("seconds / none", "r"),
                        ("per round", "l")])
    base_val = evaluations(base["summary"])[-1][1]
    for name, _ in combos:
        run = runs[name]
        t = run["summary"]["stages"][0]["time_to_target"]
        val = evaluations(run["summary"])[-1][1]
        reached = all(s is not None for s in run["target_s"])
        base_reached = all(s is not None for s in base["target_s"])
        cells = [name, f"{val:.4f}", f"{(val - base_val) / base_val * 100:+.2f}%"]
        if reached:
            cells += [f"{t['step']}", fmt_bytes(t["tokens"]),
                      f"{statistics.median(run['target_s']):.2f}"]
            if base_reached:
                cells += [f"**{median_of_ratios(run['target_s'], base['target_s']):.2f}**",
                          joined(per_round(run["target_s"], base["target_s"]), "{:.2f}")]
            else:
                cells += ["(none did not reach it)", ""]
        else:
            cells += ["not reached", "", "", "", ""]
        lines.append(table_row(cells))
    return target, lines


def fmt_bytes(value):
    return f"{value:,.0f}"


def convergence_table(runs, combos):
    base = runs[combos[0][0]]
    base_final = float(np.mean(base["loss"][-LAST:]))
    lines = table_head([("combination", "l"), ("--set", "l"),
                        (f"final loss (mean of last {LAST})", "r"), ("gap to none", "r"),
                        ("max gap at any step", "r"), ("step ms (median)", "r"),
                        ("step time / none", "r"), ("per round", "l")])
    for name, sets in combos:
        run = runs[name]
        final = float(np.mean(run["loss"][-LAST:]))
        gap = (final - base_final) / base_final
        step_gap = np.max(np.abs(run["loss"] - base["loss"]) / base["loss"])
        lines.append(table_row([
            name, sets.replace(",", " ") or "(deck)", f"{final:.4f}", f"{gap * 100:+.2f}%",
            f"{step_gap * 100:.2f}%", f"{statistics.median(run['step_s']) * 1e3:.1f}",
            f"**{median_of_ratios(run['step_s'], base['step_s']):.2f}**",
            joined(per_round(run["step_s"], base["step_s"]), "{:.2f}")]))
    return lines


def traffic_table(runs, combos):
    """Bytes per rank and step per collective kind, all of them and those across the groups."""
    kinds = [k for k in KINDS
             if any(runs[n]["summary"]["stages"][0]["bytes_per_rank_per_step"].get(k, 0)
                    for n, _ in combos)]
    head = " | ".join(f"{k} (across)" for k in kinds)
    lines = [f"| combination | {head} | total | across groups | across / none's |",
             "|---|" + "---:|" * (len(kinds) + 3)]
    base_inter = None
    for name, _ in combos:
        stage = runs[name]["summary"]["stages"][0]
        every = stage["bytes_per_rank_per_step"]
        inter = stage["bytes_per_rank_per_step_inter_group"]
        cells = [f"{fmt_bytes(every.get(k, 0))} ({fmt_bytes(inter.get(k, 0))})" for k in kinds]
        total, across = sum(every.values()), sum(inter.values())
        base_inter = across if base_inter is None else base_inter
        lines.append(f"| {name} | {' | '.join(cells)} | {fmt_bytes(total)} | {fmt_bytes(across)} | "
                     f"{across / base_inter:.3f} |")
    return lines


def machine_line():
    model = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{platform.node()}, {os.cpu_count()} CPUs ({model}), {platform.system()} {platform.release()}"


def write_table(path, runs, combos, args):
    summary = runs[combos[0][0]]["summary"]
    stage = summary["stages"][0]
    model = summary["model"]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# ZeRO++ quantization at 4 ranks: convergence, step time and traffic",
        "",
        f"- command: `{args.command}` (zeromini {args.revision}, {now})",
        f"- deck: `{args.deck}`: {model['layers']} layers, dim {model['dim']}, vocab "
        f"{model['vocab']}, seq {model['seq_len']}, {stage['params']:,} parameters; stage "
        f"{stage['stage']}, {stage['ranks']} ranks, hpZ groups of {stage['shard_size']}, "
        f"{stage['steps']} steps, {stage['tokens_per_rank_per_step']} tokens per rank and step",
        f"- machine: {machine_line()}; {stage['ranks']} MPI ranks x 1 thread",
        (f"- {args.rounds} alternating rounds; the losses of every round were bitwise equal; "
         if args.rounds > 1 else "- one round; ") +
        "step time: each run's mean step time (summary.json `time_seconds.step`), the ratio taken "
        "within a round and its median over the rounds",
        "",
    ]
    lines += convergence_table(runs, combos)
    if evaluations(summary) and stage.get("time_to_target", {}).get("target_loss") is not None:
        target, rows = target_table(runs, combos)
        every = stage["evaluation"]["every"]
        floor = stage["evaluation"]["loss_floor"]
        lines += ["", f"Time to the target validation loss {target} (`train.target_loss`): the "
                  f"held-out loss is evaluated every {every} steps on "
                  f"{stage['evaluation']['batches']} held-out micro-batches per rank (the data's "
                  f"loss floor: {floor:.4f}); steps and tokens to the first evaluation at or below "
                  "the target; seconds: training time to it (evaluations excluded), the ratio "
                  "to none's taken within a round, median over the rounds:", ""]
        lines += rows
    lines += ["", "Bytes sent per rank and step by each collective kind (the run's counters, "
              "summary.json `bytes_per_rank_per_step`), in parentheses those across the hpZ "
              "groups (`..._inter_group`):", ""]
    lines += traffic_table(runs, combos)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def write_losses(path, runs, combos):
    names = [n for n, _ in combos]
    with open(path, "w", encoding="utf-8") as f:
        f.write("step," + ",".join(names) + "\n")
        for i in range(len(runs[names[0]]["loss"])):
            f.write(f"{i + 1}," + ",".join(f"{runs[n]['loss'][i]:.7g}" for n in names) + "\n")


def plot(path, runs, combos):
    plt = pyplot("zeropp_curves")
    fig, (ax_loss, ax_gap) = plt.subplots(1, 2, figsize=(13, 4.8))
    base = runs[combos[0][0]]["loss"]
    window = np.ones(LAST) / LAST
    for name, _ in combos:
        loss = runs[name]["loss"]
        steps = np.arange(1, len(loss) + 1)
        style = "--" if name.endswith("-ef") else "-"
        width = 2.2 if name == combos[0][0] else 1.2
        (line,) = ax_loss.plot(steps, loss, style, lw=width, label=name)
        gap = np.convolve((loss - base) / base * 100, window, mode="valid")
        ax_gap.plot(steps[LAST - 1:], gap, style, lw=width, color=line.get_color(), label=name)
    ax_loss.set(xlabel="step", ylabel="loss", title="training loss (points: validation loss)")
    for name, _ in combos:  # the held-out evaluations, in the colour of their curve
        points = evaluations(runs[name]["summary"])
        if points:
            color = next(l.get_color() for l in ax_loss.get_lines() if l.get_label() == name)
            ax_loss.plot([p[0] for p in points], [p[1] for p in points], "o", ms=3, color=color)
    target = runs[combos[0][0]]["summary"]["stages"][0].get("time_to_target", {})
    if target.get("target_loss") is not None:
        ax_loss.axhline(target["target_loss"], color="black", lw=0.6, ls=":")
    ax_loss.set_yscale("log")
    ax_gap.axhline(0, color="black", lw=0.6)
    for level in (1, 3):
        ax_gap.axhline(level, color="grey", lw=0.6, ls=":")
        ax_gap.axhline(-level, color="grey", lw=0.6, ls=":")
    ax_gap.set(xlabel="step", ylabel="(loss - none's) / none's, %",
               title=f"gap to none (mean of {LAST} steps)")
    ax_loss.legend(fontsize=8)
    fig.suptitle("ZeRO++ qwZ / qgZ at 4 ranks, stage 3, hpZ groups of 2 (inputs/zeropp.toml)")
    save(plt, fig, path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work")
    parser.add_argument("out")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--combo", action="append", required=True, help="NAME=SET,SET,...")
    parser.add_argument("--command", default="scripts/zeropp-curves.sh")
    parser.add_argument("--revision", default="unknown")
    parser.add_argument("--deck", default="inputs/zeropp.toml")
    args = parser.parse_args(argv)
    combos = [tuple(c.split("=", 1)) for c in args.combo]
    runs = gather(args.work, combos, args.rounds)
    os.makedirs(os.path.join(args.out, "runs"), exist_ok=True)
    for name, _ in combos:
        # The copy names the run's scratch directory by its own name (none-1), not by this
        # machine's path: committed results hold no absolute path.
        with open(os.path.join(args.work, f"{name}-1", "summary.json"), encoding="utf-8") as f:
            text = f.read().replace(os.path.abspath(args.work) + "/", "")
        with open(os.path.join(args.out, "runs", f"{name}.json"), "w", encoding="utf-8") as f:
            f.write(text)
    write_table(os.path.join(args.out, "table.md"), runs, combos, args)
    write_losses(os.path.join(args.out, "losses.csv"), runs, combos)
    plot(os.path.join(args.out, "loss.png"), runs, combos)
    sys.stdout.write(open(os.path.join(args.out, "table.md"), encoding="utf-8").read())


if __name__ == "__main__":
    main()
