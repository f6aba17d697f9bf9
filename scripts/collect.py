#!/usr/bin/env python3
"""Gather the results of zeromini runs into one CSV: one row per run and ZeRO stage; and a
summary over the repeats of each point: the median, minimum, maximum and N of every timing.

    scripts/collect.py DIR [DIR...] [-o results.csv] [--summary FILE] [--markdown FILE]

-o results.csv: the rows of the runs; the summary goes beside it, to results-summary.csv
(--summary FILE: elsewhere; without -o the rows go to standard output and the summary only where
--summary says). --markdown FILE: the step time and throughput per point (median, min-max and the
spread (max - min) / median of the step time) as a markdown table.

Every summary.json under the directories counts as a run (a sweep directory from sweep.py, a
runs/ directory of single jobs, or one run's output directory). What the summary does not say
comes from the files beside it: point.json (written by sweep.py: sweep, model name, nodes, ranks
per node, repeat, scaling, job id) and job.env (written by the job script: job id, nodes).

Columns, in order: the run and its deck (sweep ... final_loss), the mean time per step of each
phase (time_<phase>_s), then how much communication the stage hid, from the stage's
"comm_exposure" in summary.json:
  exposed_comm_s      time a rank blocked on collectives per step (mean over timed steps, ranks)
  comm_in_flight_s    time per step with a collective in flight on a rank (union of the
                      intervals from post to completion; mean over timed steps and ranks)
  overlap_efficiency  1 - exposed / in flight, summed over timed steps and ranks (empty where
                      nothing was in flight, e.g. one rank)
all three empty for summaries written before zeromini measured exposure; then the peak memory per
category (mem_<category>_bytes, largest over ranks; mem_model_states_bytes = parameters +
gradients + optimizer) and the bytes moved per rank per step by each collective
(comm_<op>_bytes), run_dir. After run_dir, hybrid sharding and activation recomputation:
  shard_size          ranks per shard group (summary.json's "shard_size": the run's ranks for
                      stage 0 and for zero.shard_size = 0), as `zeromini plan --format csv`
  shard_size_setting  zero.shard_size as the run was given it ("0", "2", "node"), from the
                      overrides in point.json; empty when they do not set it (the deck's)
  recompute           model.recompute ("none", "blocks") from the same overrides, or empty
  intra_group_bytes   bytes per rank per step within the rank's shard group (all collectives)
  inter_group_bytes   bytes per rank per step across shard groups, as the planner's columns
  intra_<op>_bytes, inter_<op>_bytes  the same per collective (all-reduce, reduce-scatter, ...)
the traffic columns empty for summaries without "bytes_per_rank_per_step_inter_group"; then
  tp                  parallel.tp (tensor parallelism) from the same overrides, else job.env's
                      (the Slurm script's record of --set), else empty (the deck's). With tp > 1 the intra_ columns also hold the tp group's
                      collectives (everything not across shard groups).
After tp, the stage's "throughput" (zeromini's FLOP count, src/model/flops.hpp):
  model_flops_per_step, tflops_per_device, tflops_total  model FLOPs per step (all ranks) and
                      achieved TFLOP/s per device and in total
  peak_tflops_per_device, mfu, hfu  the peak the run was given and MFU/HFU against it (empty
                      without a peak)
  busbw_<op>_gbs      bus bandwidth per collective kind (nccl-tests convention), GB/s, rank 0's
                      (busbw_all_to_all_gbs last, where some run has one: zero.quantize_grads)
all empty for summaries written before zeromini reported throughput. Last, where some run's
overrides (point.json) set them (a sweep with the ZeRO++ axes), its ZeRO++ settings:
  quantize_weights, quantize_grads, error_feedback  zero.quantize_weights ("none", "int8"),
                      zero.quantize_grads ("none", "int8", "int4"), zero.error_feedback ("true",
                      "false"); empty for a run whose overrides do not set them (the deck's)
Last, where some run sent bytes out of its node: cross_node_bytes, per rank per step (summary's
"bytes_per_rank_per_step_cross_node", src/comm/cross_node.hpp). Last, where some run evaluated
(a stage's "evaluation" and "time_to_target" in summary.json), empty where a run did not:
  val_loss            the last evaluation's loss (evaluation.last_loss)
  eval_seconds        the time spent evaluating (evaluation.seconds)
  target_loss         the loss the run was to reach (time_to_target.target_loss)
  steps_to_target, tokens_to_target, seconds_to_target  the step, tokens and seconds at which it
                      reached it (time_to_target.step, .tokens, .seconds; empty if not reached)
Existing columns keep their names and order; new ones are appended.

The summary (results-summary.csv) has one row per point and stage: the runs of one point differ
only in their repeat (point.json's "repeat", the -r<repeat> of the name; a run outside a sweep is
its own point). Its columns are those of the rows, but:
  point               the point's name without -r<repeat>
  runs, completed     in place of repeat: the repeats found, and those whose status is completed
  <timing>_median, <timing>_min, <timing>_max, <timing>_n  in place of each timing column: over
                      the completed repeats that have a value. Timings are the columns of times
                      and rates the run measured: every column ending in _s (time_step_s and its
                      phases, exposed_comm_s, comm_in_flight_s, transfer_*_s) or _gbs
                      (busbw_*_gbs), tokens_per_second_per_rank, tokens_per_second,
                      overlap_efficiency, tflops_per_device, tflops_total, mfu, hfu,
                      eval_seconds, seconds_to_target
  differing           last: the other columns whose values differ between the completed repeats
job_id, status and run_dir are left out. Every other column (memory, bytes, losses, the deck) is
one value, the first completed repeat's: repeats of a point compute the same, so where they
disagree collect.py warns, naming the point, the column and the values. Standard library only.
"""

