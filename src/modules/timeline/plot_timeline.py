"""Gantt charts of one traced step per ZeRO stage, from zeromini's trace.json (output.trace = true).

    /usr/bin/python3 scripts/plot.py timeline RUN_DIR... [-o timeline.png] [--step S] [--ranks R,..]

One panel per stage found in the traces (a run with zero.stage = "all" holds the four; several
RUN_DIRs may hold one stage each), stacked, on one time axis in milliseconds from the start of
that stage's step. Per rank a compute row (forward, backward per unit, optimizer; the waits on
collectives in red: exposed communication) and a communication row (each collective from post to
completion, coloured by operation; collectives in flight together on thin lanes). Panel titles:
exposed and in-flight time (mean per rank) and overlap efficiency of the step, by the definitions
of summary.json's "comm_exposure": exposed = sum of the waits, in flight = length of the union of
[post, completion] of the step's collectives, efficiency = 1 - sum(exposed) / sum(in flight) over
ranks. A RUN_DIR may also be a trace.json; summary.json beside it, when there, is checked against.
"""

import json
import os
import sys
from collections import defaultdict

from zeromini_tools.plotting import save

KIND_COLORS = {"forward": "#7fb3e0", "backward": "#f2a65a", "optimizer": "#9b7fd1",
               "other": "#bdbdbd", "io": "#e0d6b8"}
KIND_LABELS = {"forward": "forward", "backward": "backward", "optimizer": "optimizer",
               "other": "other compute (grad_stats, finish_backward)", "io": "checkpoint/results"}
OP_COLORS = {"all_reduce": "#17becf", "reduce_scatter": "#2ca02c", "all_gather": "#bcbd22",
             "broadcast": "#8c564b", "barrier": "#7f7f7f", "all_to_all": "#e377c2"}
WAIT_COLOR = "#d62728"
UNIT_SHORT = {"embedding": "emb", "final_norm": "ln_f", "head": "head"}


def load_events(path):
    """The trace events of a trace.json (JSON object format, or a bare array)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except ValueError as e:
        raise SystemExit(f"plot timeline: {path}: not JSON ({e}); was the run cut short?")
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise SystemExit(f"plot timeline: {path}: no traceEvents")
    return [e for e in events if isinstance(e, dict)]


def _new_rank_step():
    return {"span": None, "compute": [], "waits": [], "collectives": [], "io": []}


def _kind(name):
    for kind in ("forward", "backward"):
        if name.startswith(kind + " "):
            return kind
    return "optimizer" if name == "optimizer" else "other"


def _label(event):
    args = event.get("args", {})
    name = event.get("name", "")
    if name == "optimizer":
        return "opt"
    unit = args.get("unit_name") or name.partition(" ")[2]
    if unit.startswith("block "):
        return unit[6:]
    return UNIT_SHORT.get(unit, "")


def index_trace(events):
    """{stage: {step: {rank: {"span", "compute", "waits", "collectives", "io"}}}}; intervals
    in microseconds, collectives as (post, completion or None, op)."""
    index = defaultdict(lambda: defaultdict(lambda: defaultdict(_new_rank_step)))
    posted, completed = {}, {}
    for e in events:
        ph, args = e.get("ph"), e.get("args") or {}
        if ph == "e":
            completed[str(e.get("id"))] = float(e["ts"])
        if ph not in ("X", "b") or "stage" not in args or "step" not in args:
            continue
        rs = index[int(args["stage"])][int(args["step"])][int(e.get("pid", 0))]
        ts = float(e["ts"])
        if ph == "b":
            posted[str(e.get("id"))] = (rs, ts, args.get("op", e.get("name", "?")))
            continue
        interval = (ts, ts + float(e.get("dur", 0.0)))
        cat = e.get("cat")
        if cat == "step":
            rs["span"] = interval
        elif cat == "compute":
            rs["compute"].append(interval + (_kind(e.get("name", "")), _label(e)))
        elif cat == "wait":
            rs["waits"].append(interval + (args.get("op", ""),))
        elif cat == "io":
            rs["io"].append(interval + ("io", e.get("name", "")))
    for ident, (rs, ts, op) in posted.items():
        rs["collectives"].append((ts, completed.get(ident), op))
    return index


def union_length(intervals):
    """Length of the union of (start, end) intervals."""
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def end_of(rs):
    """Where a rank's step ends: its step event, else its last event."""
    if rs["span"]:
        return rs["span"][1]
    ends = [iv[1] for key in ("compute", "waits", "io") for iv in rs[key]]
    ends += [c[0] for c in rs["collectives"]]
    return max(ends) if ends else 0.0


