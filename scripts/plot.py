#!/usr/bin/env python3
"""Plots of a zeromini scaling study, from the CSV that scripts/collect.py writes.

    /usr/bin/python3 scripts/plot.py results.csv [--out-dir DIR] [--planned [MODEL=]CSV]...
    /usr/bin/python3 scripts/plot.py overlap results.csv [-o overlap.png]
    /usr/bin/python3 scripts/plot.py timeline RUN_DIR... [-o timeline.png] [--step S] [--ranks R,..]
    /usr/bin/python3 scripts/plot.py hybrid|zeropp results.csv --planned [MODEL=]CSV... [--out-dir]

Writes, one panel per model:
  throughput.png      tokens/s per rank against ranks, one line per ZeRO stage; weak scaling
                      (fixed batch per rank) solid, strong scaling (fixed global batch) dashed
  memory.png          model-state memory per rank (peak, largest over ranks) against ranks, per
                      stage; with --planned, the planner's prediction as dashed lines
  time_breakdown.png  step time split into forward, backward and optimizer (stacked, one
                      bar per stage, grouped by rank count), with the time blocked on
                      collectives inside those phases drawn hatched over them, and the measured
                      step as a black line with its min-max spread over repeats
  traffic.png         bytes each rank moves per step, per collective and stage
Every figure is the median over a point's completed repeats (sweep files' repeat = N), and the
error bars span their minimum to maximum, the spread: a difference between two points smaller
than their spread is not resolved by that many repeats. The captions say so.

--planned: the CSV of `zeromini plan DECK --ranks 1,2,4 --stage all --format csv` (sweep.py writes
planned-<model>.csv); prefix it with MODEL= when the data has more than one model.
Modes (each with --help): `overlap` (overlap efficiency, exposed communication); `timeline` (a
traced step per stage); `hybrid` (memory, traffic vs plan); `tp` (against parallel.tp); `zeropp`
(per ZeRO++ setting). Needs matplotlib (Debian: python3-matplotlib, run with /usr/bin/python3).
"""

import argparse
import glob
import os
import sys

from zeromini_tools.planned import read_planned
from zeromini_tools.plotting import STAGE_COLORS, byte_unit, error_bars, panels, pyplot, save
from zeromini_tools.results import grouped, models_of, number, read_rows, stats

# zeromini's phases (src/train/trainer.hpp): forward, backward and optimizer add up to the step;
# the communication wait is the time blocked on collectives inside them, drawn over the stack.
PHASES = [("forward", "forward"), ("backward", "backward (and last gradient collectives)"),
          ("optimizer", "optimizer (and parameter gathers)")]
COMM_WAIT = ("comm_wait", "of which blocked on collectives")
SPREAD_CAPTION = "median over repeats; error bars: min to max"
COLLECTIVES = [("all_reduce", "all-reduce"), ("reduce_scatter", "reduce-scatter"),
               ("all_gather", "all-gather"), ("broadcast", "broadcast"),
               ("all_to_all", "all-to-all")]
PHASE_COLORS = ["#4c72b0", "#55a868", "#c44e52", "#8172b2", "#e377c2"]  # also the collectives


def setup_ranks_axis(ax, ranks):
    ranks = sorted(set(ranks))
    if len(ranks) > 2 and ranks[-1] / ranks[0] >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(ranks)
    ax.set_xticklabels([str(r) for r in ranks])
    ax.set_xlabel("ranks")
    ax.grid(True, alpha=0.3)


def stage_lines(ax, by_stage, fmt="o-", label="stage {}", scale=1.0):
    """A line per stage of {stage: {ranks: stats()}}: medians / scale, with error bars from min to
    max where there are repeats; returns the ranks drawn."""
    drawn = []
    for stage in sorted(s for s in by_stage if by_stage[s]):
        ranks = sorted(by_stage[stage])
        drawn += ranks
        medians, err = error_bars([by_stage[stage][r] for r in ranks])
        ax.errorbar(ranks, [m / scale for m in medians], fmt=fmt, capsize=3,
                    yerr=None if err is None else [[e / scale for e in side] for side in err],
                    color=STAGE_COLORS.get(stage), label=label.format(stage))
    return drawn


def plot_throughput(plt, rows, out_dir):
    models = models_of(rows)
    weak = grouped(rows, lambda r: number(r["tokens_per_second_per_rank"]), "weak")
    strong = grouped(rows, lambda r: number(r["tokens_per_second_per_rank"]), "strong")
    have_strong = any(strong.values())
    title = "Throughput per rank: weak scaling (fixed batch per rank, solid)"
    title += (", strong scaling (fixed global batch, dashed)" if have_strong
              else "; no strong-scaling series in this data")
    title += f"\n{SPREAD_CAPTION}"
    fig, axes = panels(plt, len(models), title)
    for ax, model in zip(axes, models):
        all_ranks = []
        for series, style, label in ((weak, "-", "weak"), (strong, "--", "strong")):
            all_ranks += stage_lines(ax, series.get(model, {}), "o" + style,
                                     f"stage {{}} ({label})" if have_strong else "stage {}")
        setup_ranks_axis(ax, all_ranks)
        ax.set_ylabel("tokens / s per rank")
        ax.set_ylim(bottom=0)
        ax.set_title(model)
        ax.legend(fontsize=8)
    return save(plt, fig, os.path.join(out_dir, "throughput.png"))


