"""Tensor parallelism: throughput and memory per rank against parallel.tp, one line per stage.

    /usr/bin/python3 scripts/plot.py tp results.csv [-o tp.png]

results.csv is collect.py's, from a sweep with the tp axis (inputs/sweeps/tp-local.toml: a fixed
rank count, tp = 1, 2, 4, every stage); its `tp` column says each run's parallel.tp (runs without
one, the deck's, are left out). Writes tp.png, one row of panels per model (and rank count, when
the data has several): tokens/s per rank, peak model-state memory per rank (parameters +
gradients + optimizer, largest over ranks) and peak total memory per rank, each against tp, one
line per ZeRO stage. Medians over the completed repeats, with error bars from min to max (the
spread; the caption says so); completed runs only.
"""

import argparse
import os
from collections import defaultdict

from zeromini_tools.plotting import STAGE_COLORS, byte_unit, save
from zeromini_tools.results import number, read_rows, stats

PANELS = [("tokens_per_second_per_rank", "tokens/s per rank", 1.0),
          ("mem_model_states_bytes", "model states per rank", None),
          ("mem_total_bytes", "total memory per rank", None)]


def by_group(rows):
    """{(model, ranks): {stage: {tp: [rows]}}} of the rows that say their tp."""
    groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        tp = number(row.get("tp"))
        if tp is not None:
            groups[(row["model"], row["ranks"])][row["stage"]][int(tp)].append(row)
    return groups


def draw(plt, groups, out):
    keys = sorted(groups)
    fig, axes = plt.subplots(len(keys), len(PANELS), squeeze=False,
                             figsize=(5.2 * len(PANELS), 4.2 * len(keys)))
    fig.suptitle("Against parallel.tp, per ZeRO stage (median over repeats; error bars: min to "
                 "max)", fontsize=11)
    for i, key in enumerate(keys):
        model, ranks = key
        all_tp = sorted({t for by_tp in groups[key].values() for t in by_tp})
        for j, (column, label, scale) in enumerate(PANELS):
            ax = axes[i][j]
            top = max((number(r.get(column)) or 0) for by_tp in groups[key].values()
                      for runs in by_tp.values() for r in runs)
            unit, div = ("", 1.0) if scale else byte_unit(top or 1)
            for stage, by_tp in sorted(groups[key].items()):
                tps = sorted(by_tp)
                s = [stats([number(r.get(column)) for r in by_tp[t]]) for t in tps]
                xs = [t for t, v in zip(tps, s) if v]
                median = [v[0] / div for v in s if v]
                err = [[(v[0] - v[1]) / div for v in s if v], [(v[2] - v[0]) / div for v in s if v]]
                ax.errorbar(xs, median, yerr=err, fmt="o-", capsize=3, label=f"stage {stage}",
                            color=STAGE_COLORS.get(stage))
            ax.set_xscale("log", base=2)
            ax.set_xticks(all_tp)
            ax.set_xticklabels([str(t) for t in all_tp])
            ax.minorticks_off()
            ax.set_xlabel("parallel.tp")
            ax.set_ylabel(f"{unit} {label}".strip())
            ax.set_title(f"{model}, {ranks} ranks", fontsize=9)
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    return save(plt, fig, out)


def main(argv, pyplot):
    ap = argparse.ArgumentParser(prog="plot.py tp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="the CSV written by scripts/collect.py")
    ap.add_argument("-o", "--output", help="the PNG (default: tp.png beside the CSV)")
    args = ap.parse_args(argv)
    rows = read_rows(args.csv)
    groups = by_group(rows)
    if not groups:
        raise SystemExit(f"plot tp: {args.csv}: no run says its parallel.tp (a sweep with the tp "
                         "axis writes it: collect.py's tp column)")
    out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.csv)), "tp.png")
    print(f"plot: {draw(pyplot(), groups, out)}")
    return 0