import argparse
import csv
import json
import math
import os
import statistics
import sys

SUMMARY = "summary.json"

# Categories and collectives in zeromini's order (src/core/memory.cpp, src/comm/communicator.cpp);
# others found in a summary are added after them.
MEMORY = ["parameters", "gradients", "optimizer", "activations", "comm_buffers", "workspace",
          "total"]
COLLECTIVES = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "barrier"]
# Kinds newer than those columns (all_to_all: zero.quantize_grads' exchanges): comm_<op>_bytes and
# intra_/inter_<op>_bytes come after the kinds above like any other found in a summary, and
# busbw_<op>_gbs last, only where some run has a bandwidth for it, so that the columns of runs
# without them stay where they were.
NEWER_COLLECTIVES = ["all_to_all"]
PHASES = ["step", "forward", "backward", "comm_wait", "optimizer"]
# Column <- key of the stage's "comm_exposure" in summary.json (the timeline module,
# src/modules/timeline/exposure_figures.cpp).
EXPOSURE = [("exposed_comm_s", "exposed_seconds"), ("comm_in_flight_s", "in_flight_seconds"),
            ("overlap_efficiency", "overlap_efficiency")]

THROUGHPUT = ["model_flops_per_step", "tflops_per_device", "tflops_total",
              "peak_tflops_per_device", "mfu", "hfu"]

# A stage's evaluation figures, the last columns where some run has them: column <- (object of the
# stage in summary.json, key). The *_to_target columns are empty unless the target was reached.
EVALUATION = [("val_loss", "evaluation", "last_loss"), ("eval_seconds", "evaluation", "seconds"),
              ("target_loss", "time_to_target", "target_loss"),
              ("steps_to_target", "time_to_target", "step"),
              ("tokens_to_target", "time_to_target", "tokens"),
              ("seconds_to_target", "time_to_target", "seconds")]
REACHED_ONLY = {"steps_to_target", "tokens_to_target", "seconds_to_target"}

# The summary over repeats (summarize()): the columns measured as times or rates, which vary
# from repeat to repeat, get their median, min, max and n; besides these, every column whose name
# ends in _s (seconds) or _gbs (GB/s) is one. The other columns are one value per point.
RATES = {"tokens_per_second_per_rank", "tokens_per_second", "overlap_efficiency",
         "tflops_per_device", "tflops_total", "mfu", "hfu", "eval_seconds", "seconds_to_target"}
