"""The rows of the CSV that scripts/collect.py writes, and statistics over repeated runs: the
median, with the minimum and maximum as the spread."""

import csv
import math
import os
import statistics
from collections import defaultdict


def number(text):
    """A finite float from a CSV cell, or None (empty, not a number, inf or nan)."""
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def read_rows(path):
    """The completed runs of a collect.py CSV, with stage and ranks as ints and model and scaling
    filled in."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"plot: {path}: no rows")
    need = {"stage", "ranks", "tokens_per_second_per_rank"}
    missing = need - set(rows[0])
    if missing:
        raise SystemExit(f"plot: {path}: not a collect.py CSV (no {', '.join(sorted(missing))})")
    good, skipped = [], 0
    for row in rows:
        if row.get("status", "completed") != "completed":
            skipped += 1
            continue
        row["stage"] = int(float(row["stage"]))
        row["ranks"] = int(float(row["ranks"]))
        row["model"] = row.get("model") or os.path.basename(row.get("deck", "")) or "run"
        row["scaling"] = row.get("scaling") or "weak"
        good.append(row)
    if skipped:
        print(f"plot: {skipped} rows of runs that did not complete are left out")
    if not good:
        raise SystemExit(f"plot: {path}: no completed runs")
    return good


def stats(values):
    """(median, min, max, n) of the values that are not None; None when there are none. The
    median, as collect.py's summary gives it: a slow spell of the machine during one repeat moves
    the mean, not the median (of three or more)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return statistics.median(values), min(values), max(values), len(values)


def grouped(rows, value, scaling=None):
    """{model: {stage: {ranks: (median, min, max, n)}}} of value(row) over repeats."""
    acc = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        if scaling is not None and row["scaling"] != scaling:
            continue
        acc[row["model"]][row["stage"]][row["ranks"]].append(value(row))
    return {model: {stage: {ranks: s for ranks, values in by_ranks.items()
                            if (s := stats(values)) is not None}
                    for stage, by_ranks in by_stage.items()}
            for model, by_stage in acc.items()}


def models_of(rows):
    """The models, smallest first."""
    size = {}
    for row in rows:
        size.setdefault(row["model"], number(row.get("params")) or 0)
    return sorted(size, key=lambda m: (size[m], m))