def collective_intervals(rs):
    """(post, completion, op, completed?) of a rank's collectives; one never completed in the
    trace counts until the end of the rank's step."""
    stop = end_of(rs)
    return [(b, e if e is not None else max(b, stop), op, e is not None)
            for b, e, op in rs["collectives"]]


def step_exposure(ranks):
    """Exposure of one step from {rank: rank_step} (index_trace()[stage][step]): per rank exposed
    and in-flight microseconds, their means over ranks and the overlap efficiency (None where
    nothing was in flight)."""
    by_rank = {}
    for rank, rs in sorted(ranks.items()):
        exposed = sum(w[1] - w[0] for w in rs["waits"])
        in_flight = union_length([c[:2] for c in collective_intervals(rs)])
        by_rank[rank] = {"exposed_us": exposed, "in_flight_us": in_flight}
    n = max(1, len(by_rank))
    exposed = sum(r["exposed_us"] for r in by_rank.values())
    in_flight = sum(r["in_flight_us"] for r in by_rank.values())
    return {"by_rank": by_rank, "exposed_us": exposed / n, "in_flight_us": in_flight / n,
            "efficiency": 1.0 - exposed / in_flight if in_flight > 0 else None}


def exposure_of(events, stage, step):
    """step_exposure() of a stage's step, straight from a list of trace events."""
    return step_exposure(index_trace(events)[stage][step])


def lanes(intervals):
    """Lane of each (start, end) so that intervals sharing a lane do not overlap; and the count."""
    ends, out = [], [0] * len(intervals)
    for i in sorted(range(len(intervals)), key=lambda k: intervals[k][0]):
        a, b = intervals[i][:2]
        lane = next((k for k, end in enumerate(ends) if end <= a), len(ends))
        if lane == len(ends):
            ends.append(b)
        else:
            ends[lane] = b
        out[i] = lane
    return out, max(1, len(ends))


def uncovered(a, b, covers):
    """The longest part of [a, b] outside the (start, end) intervals covers."""
    best, at = (a, a), a
    for c, d in sorted(cover[:2] for cover in covers) + [(b, b)]:
        if c > at and min(c, b) - at > best[1] - best[0]:
            best = (at, min(c, b))
        at = max(at, d)
    return best


def _bar(ax, bars, y, height, a, b, t0, scale, color, label=None, text_color="black",
         covers=(), hatch=None, zorder=1):
    """A bar from a to b (microseconds from t0), added to bars to be drawn by draw_bars(); its
    label inside where the bar shows (not under covers) when it fits there."""
    bars[y, height, color, hatch, zorder].append(((a - t0) / 1e3, (b - a) / 1e3))
    c, d = uncovered(a, b, covers)
    if label and (d - c) / 1e3 * scale >= 3.6 * len(label) + 3:
        ax.text((c + d) / 2e3 - t0 / 1e3, y, label, fontsize=6, ha="center", va="center",
                clip_on=True, color=text_color, zorder=zorder + 0.5)


def draw_bars(ax, bars):
    """The bars, one collection per row, colour and hatch (thousands of barh() are slow)."""
    for (y, height, color, hatch, zorder), spans in bars.items():
        ax.broken_barh(spans, (y - height / 2, height), facecolors=color, edgecolor="white",
                       linewidth=0.3, hatch=hatch, zorder=zorder)


def draw_compute_row(ax, bars, y, rs, t0, scale):
    if rs["span"]:
        _bar(ax, bars, y, 0.9, *rs["span"], t0, scale, "#f0f0f0", zorder=0)
    for a, b, kind, label in rs["compute"] + rs["io"]:
        _bar(ax, bars, y, 0.8, a, b, t0, scale, KIND_COLORS[kind], label, covers=rs["waits"])
    for a, b, _op in rs["waits"]:
        _bar(ax, bars, y, 0.8, a, b, t0, scale, WAIT_COLOR, "exposed", "white", zorder=3)


def draw_comm_row(ax, bars, y, rs, t0, scale):
    intervals = collective_intervals(rs)
    lane_of, n = lanes(intervals)
    lane_h = 0.8 / n
    for (a, b, op, done), lane in zip(intervals, lane_of):
        centre = y - 0.4 + (lane + 0.5) * lane_h
        _bar(ax, bars, centre, lane_h * 0.88, a, b, t0, scale, OP_COLORS.get(op, "#555555"),
             hatch=None if done else "///", zorder=2)


def efficiency_color(eff):
    if eff is None:
        return "black"
    return "#1a7f37" if eff >= 0.8 else "#b36b00" if eff >= 0.5 else "#c62828"