def planned_model_states(specs, models):
    """{model: {stage: {ranks: bytes}}}: the planned parameters + gradients + optimizer state."""
    states = ("params_bytes", "grads_bytes", "optimizer_bytes")
    need = {"stage", "ranks", *states}

    def complaint(path, _missing):
        return (f"plot: {path}: expected the columns {', '.join(sorted(need))}"
                " (zeromini plan ... --format csv)")

    planned = {}
    for model, row in read_planned(specs, models, "plot", need, complaint):
        total = sum(number(row[k]) or 0 for k in states)
        planned.setdefault(model, {}).setdefault(int(float(row["stage"])), {})[
            int(float(row["ranks"]))] = total
    return planned


def plot_memory(plt, rows, out_dir, planned):
    models = models_of(rows)

    def model_states(row):
        v = number(row.get("mem_model_states_bytes"))
        if v is not None:
            return v
        parts = [number(row.get(f"mem_{k}_bytes")) for k in ("parameters", "gradients",
                                                              "optimizer")]
        return None if None in parts else sum(parts)

    measured = grouped(rows, model_states)
    title = "Model-state memory per rank (parameters + gradients + optimizer; peak, largest rank)"
    if planned:
        title += "\nmeasured: dots and solid lines; planner (zeromini plan): crosses, dashed"
    fig, axes = panels(plt, len(models), title)
    for ax, model in zip(axes, models):
        values = [s[2] for by in measured.get(model, {}).values() for s in by.values()]
        values += [v for by in planned.get(model, {}).values() for v in by.values()]
        unit, scale = byte_unit(max(values) if values else 1)
        all_ranks = stage_lines(ax, measured.get(model, {}), scale=scale)
        for stage in sorted(planned.get(model, {})):
            by_ranks = planned[model][stage]
            ranks = sorted(r for r in by_ranks if not all_ranks or
                           min(all_ranks) <= r <= max(all_ranks))
            if not ranks:
                continue
            ax.plot(ranks, [by_ranks[r] / scale for r in ranks], "x--", markersize=9,
                    color=STAGE_COLORS.get(stage), zorder=3, label=f"stage {stage} planned")
        setup_ranks_axis(ax, all_ranks or [1])
        ax.set_ylabel(f"{unit} per rank")
        ax.set_ylim(bottom=0)
        ax.set_title(model)
        ax.legend(fontsize=8, ncol=2 if planned.get(model) else 1)
    return save(plt, fig, os.path.join(out_dir, "memory.png"))


def _stacked_bars(plt, rows, out_dir, parts, colors, value_of, ylabel, title, filename,
                  total_of=None, overlay=None):
    models = models_of(rows)
    scaling = "weak" if any(r["scaling"] == "weak" for r in rows) else "strong"
    rows = [r for r in rows if r["scaling"] == scaling]
    fig, axes = panels(plt, len(models), title + f" ({scaling} scaling; medians over repeats"
                       + ("; the step's error bar: min to max)" if total_of else ")"),
                       height=4.6)
    for ax, model in zip(axes, models):
        mine = [r for r in rows if r["model"] == model]
        ranks_list = sorted({r["ranks"] for r in mine})
        stages = sorted({r["stage"] for r in mine})
        width = 0.8 / max(1, len(stages))
        ticks, labels = [], []
        for g, ranks in enumerate(ranks_list):
            for j, stage in enumerate(stages):
                sel = [r for r in mine if r["ranks"] == ranks and r["stage"] == stage]
                if not sel:
                    continue
                x = g + (j - (len(stages) - 1) / 2) * width
                bottom = 0.0
                for (key, label), color in zip(parts, colors):
                    s = stats([value_of(r, key) for r in sel])
                    h = s[0] if s else 0.0
                    ax.bar(x, h, width * 0.92, bottom=bottom, color=color,
                           label=label if (g == 0 and j == 0) else None)
                    bottom += h
                if overlay is not None:
                    s = stats([value_of(r, overlay[0]) for r in sel])
                    if s and s[0] > 0:
                        ax.bar(x, s[0], width * 0.45, color="none", edgecolor="black",
                               hatch="///", lw=0.8,
                               label=overlay[1] if (g == 0 and j == 0) else None)
                if total_of is not None:
                    s = stats([total_of(r) for r in sel])
                    if s:
                        ax.plot([x - width * 0.46, x + width * 0.46], [s[0], s[0]], "k-", lw=1.5,
                                label="step (measured)" if (g == 0 and j == 0) else None)
                        _, err = error_bars([s])
                        if err is not None:
                            ax.errorbar([x], [s[0]], yerr=err, fmt="none", ecolor="k",
                                        capsize=3, lw=1)
                ticks.append(x)
                labels.append(f"s{stage}")
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, fontsize=8)
        for g, ranks in enumerate(ranks_list):
            ax.annotate(f"{ranks} rank{'s' if ranks != 1 else ''}", xy=(g, 0),
                        xycoords=("data", "axes fraction"), xytext=(0, -28),
                        textcoords="offset points", ha="center", fontsize=9)
        ax.set_ylabel(ylabel)
        ax.set_title(model)
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(5, len(labels)), fontsize=8,
               frameon=False)
    return save(plt, fig, os.path.join(out_dir, filename), rect=(0, 0.07, 1, 1))


