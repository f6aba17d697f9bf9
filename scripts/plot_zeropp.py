"""ZeRO++ settings side by side: step time and the bytes of the collectives they change, per
combination of zero.quantize_weights, zero.quantize_grads and zero.error_feedback.

    /usr/bin/python3 scripts/plot.py zeropp results.csv [--planned [MODEL=]CSV...] [--out-dir DIR]

results.csv is collect.py's, from a sweep with the ZeRO++ axes (inputs/sweeps/zeropp-local.toml);
its quantize_weights, quantize_grads and error_feedback columns say each run's settings (empty:
the deck's, shown as "deck"). --planned takes the planner CSVs that sweep.py writes beside the
points (DIR/planned-*.csv); a planned row belongs to a run of the same model, stage, ranks and
shard group (shard_size) whose settings it has (the planner's CSV ends with them when the deck
quantizes; a CSV without them planned none, none, false), its recompute and tp matched where the
run names them. Prefix a CSV with MODEL= when the data has several models.

Writes, beside the CSV or in --out-dir:
  zeropp.png          one row of panels per model, stage and rank count: the median step time
                      over repeats (ms; error bars: min to max), then the all-gather,
                      reduce-scatter and all-to-all bytes per rank per step, one bar pair per
                      combination: measured (solid) beside planned (hatched)
  zeropp_vs_plan.csv  per combination and collective: the median step time (step_ms), measured,
                      planned, measured - planned
and prints the same as a table, with how many byte figures agree to the byte
(|measured - planned| < 0.5). The planner's step time needs a machine file (zeromini plan
--machine), which sweep.py does not pass, so the step time is measured only. Completed runs.
"""

import argparse
import os
from collections import defaultdict

from zeromini_tools.planned import Agreement, read_planned, write_csv
from zeromini_tools.plotting import byte_unit, error_bars, save
from zeromini_tools.results import models_of, number, read_rows, stats

SETTINGS = [("quantize_weights", "none"), ("quantize_grads", "none"), ("error_feedback", "false")]
KINDS = [("all_gather", "all-gather"), ("reduce_scatter", "reduce-scatter"),
         ("all_to_all", "all-to-all")]


def setting_of(row, planned=False):
    """(quantize_weights, quantize_grads, error_feedback) of a row: a run's "" where the deck's,
    a planned row's the deck's defaults where its CSV has no such column."""
    return tuple((row.get(key) or (default if planned else "")).lower()
                 for key, default in SETTINGS)


def label(setting):
    """w <weights>, g <grads> and "ef" where error feedback is on, a line each."""
    weights, grads, feedback = (value or "deck" for value in setting)
    ef = {"true": "ef", "false": ""}.get(feedback, f"ef {feedback}")
    return f"w {weights}\ng {grads}\n{ef}"


def planned_rows(specs, models):
    """[(model, row)] of every row of the --planned CSVs."""
    def complaint(path, missing):
        return (f"plot zeropp: {path}: no column {', '.join(sorted(missing))} "
                "(the CSV of zeromini plan --format csv)")

    return read_planned(specs, models, "plot zeropp", {"stage", "ranks", "shard_size"},
                        complaint)


def planned_for(planned, key, run):
    """The planner's row for a measured combination, or None (none or several match)."""
    model, stage, ranks, setting = key
    found = [row for m, row in planned
             if (m, int(row["stage"]), int(row["ranks"])) == (model, stage, ranks)
             and number(row["shard_size"]) == number(run.get("shard_size"))
             and all(not mine or mine == theirs
                     for mine, theirs in zip(setting, setting_of(row, planned=True)))
             and (not run.get("recompute") or row.get("recompute") == run["recompute"])
             and (not run.get("tp") or (row.get("tp") or "1") == run["tp"])]
    return found[0] if len(found) == 1 else None


def combinations(rows, planned):
    """{(model, stage, ranks, setting): {"step_ms": stats, kind: (measured, planned)}}."""
    runs = defaultdict(list)
    for row in rows:
        runs[(row["model"], row["stage"], row["ranks"], setting_of(row))].append(row)
    out = {}
    for key, group in runs.items():
        plan_row = planned_for(planned, key, group[0]) or {}
        entry = {"step_ms": stats([(number(r.get("time_step_s")) or 0) * 1e3
                                        for r in group])}
        for kind, _ in KINDS:
            s = stats([number(r.get(f"comm_{kind}_bytes")) or 0 for r in group])
            # A planner CSV without the all-to-all column planned none (no qgZ anywhere).
            p = number(plan_row.get(f"{kind}_bytes", "0")) if plan_row else None
            entry[kind] = (s[0], p)
        out[key] = entry
    return out


def order(key):
    model, stage, ranks, setting = key
    rank = {"": -1, "none": 0, "false": 0, "int8": 1, "true": 1, "int4": 2}
    return model, stage, ranks, tuple(rank.get(v, 3) for v in setting), setting