def panel_title(panel):
    x = panel["exposure"]
    head = f"{panel['prefix']}stage {panel['stage']}"
    if panel.get("step_note"):
        head += f" (step {panel['step']})"
    if x["efficiency"] is None:
        return f"{head}: no collective in flight (exposed {x['exposed_us'] / 1e3:.2f} ms)"
    return (f"{head}: exposed {x['exposed_us'] / 1e3:.2f} ms of {x['in_flight_us'] / 1e3:.2f} ms"
            f" in flight, overlap efficiency {100 * x['efficiency']:.0f}%")


def draw_panel(ax, panel, scale):
    ticks, labels, bars = [], [], defaultdict(list)
    for i, rank in enumerate(panel["shown"]):
        rs = panel["ranks"][rank]
        draw_compute_row(ax, bars, 2 * i, rs, panel["t0"], scale)
        draw_comm_row(ax, bars, 2 * i + 1, rs, panel["t0"], scale)
        ticks += [2 * i, 2 * i + 1]
        labels += [f"rank {rank} compute", f"rank {rank} comm"]
        if i:
            ax.axhline(2 * i - 0.5, color="#999999", lw=0.6)
    draw_bars(ax, bars)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(len(ticks) - 0.5, -0.5)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(panel_title(panel), fontsize=10, loc="left", fontweight="bold",
                 color=efficiency_color(panel["exposure"]["efficiency"]))


def legend_handles(panels):
    from matplotlib.patches import Patch
    kinds, ops, hatched = set(), set(), False
    for panel in panels:
        for rs in panel["ranks"].values():
            kinds |= {c[2] for c in rs["compute"] + rs["io"]}
            ops |= {c[2] for c in rs["collectives"]}
            hatched |= any(c[1] is None for c in rs["collectives"])
    handles = [Patch(color=KIND_COLORS[k], label=KIND_LABELS[k]) for k in KIND_COLORS
               if k in kinds]
    handles.append(Patch(color=WAIT_COLOR, label="wait on a collective: exposed communication"))
    handles += [Patch(color=OP_COLORS.get(op, "#555555"), label=op.replace("_", "-"))
                for op in [o for o in OP_COLORS if o in ops] + sorted(ops - set(OP_COLORS))]
    if hatched:
        handles.append(Patch(facecolor="#999999", edgecolor="white", hatch="///",
                             label="collective not completed in the trace"))
    return handles


def read_run(path):
    """(label, index_trace() of its trace.json, summary.json or None) of a RUN_DIR or trace."""
    trace = path if os.path.isfile(path) else os.path.join(path, "trace.json")
    if not os.path.isfile(trace):
        raise SystemExit(f"plot timeline: {path}: no trace.json (run with output.trace = true)")
    run_dir = os.path.dirname(os.path.abspath(trace))
    summary = None
    if os.path.isfile(os.path.join(run_dir, "summary.json")):
        try:
            with open(os.path.join(run_dir, "summary.json"), encoding="utf-8") as f:
                summary = json.load(f)
        except ValueError:
            summary = None
    return os.path.basename(run_dir), index_trace(load_events(trace)), summary


def choose_panels(runs, want_step=None, want_ranks=None):
    """One panel per (run, stage): the step want_step, else the first step all stages traced,
    else each stage's first traced step; showing the ranks in want_ranks (default: all)."""
    found = [(label, stage, steps, summary) for label, index, summary in runs
             for stage, steps in sorted(index.items()) if steps]
    if not found:
        raise SystemExit("plot timeline: no traced steps (events with args.stage and args.step)")
    common = set.intersection(*(set(steps) for _, _, steps, _ in found))
    default = want_step if want_step is not None else min(common) if common else None
    labels = {label for label, _, _, _ in found}
    panels = []
    for label, stage, steps, summary in found:
        step = default if default in steps else min(steps)
        if want_step is not None and step != want_step:
            print(f"plot timeline: {label}: stage {stage} has no step {want_step}; "
                  f"drawing step {step}", file=sys.stderr)
        ranks = steps[step]
        starts = [rs["span"][0] for rs in ranks.values() if rs["span"]]
        starts = starts or [iv[0] for rs in ranks.values() for key in ("compute", "waits")
                            for iv in rs[key]] or [c[0] for rs in ranks.values()
                                                   for c in rs["collectives"]]
        shown = sorted(r for r in ranks if want_ranks is None or r in want_ranks)
        if not shown:
            raise SystemExit(f"plot timeline: {label}: stage {stage} has none of the ranks "
                             f"{sorted(want_ranks)} (it has {sorted(ranks)})")
        panels.append({"prefix": f"{label}: " if len(labels) > 1 else "", "stage": stage,
                       "step": step, "ranks": ranks, "shown": shown, "t0": min(starts),
                       "summary": summary, "exposure": step_exposure(ranks)})
    same = len({p["step"] for p in panels}) == 1
    for p in panels:
        p["step_note"] = not same
    return panels