STATISTICS = ["median", "min", "max", "n"]
# Columns of one run that the summary leaves out (point is kept without its -r<repeat>).
PER_RUN = {"repeat", "job_id", "status", "run_dir"}

# ZeRO++ settings, the last columns: column <- the deck key of the overrides in point.json.
ZEROPP = [("quantize_weights", "zero.quantize_weights"), ("quantize_grads", "zero.quantize_grads"),
          ("error_feedback", "zero.error_feedback")]

HYBRID_HEAD = ["shard_size", "shard_size_setting", "recompute", "intra_group_bytes",
               "inter_group_bytes"]

COLUMNS_HEAD = [
    "sweep", "point", "deck", "model", "scaling", "stage", "ranks", "nodes", "ranks_per_node",
    "threads_per_rank", "repeat", "job_id", "status", "layers", "dim", "heads", "vocab", "seq_len", "micro_batch",
    "grad_accum", "global_batch", "params", "padded_params", "steps", "tokens_per_rank_per_step",
    "tokens_per_second_per_rank", "tokens_per_second", "final_loss",
]


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_env(path):
    values = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep:
                    values[key.strip()] = value
    except OSError:
        pass
    return values


def find_runs(directories):
    runs = []
    for top in directories:
        if os.path.isfile(top) and os.path.basename(top) == SUMMARY:
            runs.append(os.path.dirname(os.path.abspath(top)))
            continue
        for root, dirs, files in os.walk(top):
            dirs.sort()
            if SUMMARY in files:
                runs.append(os.path.abspath(root))
            # Checkpoints hold no summaries; skip the walk into them.
            dirs[:] = [d for d in dirs if d != "checkpoints"]
    return runs


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def exposure_columns(stage):
    """exposed_comm_s, comm_in_flight_s, overlap_efficiency of a summary's stage entry (None
    where its "comm_exposure" or the value is absent)."""
    exposure = stage.get("comm_exposure")
    exposure = exposure if isinstance(exposure, dict) else {}
    return {column: _number(exposure.get(key)) for column, key in EXPOSURE}


def throughput_columns(stage):
    """THROUGHPUT and busbw_<op>_gbs of a summary's stage entry (None where absent)."""
    t = stage.get("throughput")
    t = t if isinstance(t, dict) else {}
    row = {column: _number(t.get(column)) for column in THROUGHPUT}
    busbw = t.get("busbw_bytes_per_second")
    for op in COLLECTIVES + NEWER_COLLECTIVES:
        value = _number(busbw.get(op)) if isinstance(busbw, dict) else None
        if op in COLLECTIVES or value is not None:
            row[f"busbw_{op}_gbs"] = value / 1e9 if value is not None else None
    return row


def evaluation_columns(stage):
    """EVALUATION of a summary's stage entry (None where absent, and the *_to_target figures
    where the target was not reached); {} when the stage has neither object."""
    if not any(isinstance(stage.get(key), dict) for key in ("evaluation", "time_to_target")):
        return {}
    row = {}
    for column, key, field in EVALUATION:
        figures = stage.get(key)
        figures = figures if isinstance(figures, dict) else {}
        reached = column not in REACHED_ONLY or figures.get("reached") is True
        row[column] = _number(figures.get(field)) if reached else None
    return row


def override_value(point, deck_key):
    """The value the point's overrides (point.json, written by sweep.py) give deck_key, as a
    string without quotes; the last one counts, as with zeromini's --set. None if none."""
    value = None
    for override in point.get("overrides") or []:
        key, sep, text = str(override).partition("=")
        if sep and key.strip() == deck_key:
            value = text.strip().strip('"')
    return value