def table(combos):
    """The rows of zeropp_vs_plan.csv, and their Agreement."""
    out, agreement = [], Agreement()
    for key in sorted(combos, key=order):
        model, stage, ranks, setting = key
        for kind, _ in KINDS:
            m, p = combos[key][kind]
            out.append({"model": model, "stage": stage, "ranks": ranks,
                        "quantize_weights": setting[0], "quantize_grads": setting[1],
                        "error_feedback": setting[2], "step_ms": combos[key]["step_ms"][0],
                        "collective": kind, "measured": m, "planned": p,
                        "measured_minus_planned": agreement.difference(m, p)})
    return out, agreement


def print_table(rows):
    print(f"{'stage':>5} {'ranks':>5} {'weights':>7} {'grads':>5} {'ef':>5} {'step ms':>8}  "
          f"{'collective':<14} {'measured':>12} {'planned':>12}")
    for r in rows:
        planned = "" if r["planned"] is None else f"{r['planned']:,.0f}"
        print(f"{r['stage']:>5} {r['ranks']:>5} {r['quantize_weights'] or 'deck':>7} "
              f"{r['quantize_grads'] or 'deck':>5} {r['error_feedback'] or 'deck':>5} "
              f"{r['step_ms']:8.2f}  {r['collective']:<14} {r['measured']:12,.0f} {planned:>12}")


def draw_row(axes, combos, keys):
    """The step-time panel and one panel per collective for the combinations `keys`."""
    xs = range(len(keys))
    medians, err = error_bars([combos[k]["step_ms"] for k in keys])
    axes[0].bar(xs, medians, 0.6, yerr=err, capsize=3, color="#4c72b0")
    axes[0].set_ylabel("ms per step (measured; median, min-max)")
    top = max(max(v or 0 for v in combos[k][kind]) for k in keys for kind, _ in KINDS)
    unit, scale = byte_unit(top or 1)
    for ax, (kind, name) in zip(axes[1:], KINDS):
        for x, k in zip(xs, keys):
            m, p = combos[k][kind]
            ax.bar(x - 0.2, m / scale, 0.4, color="#55a868",
                   label="measured" if x == 0 else None)
            if p is not None:
                ax.bar(x + 0.2, p / scale, 0.4, color="#55a868", alpha=0.5, hatch="//",
                       edgecolor="white", label="planned" if x == 0 else None)
        ax.set_ylabel(f"{name}: {unit} per rank per step")
        ax.set_ylim(0, 1.08 * top / scale if top else 1)
    for ax in axes:
        ax.set_xticks(list(xs))
        ax.set_xticklabels([label(k[3]) for k in keys], fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    axes[1].legend(fontsize=7)


def draw(plt, combos, path):
    groups = sorted({k[:3] for k in combos})
    most = max(sum(k[:3] == g for k in combos) for g in groups)  # bars in the widest panel
    fig, axes = plt.subplots(len(groups), 1 + len(KINDS), squeeze=False,
                             figsize=((1.2 + 0.5 * most) * (1 + len(KINDS)), 4.4 * len(groups)))
    fig.suptitle("ZeRO++: zero.quantize_weights (w), zero.quantize_grads (g), "
                 "zero.error_feedback = true (ef); measured (solid) beside planned (hatched)",
                 fontsize=11)
    for axes_row, (model, stage, ranks) in zip(axes, groups):
        keys = sorted((k for k in combos if k[:3] == (model, stage, ranks)), key=order)
        draw_row(axes_row, combos, keys)
        axes_row[0].set_title(f"{model}: stage {stage}, {ranks} ranks", fontsize=9)
    return save(plt, fig, path)


def main(argv, pyplot):
    ap = argparse.ArgumentParser(prog="plot.py zeropp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="the CSV written by scripts/collect.py")
    ap.add_argument("--planned", nargs="+", action="extend", default=[], metavar="[MODEL=]CSV",
                    help="planner CSVs (sweep.py's planned-*.csv); repeatable")
    ap.add_argument("--out-dir", help="directory for the outputs (default: beside the CSV)")
    args = ap.parse_args(argv)
    rows = read_rows(args.csv)
    if "quantize_grads" not in rows[0]:
        raise SystemExit(f"plot zeropp: {args.csv}: no quantize_grads column (collect.py from "
                         "before the ZeRO++ axes?)")
    planned = planned_rows(args.planned, models_of(rows))
    if not planned:
        print("plot zeropp: no --planned CSV: measurements only")
    combos = combinations(rows, planned)
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.csv))
    os.makedirs(out_dir, exist_ok=True)
    rows_out, agreement = table(combos)
    print_table(rows_out)
    if agreement.compared:
        print(f"plot zeropp: {agreement.equal} of {agreement.compared} byte figures measured == "
              "planned to the byte")
    csv_path = os.path.join(out_dir, "zeropp_vs_plan.csv")
    print(f"plot: {write_csv(rows_out, list(rows_out[0]), csv_path)}")
    print(f"plot: {draw(pyplot(), combos, os.path.join(out_dir, 'zeropp.png'))}")
    return 0
