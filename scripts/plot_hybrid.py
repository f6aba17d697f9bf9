"""Hybrid sharding and activation recomputation against the planner, per ZeRO stage.

    /usr/bin/python3 scripts/plot.py hybrid results.csv --planned [MODEL=]CSV... [--out-dir DIR]

results.csv is collect.py's, from a sweep with the deck axes shard_sizes, recompute and/or tp
(inputs/sweeps/hybrid-local.toml, tp-local.toml). --planned takes the CSVs of `zeromini plan DECK --ranks R
--stage all --format csv --set zero.shard_size=S --set model.recompute=M` (with the sweep's other
overrides), one per value of the axes: sweep.py writes them beside the points as
planned-<model>[-shard<S>][-rc<M>].csv, so `--planned DIR/planned-*.csv` gives them all. Their
rows are matched to the runs by model, stage, ranks, shard_size (ranks per shard group, in both
CSVs), recompute and tp (parallel.tp); prefix a CSV with MODEL= when the data has several models.
Under tp the intra-group figure is everything not across shard groups: the shard group's
collectives and the tp group's (the planner's intra_group_bytes + tensor_parallel_bytes).

Writes, beside the CSV or in --out-dir:
  hybrid_memory.png      peak memory per rank (largest over ranks), per stage: for each value of
                         the axes a measured bar (solid) beside the planned one (hatched),
                         stacked: model states (parameters + gradients + optimizer),
                         activations, communication buffers + workspace
  hybrid_traffic.png     bytes per rank per step, per stage, measured beside planned, stacked:
                         within the shard group (intra) and across groups (inter)
  hybrid_vs_plan.csv     every figure measured and planned, and measured - planned: the memory
                         categories, their total, intra-group and inter-group bytes
and prints how many figures agree to the byte, |measured - planned| < 0.5, and each one that does
not. (summary.json gives traffic per rank per step as a mean in floating point, 1734156.0000000002
for 1734156 bytes; memory is whole bytes.) Medians over repeats (memory and bytes repeat
exactly); completed runs only.
"""

import argparse
import os
from collections import defaultdict

from zeromini_tools.planned import Agreement, TO_THE_BYTE, cell, read_planned, write_csv
from zeromini_tools.plotting import byte_unit, save
from zeromini_tools.results import models_of, number, read_rows, stats

# Compared figures: name, the collect.py column, the planner CSV column.
FIGURES = [("parameters", "mem_parameters_bytes", "params_bytes"),
           ("gradients", "mem_gradients_bytes", "grads_bytes"),
           ("optimizer", "mem_optimizer_bytes", "optimizer_bytes"),
           ("activations", "mem_activations_bytes", "activations_bytes"),
           ("comm_buffers", "mem_comm_buffers_bytes", "comm_buffers_bytes"),
           ("workspace", "mem_workspace_bytes", "workspace_bytes"),
           ("memory_total", "mem_total_bytes", "total_bytes"),
           ("intra_group", "intra_group_bytes", "intra_group_bytes"),
           ("inter_group", "inter_group_bytes", "inter_group_bytes")]
# Stacked parts of the bars: label, colour, the figures summed.
MEMORY_PARTS = [("model states", "#4c72b0", ("parameters", "gradients", "optimizer")),
                ("activations", "#dd8452", ("activations",)),
                ("buffers + workspace", "#8c8c8c", ("comm_buffers", "workspace"))]
TRAFFIC_PARTS = [("within the shard group (and the tp group)", "#55a868", ("intra_group",)),
                 ("across shard groups", "#c44e52", ("inter_group",))]
PLANNED_NEED = {"stage", "ranks", "shard_size", "recompute"} | {f[2] for f in FIGURES}