def hybrid_columns(stage, point):
    """shard_size ... inter_group_bytes and the per-collective intra_/inter_<op>_bytes of a
    summary's stage entry: the total traffic split into within and across shard groups."""
    row = {"shard_size": _int(stage.get("shard_size")),
           "shard_size_setting": override_value(point, "zero.shard_size"),
           "recompute": override_value(point, "model.recompute"),
           "tp": override_value(point, "parallel.tp")}
    total = stage.get("bytes_per_rank_per_step")
    inter = stage.get("bytes_per_rank_per_step_inter_group")
    if not isinstance(total, dict) or not isinstance(inter, dict):
        return row
    intra_sum = inter_sum = 0
    for op, value in total.items():
        across = _number(inter.get(op, 0))
        within = _number(value)
        if across is None or within is None:
            return row
        row[f"intra_{op}_bytes"] = within - across
        row[f"inter_{op}_bytes"] = across
        intra_sum += within - across
        inter_sum += across
    row["intra_group_bytes"] = intra_sum
    row["inter_group_bytes"] = inter_sum
    return row


def nodes_and_ranks_per_node(summary, point, job, ranks):
    """The run's node count and ranks per node: point.json's, else job.env's or the summary's
    node count, with ranks per node derived from it where it divides the ranks."""
    nodes = point.get("nodes", _int(job.get("nodes")))
    if nodes is None:
        nodes = _int(summary.get("nodes"))
    ranks_per_node = point.get("ranks_per_node")
    if ranks_per_node is None and nodes and isinstance(ranks, int) and ranks % nodes == 0:
        ranks_per_node = ranks // nodes
    return nodes, ranks_per_node


def run_status(summary, stage, point):
    """completed, stopped_early or non_finite, for one stage of a run."""
    # zeromini says how the run ended; older summaries do not, so fall back to step counts.
    end = summary.get("end")
    expected_steps = point.get("steps")
    if stage.get("stopped_non_finite") or end == "stopped_non_finite":
        return "non_finite"
    if end == "terminated":
        return "stopped_early"
    if expected_steps is not None and stage.get("steps") != expected_steps \
            and stage.get("first_step", 1) == 1:
        return "stopped_early"
    return "completed"


def shown_path(path):
    """A path under the current directory, relative to it: the CSVs committed to results/ then
    hold no path of the machine that made them. Other paths are kept as they are."""
    if not path or not os.path.isabs(path):
        return path
    relative = os.path.relpath(path)
    return path if relative == ".." or relative.startswith("../") else relative


def run_columns(run_dir, summary, stage, point, job):
    """The columns that describe the run and its deck, sweep ... final_loss and run_dir."""
    model = summary.get("model", {}) or {}
    micro_batch = summary.get("micro_batch")
    grad_accum = summary.get("grad_accum")
    ranks = stage.get("ranks")
    nodes, ranks_per_node = nodes_and_ranks_per_node(summary, point, job, ranks)
    tokens_per_second_per_rank = _number(stage.get("tokens_per_second_per_rank"))
    return {
        "sweep": point.get("sweep", ""),
        "point": point.get("name", os.path.basename(run_dir)),
        "deck": shown_path(summary.get("deck", "")),
        "model": point.get("model", ""),
        "scaling": point.get("scaling", "weak"),
        "stage": stage.get("stage"),
        "ranks": ranks,
        "nodes": nodes,
        "ranks_per_node": ranks_per_node,
        "threads_per_rank": summary.get("threads_per_rank", _int(job.get("threads_per_rank"))),
        "repeat": point.get("repeat", 0),
        "job_id": point.get("job_id", job.get("job_id", "")),
        "status": run_status(summary, stage, point),
        "layers": model.get("layers"),
        "dim": model.get("dim"),
        "heads": model.get("heads"),
        "vocab": model.get("vocab"),
        "seq_len": model.get("seq_len"),
        "micro_batch": micro_batch,
        "grad_accum": grad_accum,
        "global_batch": (micro_batch * grad_accum * ranks
                         if all(isinstance(v, int) for v in (micro_batch, grad_accum, ranks))
                         else None),
        "params": stage.get("params"),
        "padded_params": stage.get("padded_params"),
        "steps": stage.get("steps"),
        "tokens_per_rank_per_step": stage.get("tokens_per_rank_per_step"),
        "tokens_per_second_per_rank": tokens_per_second_per_rank,
        "tokens_per_second": tokens_per_second_per_rank * ranks
        if tokens_per_second_per_rank is not None and isinstance(ranks, int) else None,
        "final_loss": _number(stage.get("final_loss")),
        "run_dir": shown_path(run_dir),
    }