def check_summary(panel):
    """Where summary.json's comm_exposure for the panel's step disagrees with the trace, why."""
    stages = (panel["summary"] or {}).get("stages") or []
    entry = next((s for s in stages if isinstance(s, dict) and s.get("stage") == panel["stage"]),
                 {})
    ce = entry.get("comm_exposure")
    if not isinstance(ce, dict) or panel["step"] not in (ce.get("steps") or []):
        return []
    col = ce["steps"].index(panel["step"])
    notes = []
    for key, ours in (("exposed", "exposed_us"), ("in_flight", "in_flight_us")):
        table = ce.get(f"{key}_seconds_by_rank") or []
        for rank, mine in panel["exposure"]["by_rank"].items():
            if rank >= len(table) or col >= len(table[rank]) or table[rank][col] is None:
                continue
            theirs = table[rank][col] * 1e6
            if abs(theirs - mine[ours]) > max(0.05 * max(theirs, mine[ours]), 50.0):
                notes.append(f"stage {panel['stage']} step {panel['step']} rank {rank}: {key} "
                             f"{mine[ours] / 1e3:.3f} ms in the trace, {theirs / 1e3:.3f} ms in "
                             "summary.json")
    return notes


def panel_extent(panel):
    """(first, last) time of the panel's events in ms from its zero."""
    points = [t for rs in panel["ranks"].values() for key in ("compute", "waits", "io")
              for iv in rs[key] for t in iv[:2]]
    points += [t for rs in panel["ranks"].values() if rs["span"] for t in rs["span"]]
    points += [t for rs in panel["ranks"].values() for c in collective_intervals(rs)
               for t in c[:2]]
    return (min(points) - panel["t0"]) / 1e3, (max(points) - panel["t0"]) / 1e3


def draw_figure(plt, panels, out):
    heights = [0.7 + 0.42 * 2 * len(p["shown"]) for p in panels]
    handles = legend_handles(panels)
    legend_in = 0.18 * ((len(handles) + 3) // 4) + 0.15
    width = 13.0
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False,
                             figsize=(width, sum(heights) + legend_in + 0.6),
                             gridspec_kw={"height_ratios": heights})
    extents = [panel_extent(p) for p in panels]
    lo, hi = min(0.0, min(e[0] for e in extents)), max(e[1] for e in extents)
    scale = width * 0.82 * 72 / max(hi - lo, 1e-9)    # points per ms, for the labels
    for ax, panel in zip(axes[:, 0], panels):
        draw_panel(ax, panel, scale)
    axes[-1, 0].set_xlim(lo, lo + (hi - lo) * 1.01)
    axes[-1, 0].set_xlabel("ms from the start of the stage's step (each panel its own zero)")
    steps, inch = {p["step"] for p in panels}, 1 / fig.get_figheight()
    fig.suptitle("One traced step per ZeRO stage" + (f" (step {steps.pop()})" if len(steps) == 1
                 else "") + ": red = time a rank blocked on communication; exposed and in "
                 "flight: mean per rank", fontsize=11, y=1 - 0.12 * inch, va="top")
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8, frameon=False)
    return save(plt, fig, out, rect=(0, legend_in * inch, 1, 1 - 0.3 * inch))


def main(argv, pyplot):
    """`plot.py timeline ARGS`; pyplot() gives matplotlib.pyplot (Agg)."""
    import argparse
    ap = argparse.ArgumentParser(prog="plot.py timeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                    help="a run's output directory (or its trace.json)")
    ap.add_argument("-o", "--output", help="the PNG (default: timeline.png in RUN_DIR when "
                    "there is one, else in the current directory)")
    ap.add_argument("--step", type=int, help="the step to draw (1-based; default: the first "
                    "step every stage traced)")
    ap.add_argument("--ranks", type=lambda text: {int(r) for r in text.split(",")},
                    metavar="R,R...", help="draw these ranks only (the titles' figures are "
                    "still over all ranks)")
    args = ap.parse_args(argv)
    runs = [read_run(path) for path in args.run_dirs]
    panels = choose_panels(runs, args.step, args.ranks)
    for panel in panels:
        for note in check_summary(panel):
            print(f"plot timeline: note: {note}", file=sys.stderr)
    out = args.output
    if out is None:
        one = args.run_dirs[0] if len(args.run_dirs) == 1 else "."
        out = os.path.join(one if os.path.isdir(one) else os.path.dirname(one) or ".",
                           "timeline.png")
    print(f"plot: {draw_figure(pyplot(), panels, out)}")
    return 0