def planned_figures(specs, models):
    """{(model, stage, ranks, shard_size, recompute, tp): {figure: bytes}} from --planned CSVs;
    the intra-group figure includes the tp group's bytes (collect.py's does)."""
    def complaint(path, missing):
        return (f"plot hybrid: {path}: no column {', '.join(sorted(missing))} (the CSV of "
                "zeromini plan --format csv, from a zeromini with hybrid sharding)")

    planned = {}
    for model, row in read_planned(specs, models, "plot hybrid", PLANNED_NEED, complaint):
        key = (model, int(row["stage"]), int(row["ranks"]), int(row["shard_size"]),
               row["recompute"], int(row.get("tp") or 1))
        figures = {name: number(row[column]) for name, _, column in FIGURES}
        tp_bytes = number(row.get("tensor_parallel_bytes"))
        if tp_bytes is not None and figures["intra_group"] is not None:
            figures["intra_group"] += tp_bytes
        planned[key] = figures
    return planned


def setting_label(row):
    """How a run was set: zero.shard_size, model.recompute and parallel.tp (the deck's where not
    given)."""
    return (row.get("shard_size_setting") or "deck", row.get("recompute") or "deck",
            row.get("tp") or "deck")


def measured_points(rows):
    """{(model, stage, ranks, setting): {"shard_size": group, "recompute": mode, figure: median
    over repeats}}."""
    acc = defaultdict(list)
    for row in rows:
        acc[(row["model"], row["stage"], row["ranks"], setting_label(row))].append(row)
    points = {}
    for key, runs in acc.items():
        point = {"shard_size": int(number(runs[0].get("shard_size")) or key[2]),
                 "recompute": runs[0].get("recompute") or "", "tp": runs[0].get("tp") or ""}
        for name, column, _ in FIGURES:
            s = stats([number(r.get(column)) for r in runs])
            point[name] = None if s is None else s[0]
        points[key] = point
    return points


def planned_for(planned, key, point):
    """The planner's figures for a measured point; the recompute mode and tp are matched only when
    the run names them (else any one plan of that model, stage, ranks and shard group)."""
    model, stage, ranks, _ = key
    found = [v for (m, s, r, g, mode, tp), v in planned.items()
             if (m, s, r, g) == (model, stage, ranks, point["shard_size"])
             and (not point["recompute"] or mode == point["recompute"])
             and (not point["tp"] or tp == int(point["tp"]))]
    return found[0] if len(found) == 1 else None


COMPARISON_COLUMNS = ["model", "stage", "ranks", "shard_size_setting", "shard_size",
                      "recompute", "figure", "measured", "planned", "measured_minus_planned", "tp"]


def comparison(points, planned):
    """The rows of hybrid_vs_plan.csv, and their Agreement."""
    out, agreement = [], Agreement()
    for key in sorted(points, key=lambda k: (k[0], k[1], k[2], setting_order(k[3]))):
        model, stage, ranks, (setting, mode, tp) = key
        point = points[key]
        plan = planned_for(planned, key, point) or {}
        for name, _, _ in FIGURES:
            m, p = point[name], plan.get(name)
            out.append({"model": model, "stage": stage, "ranks": ranks,
                        "shard_size_setting": setting, "shard_size": point["shard_size"],
                        "recompute": mode, "figure": name, "measured": m, "planned": p,
                        "measured_minus_planned": agreement.difference(m, p), "tp": tp})
    return out, agreement


def setting_order(setting):
    shard, mode, tp = setting
    return ((0, int(shard), "") if shard.isdigit() else (1, 0, shard), mode != "none", mode,
            int(tp) if tp.isdigit() else 0)


def draw_pair(ax, x, width, values, parts, scale, first):
    """A measured bar at x and a planned (hatched) one beside it, stacked by parts."""
    for offset, source, hatch in ((-width / 2, "measured", None), (width / 2, "planned", "//")):
        figures = values[source]
        if not figures:
            continue
        bottom = 0.0
        for label, color, names in parts:
            parts_of = [figures.get(n) for n in names]
            h = sum(v for v in parts_of if v is not None) / scale
            ax.bar(x + offset, h, width * 0.95, bottom=bottom, color=color, hatch=hatch,
                   edgecolor="white" if hatch else color, lw=0,
                   label=f"{label} ({source})" if first else None)
            bottom += h