def measured_columns(stage, point):
    """What the stage measured: time per phase, exposure, memory, traffic, then the hybrid
    columns, in the order the rows hold them (columns_for keeps extra keys in that order)."""
    columns = {}
    times = stage.get("time_seconds", {}) or {}
    for phase in PHASES:
        columns[f"time_{phase}_s"] = _number(times.get(phase))
    columns.update(exposure_columns(stage))
    memory = stage.get("memory_peak_bytes_max_over_ranks", {}) or {}
    for key, value in memory.items():
        columns[f"mem_{key}_bytes"] = value
    parts = [memory.get(k) for k in ("parameters", "gradients", "optimizer")]
    columns["mem_model_states_bytes"] = sum(parts) if all(isinstance(p, int) for p in parts) \
        else None
    traffic = stage.get("bytes_per_rank_per_step", {}) or {}
    for key, value in traffic.items():
        columns[f"comm_{key}_bytes"] = _number(value)
    # ZeRO-Offload's host-device copies (runs before it have none).
    transfers = stage.get("host_transfers_per_rank_per_step", {}) or {}
    for direction, figures in transfers.items():
        figures = figures or {}
        columns[f"transfer_{direction}_bytes"] = _number(figures.get("bytes"))
        columns[f"transfer_{direction}_s"] = _number(figures.get("seconds"))
    columns.update(hybrid_columns(stage, point))
    columns.update(throughput_columns(stage))
    return columns


def rows_for_run(run_dir, warn):
    summary = read_json(os.path.join(run_dir, SUMMARY))
    if not isinstance(summary, dict) or not isinstance(summary.get("stages"), list):
        warn(f"{run_dir}/{SUMMARY}: not a zeromini summary; skipped")
        return []
    point = read_json(os.path.join(run_dir, "point.json")) or {}
    job = read_env(os.path.join(run_dir, "job.env"))
    rows = []
    for stage in summary["stages"]:
        if not isinstance(stage, dict):
            continue
        row = run_columns(run_dir, summary, stage, point, job)
        row.update(measured_columns(stage, point))
        if row.get("tp") is None:  # not a sweep axis: the job script's record of --set
            row["tp"] = job.get("tp")
        row.update({column: override_value(point, key) for column, key in ZEROPP})
        cross = stage.get("bytes_per_rank_per_step_cross_node")
        row["cross_node_bytes"] = sum(_number(v) or 0 for v in cross.values()) if cross else None
        row.update(evaluation_columns(stage))
        rows.append(row)
    return rows


def columns_for(rows):
    cols = list(COLUMNS_HEAD)
    cols += [f"time_{p}_s" for p in PHASES]
    cols += [column for column, _ in EXPOSURE]
    mem = [f"mem_{k}_bytes" for k in MEMORY] + ["mem_model_states_bytes"]
    comm = [f"comm_{k}_bytes" for k in COLLECTIVES]
    extra_mem, extra_comm = [], []
    for row in rows:
        for key in row:
            if key.startswith("mem_") and key not in mem and key not in extra_mem:
                extra_mem.append(key)
            if key.startswith("comm_") and key.endswith("_bytes") and key not in comm \
                    and key not in extra_comm:
                extra_comm.append(key)
    hybrid = list(HYBRID_HEAD)
    for prefix in ("intra", "inter"):
        found = [key for row in rows for key in row if key.startswith(prefix + "_")
                 and key.endswith("_bytes") and key not in HYBRID_HEAD]
        ordered = [f"{prefix}_{op}_bytes" for op in COLLECTIVES if f"{prefix}_{op}_bytes" in found]
        hybrid += ordered + [key for key in dict.fromkeys(found) if key not in ordered]
    newer = [f"busbw_{op}_gbs" for op in NEWER_COLLECTIVES
             if any(f"busbw_{op}_gbs" in row for row in rows)]
    zeropp = [column for column, _ in ZEROPP]
    zeropp = zeropp if any(row.get(c) is not None for row in rows for c in zeropp) else []
    evaluation = [column for column, _, _ in EVALUATION]
    return (cols + mem + extra_mem + comm + extra_comm + ["run_dir"] + hybrid + ["tp"] +
            THROUGHPUT + [f"busbw_{op}_gbs" for op in COLLECTIVES] + newer + zeropp +
            ["cross_node_bytes"] * any(row.get("cross_node_bytes") for row in rows) +
            evaluation * any("val_loss" in row for row in rows))