def plot_time_breakdown(plt, rows, out_dir):
    def phase_ms(row, key):
        v = number(row.get(f"time_{key}_s"))
        return None if v is None else v * 1e3

    return _stacked_bars(plt, rows, out_dir, PHASES, PHASE_COLORS, phase_ms, "ms per step",
                         "Step time by phase, per stage", "time_breakdown.png",
                         total_of=lambda r: phase_ms(r, "step"), overlay=COMM_WAIT)


def plot_traffic(plt, rows, out_dir):
    top = max((number(r.get(f"comm_{k}_bytes")) or 0) for r in rows for k, _ in COLLECTIVES)
    unit, scale = byte_unit(top or 1)

    def traffic(row, key):
        v = number(row.get(f"comm_{key}_bytes"))
        return None if v is None else v / scale

    return _stacked_bars(plt, rows, out_dir, COLLECTIVES, PHASE_COLORS, traffic,
                         f"{unit} per rank per step", "Bytes moved per rank per step, by "
                         "collective", "traffic.png")


def plot_overlap(plt, rows, out):
    """Overlap efficiency and exposed communication against ranks, per stage; two panels a model."""
    rows = [r for r in rows if number(r.get("exposed_comm_s")) is not None]
    if not rows:
        raise SystemExit("plot: no exposed_comm_s in the CSV (summaries written before zeromini "
                         "measured comm_exposure?)")
    scaling = "weak" if any(r["scaling"] == "weak" for r in rows) else "strong"
    models = models_of(rows)
    fig, axes = plt.subplots(len(models), 2, figsize=(11, 4.2 * len(models)), squeeze=False)
    fig.suptitle(f"Communication hidden behind compute ({scaling} scaling; {SPREAD_CAPTION})",
                 fontsize=11)
    for row_axes, model in zip(axes, models):
        for ax, key, scale, ylabel in (
                (row_axes[0], "overlap_efficiency", 0.01, "overlap efficiency (%): 100 = hidden"),
                (row_axes[1], "exposed_comm_s", 1e-3, "exposed communication (ms per step)")):
            by_stage = grouped(rows, lambda r, k=key: number(r.get(k)), scaling).get(model, {})
            drawn = stage_lines(ax, by_stage, scale=scale)
            setup_ranks_axis(ax, drawn or [1])
            ax.set(ylabel=ylabel, title=model)
            if drawn:
                ax.legend(fontsize=8)
        row_axes[0].set_ylim(min(0, row_axes[0].get_ylim()[0]), 105)
        row_axes[1].set_ylim(bottom=0)
    return save(plt, fig, out)


def mode_script(mode):
    """plot_<mode>.py: beside this script, or in the folder of the module it plots
    (src/modules/<name>/plot_<mode>.py)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(here, f"plot_{mode}.py")):
        found = glob.glob(os.path.join(here, os.pardir, "src", "modules", "*", f"plot_{mode}.py"))
        if found:
            sys.path.insert(0, os.path.dirname(os.path.abspath(found[0])))
    return __import__("plot_" + mode)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["timeline"], ["hybrid"], ["tp"], ["zeropp"]):  # plot_<mode>.py
        return mode_script(argv[0]).main(argv[1:], pyplot)
    overlap = argv[:1] == ["overlap"]
    ap = argparse.ArgumentParser(prog="plot.py overlap" if overlap else None, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="the CSV written by scripts/collect.py")
    if overlap:
        ap.add_argument("-o", "--output", help="the PNG (default: overlap.png beside the CSV)")
    else:
        ap.add_argument("--out-dir", help="directory for the PNGs (default: beside the CSV)")
        ap.add_argument("--planned", action="append", metavar="[MODEL=]CSV",
                        help="planner prediction (zeromini plan ... --format csv); repeatable")
    args = ap.parse_args(argv[1:] if overlap else argv)
    plt = pyplot()
    rows = read_rows(args.csv)
    beside = os.path.dirname(os.path.abspath(args.csv))
    if overlap:
        out = args.output or os.path.join(beside, "overlap.png")
        print(f"plot: {plot_overlap(plt, rows, out)}")
        return 0
    out_dir = args.out_dir or beside
    os.makedirs(out_dir, exist_ok=True)
    planned = planned_model_states(args.planned, models_of(rows))
    if not args.planned:
        print("plot: no --planned CSV: memory.png shows measurements only")
    for path in (plot_throughput(plt, rows, out_dir), plot_memory(plt, rows, out_dir, planned),
                 plot_time_breakdown(plt, rows, out_dir), plot_traffic(plt, rows, out_dir)):
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