def draw_figure(plt, points, planned, parts, title, ylabel, path):
    models = sorted({k[0] for k in points})
    stages = sorted({k[1] for k in points})
    bars = list(points.values()) + list(planned.values())
    top = max(sum(b.get(n) or 0 for _, _, names in parts for n in names) for b in bars)
    unit, scale = byte_unit(top or 1)
    fig, axes = plt.subplots(len(models), len(stages), squeeze=False, sharey="row",
                             figsize=(max(6, 3.6 * len(stages)), 4.4 * len(models)))
    fig.suptitle(title, fontsize=11)
    first = True
    for axes_row, model in zip(axes, models):
        for ax, stage in zip(axes_row, stages):
            keys = sorted((k for k in points if k[0] == model and k[1] == stage),
                          key=lambda k: (k[2], setting_order(k[3])))
            for x, key in enumerate(keys):
                values = {"measured": points[key],
                          "planned": planned_for(planned, key, points[key])}
                draw_pair(ax, x, 0.38, values, parts, scale, first)
                first = False
            ax.set_xticks(range(len(keys)))
            several_ranks = len({k[2] for k in keys}) > 1
            ax.set_xticklabels([f"shard {k[3][0]}\n{points[k]['shard_size']} per group\n{k[3][1]}"
                                + (f"\ntp {k[3][2]}" if k[3][2] != "deck" else "")
                                + (f"\n{k[2]} ranks" if several_ranks else "") for k in keys],
                               fontsize=7)
            ax.set_title(f"{model}: stage {stage}" if len(models) > 1 else f"stage {stage}")
            ax.grid(True, axis="y", alpha=0.3)
        axes_row[0].set_ylabel(f"{unit} {ylabel}")
        axes_row[0].set_ylim(0, 1.08 * top / scale)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8,
               frameon=False)
    fig.text(0.01, 0.01, "x: zero.shard_size (ranks per shard group), model.recompute, parallel.tp",
             fontsize=7)
    return save(plt, fig, path, rect=(0, 0.1, 1, 1))


def main(argv, pyplot):
    ap = argparse.ArgumentParser(prog="plot.py hybrid", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="the CSV written by scripts/collect.py")
    ap.add_argument("--planned", nargs="+", action="extend", default=[], metavar="[MODEL=]CSV",
                    help="planner CSVs (zeromini plan ... --format csv), one per value of the "
                    "axes; repeatable")
    ap.add_argument("--out-dir", help="directory for the outputs (default: beside the CSV)")
    args = ap.parse_args(argv)
    rows = read_rows(args.csv)
    if "intra_group_bytes" not in rows[0]:
        raise SystemExit(f"plot hybrid: {args.csv}: no intra_group_bytes column (collect.py "
                         "from before hybrid sharding?)")
    points = measured_points(rows)
    planned = planned_figures(args.planned, models_of(rows))
    if not planned:
        print("plot hybrid: no --planned CSV: measurements only")
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.csv))
    os.makedirs(out_dir, exist_ok=True)
    table, agreement = comparison(points, planned)
    csv_path = os.path.join(out_dir, "hybrid_vs_plan.csv")
    print(f"plot: {write_csv(table, COMPARISON_COLUMNS, csv_path)}")
    if agreement.compared:
        print(f"plot hybrid: {agreement.equal} of {agreement.compared} figures measured == "
              f"planned to the byte (largest |measured - planned|: {agreement.largest:.3g} bytes)")
        for row in table:
            diff = row["measured_minus_planned"]
            if diff is not None and abs(diff) >= TO_THE_BYTE:
                print(f"  differs: {row['model']} stage {row['stage']} {row['ranks']} ranks "
                      f"shard {row['shard_size_setting']} recompute {row['recompute']} "
                      f"{row['figure']}: measured {cell(row['measured'])}, planned "
                      f"{cell(row['planned'])}")
    plt = pyplot()
    shown = "measured (solid) beside planned (hatched, zeromini plan)" if planned else "measured"
    print("plot: " + draw_figure(
        plt, points, planned, MEMORY_PARTS,
        f"Peak memory per rank (largest over ranks), per stage: {shown}", "per rank",
        os.path.join(out_dir, "hybrid_memory.png")))
    print("plot: " + draw_figure(
        plt, points, planned, TRAFFIC_PARTS,
        f"Bytes per rank per step within and across shard groups: {shown}",
        "per rank per step", os.path.join(out_dir, "hybrid_traffic.png")))
    return 0