def sort_key(row):
    def k(v):
        return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))
    return tuple(k(row.get(c)) for c in ("sweep", "model", "scaling", "ranks", "stage",
                                         "repeat", "point"))


def collect(directories, warn=None):
    warn = warn or (lambda message: print(f"collect: {message}", file=sys.stderr))
    rows = []
    for run_dir in find_runs(directories):
        rows.extend(rows_for_run(run_dir, warn))
    rows.sort(key=sort_key)
    return rows


def is_timing(column):
    """Whether a column is a time or a rate that the run measured (statistics over repeats)."""
    return column in RATES or column.endswith("_s") or column.endswith("_gbs")


def point_stem(row):
    """The row's point without its repeat: the name less its -r<repeat>."""
    name, suffix = str(row["point"]), f"-r{row.get('repeat')}"
    return name[:-len(suffix)] if name.endswith(suffix) else name


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float))
                and math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0))
    return a == b


def summarize(rows, warn=None):
    """One row per point and stage over its repeats (rows of collect()): the point (its name
    without -r<repeat>), runs (the repeats found) and completed (those whose status is
    completed); for every timing column (is_timing) its median, min, max and n over the completed
    repeats that have it (<column>_median, ...); every other column once, from the first completed
    repeat, with a warning when the completed repeats disagree (they are deterministic: memory,
    bytes, losses) and the column's name in `differing`. Returns (summary rows, columns)."""
    warn = warn or (lambda message: print(f"collect: {message}", file=sys.stderr))
    groups = {}
    for row in rows:
        key = (row.get("sweep"), point_stem(row), row.get("stage"),
               row["run_dir"] if not row.get("sweep") else None)
        groups.setdefault(key, []).append(row)
    columns = []
    for column in columns_for(rows):
        if column == "repeat":
            columns += ["runs", "completed"]
        elif is_timing(column):
            columns += [f"{column}_{s}" for s in STATISTICS]
        elif column not in PER_RUN:
            columns.append(column)
    columns.append("differing")
    kept = [c for c in columns_for(rows) if c not in PER_RUN and c != "point"]
    out = []
    for runs in groups.values():
        done = [r for r in runs if r.get("status") == "completed"]
        first = done[0] if done else runs[0]
        summary = {"point": point_stem(first), "runs": len(runs), "completed": len(done)}
        differing = []
        for column in kept:
            if is_timing(column):
                values = [r.get(column) for r in done if r.get(column) is not None]
                figures = (statistics.median(values), min(values), max(values)) if values \
                    else (None, None, None)
                summary.update(zip((f"{column}_{s}" for s in STATISTICS),
                                   figures + (len(values),)))
                continue
            summary[column] = first.get(column)
            if any(not _same(r.get(column), first.get(column)) for r in done):
                differing.append(column)
                values = ", ".join(f"repeat {r.get('repeat')}: {r.get(column)}" for r in done)
                warn(f"{summary['point']} stage {first.get('stage')}: {column} differs between "
                     f"repeats ({values}); the summary has repeat {first.get('repeat')}'s")
        summary["differing"] = " ".join(differing)
        out.append(summary)
    return out, columns


def spread(summary_row, column="time_step_s"):
    """(max - min) / median of a timing column in a summary row; None without two values."""
    median, low, high = (summary_row.get(f"{column}_{s}") for s in ("median", "min", "max"))
    if summary_row.get(f"{column}_n", 0) < 2 or not median:
        return None
    return (high - low) / median


def markdown_table(summary_rows):
    """The step time and the throughput per rank of every point over its completed repeats, as a
    markdown table: median, min-max, and the spread (max - min) / median of the step time. Points
    are named without their sweep's name."""
    lines = ["| point | stage | n | step ms median | step ms min-max | spread | "
             "tokens/s per rank median | tokens/s per rank min-max |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(row, column, scale, digits):
        values = [row.get(f"{column}_{s}") for s in ("median", "min", "max")]
        if values[0] is None:
            return "", ""
        text = [f"{v * scale:.{digits}f}" for v in values]
        return text[0], f"{text[1]}-{text[2]}"

    for row in summary_rows:
        step, step_range = cell(row, "time_step_s", 1e3, 1)
        tokens, tokens_range = cell(row, "tokens_per_second_per_rank", 1, 0)
        s = spread(row)
        point, sweep = row["point"], row.get("sweep")
        point = point[len(sweep) + 1:] if sweep and point.startswith(sweep + "-") else point
        lines.append(f"| {point} | {row['stage']} | {row['time_step_s_n']} | {step} | "
                     f"{step_range} | "
                     f"{'' if s is None else f'{100 * s:.1f} %'} | {tokens} | {tokens_range} |")
    return "\n".join(lines) + "\n"


def spread_note(summary_rows):
    """A line on the step time's spread over repeats: its median and largest over the points."""
    spreads = [(s, row) for row in summary_rows if (s := spread(row)) is not None]
    if not spreads:
        return None
    largest, row = max(spreads, key=lambda item: item[0])
    repeats = sorted({r["time_step_s_n"] for _, r in spreads})
    return (f"step time over {'/'.join(map(str, repeats))} completed repeats per point: spread "
            f"(max - min) / median {100 * statistics.median(s for s, _ in spreads):.1f} % "
            f"(median over {len(spreads)} points), largest {100 * largest:.1f} % "
            f"({row['point']}, stage {row['stage']})")


def write_csv(rows, stream, cols=None):
    cols = cols or columns_for(rows)
    writer = csv.DictWriter(stream, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: ("" if row.get(c) is None else row.get(c)) for c in cols})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", help="directories to search for summary.json")
    ap.add_argument("-o", "--output", help="CSV file to write, one row per run and stage "
                    "(default: standard output)")
    ap.add_argument("--summary", metavar="FILE", help="CSV file of the summary over repeats, one "
                    "row per point and stage (default: <output>-summary.csv beside -o's file; "
                    "none without -o)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the step time and throughput "
                    "per point (median, min-max, spread) as a markdown table")
    args = ap.parse_args(argv)
    missing = [d for d in args.dirs if not os.path.exists(d)]
    if missing:
        print(f"collect: error: {', '.join(missing)}: no such directory", file=sys.stderr)
        return 2
    rows = collect(args.dirs)
    if not rows:
        print(f"collect: error: no summary.json under {', '.join(args.dirs)}", file=sys.stderr)
        return 1
    summary_path = args.summary or (summary_path_for(args.output) if args.output else None)
    summary = None
    if summary_path or args.markdown:
        summary, columns = summarize(rows)
    if args.output:
        write_file(args.output, lambda f: write_csv(rows, f))
        runs = len({r["run_dir"] for r in rows})
        print(f"collect: {len(rows)} rows from {runs} runs -> {args.output}", file=sys.stderr)
    else:
        write_csv(rows, sys.stdout)
    if summary_path:
        write_file(summary_path, lambda f: write_csv(summary, f, columns))
        print(f"collect: {len(summary)} points (median, min, max and n of each timing over the "
              f"completed repeats) -> {summary_path}", file=sys.stderr)
    if args.markdown:
        write_file(args.markdown, lambda f: f.write(markdown_table(summary)))
        print(f"collect: the step time per point as a markdown table -> {args.markdown}",
              file=sys.stderr)
    note = spread_note(summary) if summary else None
    if note:
        print(f"collect: {note}", file=sys.stderr)
    return 0


def summary_path_for(output):
    """Where the summary goes by default: results.csv -> results-summary.csv, beside it."""
    stem = output[:-4] if output.endswith(".csv") else output
    return stem + "-summary.csv"


def write_file(path, write):
    """Writes a file through write(stream), replacing it only once it is complete."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        write(f)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
