#!/usr/bin/env python3
"""Run a scaling study of zeromini: one job per point of a sweep file, under Slurm or locally.

    scripts/sweep.py SWEEP.toml [--dry-run | --list | --local] [--dir DIR] [--bin PATH]

The sweep file (TOML; examples in inputs/sweeps/):
    name = "study"              default: the file's name
    deck = "inputs/x.toml"      the deck every point starts from (required)
    stages = [0, 1, 2, 3]       ZeRO stages (or "all": the four in one run)
    nodes = [1, 2]              node counts
    ranks_per_node = [4]        ranks per node (one per GPU)
    repeat = 3                  runs of each point, in alternating rounds (below); default 1.
                                The older spelling repeats = 3 is read alike (not both)
    steps = 30                  train.steps
    micro_batch = 8             train.micro_batch (weak scaling; default: the deck's)
    scaling = "weak"            or "strong": global_batch = N sequences split among the ranks
    set = ["output.log_every=10"]                  overrides for every point
    models = [{name = "small", set = ["model.layers=4"]}, {name = "big", deck = "..."}]
    shard_sizes = [0, 2]        zero.shard_size: ranks per shard group (0 = all, or "node");
                                default: the deck's, no axis
    recompute = ["none", "blocks"]                 model.recompute; default: the deck's, no axis
    tp = [1, 2, 4]              parallel.tp (tensor parallelism; must divide the ranks); no axis
    quantize_weights = ["none", "int8"]            zero.quantize_weights (ZeRO++ qwZ; stage 3)
    quantize_grads = ["none", "int8", "int4"]      zero.quantize_grads (ZeRO++ qgZ; stages 1-3)
    error_feedback = [false, true]                 zero.error_feedback (with quantize_grads)
    [slurm] partition, account, qos, constraint, time = "00:30:00", template (a job script,
            default scripts/slurm/zeromini.sbatch), launcher = "srun" or "mpiexec", srun_mpi
            (srun --mpi=...), extra = ["--exclusive", ...] (more #SBATCH lines), env = {K = "v"}
    [local] launcher = "mpiexec" (for --local)
Each point gets a directory <dir>/<point> (default dir: runs/sweeps/<name> in the repository)
holding its job script (job.sbatch), its description (point.json) and, once it has run,
zeromini's outputs (summary.json, results.h5, job.env) and the job's log. Points are named
    <sweep>-s<stage>-n<nodes>x<ranks per node>-<model>[-shard<size>][-rc<recompute>][-tp<tp>]
        [-qw<quantize_weights>][-qg<quantize_grads>][-ef<error_feedback>]-r<repeat>
where the bracketed parts appear only in sweeps that give those axes. Each point runs zeromini
with --set for the model's and the sweep's overrides, then zero.stage, the deck axes'
zero.shard_size, model.recompute, parallel.tp, zero.quantize_weights, zero.quantize_grads,
zero.error_feedback (for the axes given), train.steps and train.micro_batch; its point.json holds
them ("overrides") and the axes' values ("shard_size", "recompute", "tp", "quantize_weights",
"quantize_grads", "error_feedback"; null when not an axis). Points the run would refuse are
skipped, with the reason: a tp not dividing the ranks, a shard size not dividing the data-parallel
ranks (ranks / tp; stages 1-3), quantize_weights at stages 0-2, quantize_grads at stage 0 (or
"all" for either); so is error_feedback = true with quantize_grads = "none" (as false: the same).

Repeats run in alternating rounds: round 1 runs every point once (repeat 0, the -r0 points),
round 2 every point again (-r1), and so on; a point's repeats never run back to back, so a slow
spell of the machine falls on a round, not on one point's repeats. That is the order `zeromini
sweep expand` lists the points in, and sweep.py runs (--local), submits (sbatch; Slurm may still
start queued jobs in another order), lists (--list) and prints (--dry-run) them in it.

By default the jobs are submitted with sbatch. --local runs them one after another on this
machine with mpiexec -n <ranks> instead (the same job scripts, launcher switched); --dry-run
writes nothing and prints the job scripts and the commands. Re-running skips the points that
are finished (their summary.json is complete) and those still in Slurm's queue; --force reruns.
After the runs, sweep.py writes the planner's prediction for each model (and each combination of
the deck axes' values that runs) beside them: planned-<model><the axes' name parts>.csv, from
`zeromini plan DECK --ranks ... --stage all --format csv` with the same overrides (--no-plan:
none). Then: scripts/collect.py DIR -o results.csv (one row per run; beside it
results-summary.csv, one row per point: the median, min, max and N of every timing over the
repeats); /usr/bin/python3 scripts/plot.py results.csv (medians, min-max error bars); for the
deck axes: scripts/plot.py hybrid|zeropp results.csv --planned DIR/planned-*

The sweep file is read, checked and expanded into its points by zeromini itself (`zeromini sweep
expand SWEEP.toml` prints them as JSON; relative paths are looked up in the current directory,
beside the sweep file, then in the repository), so sweep.py needs the zeromini executable (--bin,
default build/bin/zeromini) for --dry-run and --list too. Standard library only (Python >= 3.9).
"""

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time

from collect import read_json  # a file that is absent or unreadable reads as None
from sweep_jobs import queued_job, render_job, sbatch_command

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(SCRIPT_DIR)
SUMMARY = "summary.json"
POINT = "point.json"
JOB_SCRIPT = "job.sbatch"


class SweepError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# The sweep file and its points: read, checked and expanded by `zeromini sweep expand`.


def load_sweep(path, binary):
    """The sweep file's settings and points, from `<binary> sweep expand PATH` (JSON)."""
    cmd = [binary, "sweep", "expand", path, "--root", REPO_ROOT]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        raise SweepError(f"{binary} sweep expand: {error}") from None
    if res.returncode != 0:
        message = res.stderr.strip()
        prefix = "zeromini: error: "
        if message.startswith(prefix) and "\n" not in message:
            raise SweepError(message[len(prefix):])
        raise SweepError(f"{binary} sweep expand {path} failed (exit {res.returncode}): "
                         f"{message or 'no message'}")
    try:
        data = json.loads(res.stdout)
        return data["sweep"], data["points"]
    except (ValueError, KeyError, TypeError):
        raise SweepError(f"{binary} sweep expand {path}: not the expected JSON") from None


def summary_status(point_dir, point):
    """'finished' when point_dir holds a complete summary.json for the point, else a reason."""
    path = os.path.join(point_dir, SUMMARY)
    if not os.path.exists(path):
        return "no summary.json"
    try:
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
    except (OSError, ValueError) as error:
        return f"unreadable summary.json ({error})"
    stages = summary.get("stages") if isinstance(summary, dict) else None
    if not isinstance(stages, list) or not stages:
        return "summary.json has no stages"
    expected = [0, 1, 2, 3] if point["stage"] == "all" else [point["stage"]]
    found = [s.get("stage") for s in stages if isinstance(s, dict)]
    if found != expected:
        return f"summary.json has stages {found}, expected {expected}"
    for s in stages:
        if s.get("ranks") != point["ranks"]:
            return f"summary.json has {s.get('ranks')} ranks, expected {point['ranks']}"
        if s.get("stopped_non_finite"):
            return f"stage {s.get('stage')} stopped on a non-finite loss"
        tps = s.get("tokens_per_second_per_rank")
        if not isinstance(tps, (int, float)) or not math.isfinite(tps):
            return f"stage {s.get('stage')} has no throughput"
        if point.get("steps") is not None and s.get("steps") != point["steps"]:
            return (f"stage {s.get('stage')} ran {s.get('steps')} of {point['steps']} steps "
                    "(stopped early)")
    return "finished"


def is_finished(point_dir, point):
    return summary_status(point_dir, point) == "finished"


# --------------------------------------------------------------------------------------------
# Point files.


def _write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def write_point(point, point_dir, job_text, cfg, binary):
    os.makedirs(point_dir, exist_ok=True)
    job_script = os.path.join(point_dir, JOB_SCRIPT)
    with open(job_script, "w", encoding="utf-8") as f:
        f.write(job_text)
    os.chmod(job_script, 0o755)
    old = read_json(os.path.join(point_dir, POINT)) or {}
    meta = {k: v for k, v in point.items() if k != "problem"}
    meta.update({"binary": binary, "template": cfg["slurm"]["template"],
                 "job_script": job_script, "submissions": old.get("submissions", [])})
    _write_json(os.path.join(point_dir, POINT), meta)
    return job_script


def record_submission(point_dir, mode, job_id=None, status=None):
    path = os.path.join(point_dir, POINT)
    meta = read_json(path) or {}
    entry = {"mode": mode, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if job_id is not None:
        entry["job_id"] = job_id
    if status is not None:
        entry["exit_status"] = status
    meta.setdefault("submissions", []).append(entry)
    if job_id is not None:
        meta["job_id"] = job_id
    _write_json(path, meta)


# --------------------------------------------------------------------------------------------
# Planner predictions, for plot.py --planned.


# The deck axes: the key of point.json, the part of names before the value, the deck key.
DECK_AXES = [("shard_size", "-shard", "zero.shard_size"), ("recompute", "-rc", "model.recompute"),
             ("tp", "-tp", "parallel.tp"), ("quantize_weights", "-qw", "zero.quantize_weights"),
             ("quantize_grads", "-qg", "zero.quantize_grads"),
             ("error_feedback", "-ef", "zero.error_feedback")]


def axis_text(value):
    """An axis's value as points' names and --set spell it (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def plan_name(model, *values):
    """planned-<model>[-shard<size>][-rc<recompute>][-tp<tp>][-qw<w>][-qg<g>][-ef<e>].csv: as in
    the points' names; values in DECK_AXES' order, None for no axis."""
    axes = "".join(f"{part}{axis_text(v)}" for (_, part, _), v in zip(DECK_AXES, values)
                   if v is not None)
    return f"planned-{model}{axes}.csv"


def write_plans(cfg, points, sweep_dir, binary):
    """One planner prediction per model and combination of the deck axes' values (shard size,
    recompute, tp, ZeRO++ quantization and error feedback), at every rank count the sweep runs it
    (points it skips left out), with the overrides of its points but the stage."""
    combos = {}
    for p in points:
        if not p.get("problem"):
            key = (p["model"],) + tuple(p.get(axis) for axis, _, _ in DECK_AXES)
            combos.setdefault(key, set()).add(p["ranks"])
    models = {m["name"]: m for m in cfg["models"]}
    for (name, *values), ranks in combos.items():
        model = models[name]
        given = [(deck_key, axis_text(v)) for (_, _, deck_key), v in zip(DECK_AXES, values)
                 if v is not None]
        what = " ".join([name] + [f"{k.split('.')[1]}={v}" for k, v in given])
        out = os.path.join(sweep_dir, plan_name(name, *values))
        # The deck as the CSV's first column names it: relative to here when under here, so that
        # a CSV committed to results/ holds no path of the machine that made it.
        deck = model["deck"]
        if not os.path.relpath(deck).startswith(".."):
            deck = os.path.relpath(deck)
        cmd = [binary, "plan", deck, "--ranks", ",".join(map(str, sorted(ranks))),
               "--stage", "all", "--format", "csv"]
        sets = [o for o in model["set"] + cfg["set"] if not o.startswith("zero.stage=")]
        if cfg["micro_batch"] is not None:
            sets.append(f"train.micro_batch={cfg['micro_batch']}")
        sets += [f"{k}={v}" for k, v in given]
        for o in sets:
            cmd += ["--set", o]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as error:
            print(f"sweep: note: no planner prediction for {what}: {error}")
            continue
        if res.returncode != 0:
            print(f"sweep: note: no planner prediction for {what}: "
                  f"{res.stderr.strip() or 'zeromini plan failed'}")
            continue
        with open(out, "w", encoding="utf-8") as f:
            f.write(res.stdout)
        print(f"sweep: planner prediction for {what}: {out}")


# --------------------------------------------------------------------------------------------
# Main.


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep", help="sweep file (TOML), e.g. inputs/sweeps/quickstart-local.toml")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true",
                      help="write nothing; print each job script and its sbatch command")
    mode.add_argument("--list", action="store_true",
                      help="print the points and their state (finished, queued, to run)")
    mode.add_argument("--local", action="store_true",
                      help="run the points one after another here with mpiexec, not sbatch")
    ap.add_argument("--dir", help="sweep directory (default: runs/sweeps/<name> in the "
                    "repository)")
    ap.add_argument("--bin", help="zeromini executable, which reads the sweep file and runs the "
                    "points (default: build/bin/zeromini in the repository)")
    ap.add_argument("--only", metavar="REGEX", help="only the points whose name matches")
    ap.add_argument("--force", action="store_true", help="rerun finished points too")
    ap.add_argument("--no-plan", action="store_true",
                    help="do not write the planner's prediction (planned-<model>.csv)")
    return ap.parse_args(argv)


def main(argv=None):
    try:
        return _main(argv)
    except BrokenPipeError:  # e.g. sweep.py ... --dry-run | head
        sys.stderr.close()
        return 1


def _main(argv):
    args = parse_args(argv)
    binary = os.path.abspath(args.bin or os.path.join(REPO_ROOT, "build", "bin", "zeromini"))
    if not os.access(binary, os.X_OK):
        print(f"sweep: error: {binary}: no such executable (sweep files are read by `zeromini "
              "sweep expand`, and the jobs run it: build zeromini, or pass --bin)",
              file=sys.stderr)
        return 2
    try:
        cfg, points = load_sweep(args.sweep, binary)
    except SweepError as error:
        print(f"sweep: error: {error}", file=sys.stderr)
        return 2
    sweep_dir = os.path.abspath(args.dir or os.path.join(REPO_ROOT, "runs", "sweeps", cfg["name"]))
    with open(cfg["slurm"]["template"], encoding="utf-8") as f:
        template_text = f.read()
    if args.only:
        points = [p for p in points if re.search(args.only, p["name"])]
        if not points:
            print(f"sweep: --only {args.only}: no point matches", file=sys.stderr)
            return 2

    rounds = len({p["repeat"] for p in points})
    print(f"sweep {cfg['name']}: {len(points)} points in {sweep_dir}" +
          (f", in {rounds} rounds (every point once per round)" if rounds > 1 else ""))
    counts = {"finished": 0, "queued": 0, "submitted": 0, "ran": 0, "failed": 0, "skipped": 0}
    for n, point in enumerate(points, 1):
        tag = f"[{n}/{len(points)}] {point['name']}"
        outcome = handle_point(args, point, os.path.join(sweep_dir, point["name"]), tag, cfg,
                               binary, template_text)
        if outcome:
            counts[outcome] += 1
    finish_sweep(args, cfg, points, sweep_dir, binary, counts)
    return 1 if counts["failed"] else 0


def handle_point(args, point, point_dir, tag, cfg, binary, template_text):
    """Skips, lists, prints (--dry-run), runs (--local) or submits one point, as the arguments
    and its state say. Returns the key of counts it adds to, None for --list and --dry-run."""
    if point["problem"]:
        print(f"{tag}: skipped: {point['problem']}")
        return "skipped"
    status = summary_status(point_dir, point)
    if status == "finished" and not args.force:
        print(f"{tag}: finished")
        return "finished"
    job = None if (args.force or args.local) else queued_job(
        read_json(os.path.join(point_dir, POINT)) or {})
    if job is not None:
        print(f"{tag}: in the queue (job {job})")
        return "queued"
    job_text = render_job(point, cfg, point_dir, binary, template_text, cfg["slurm"]["template"])
    job_script = os.path.join(point_dir, JOB_SCRIPT)
    if args.list:
        print(f"{tag}: to run ({status})")
        return None
    if args.dry_run:
        print(f"{tag}: {status}")
        print(f"# ---- {job_script} ----")
        sys.stdout.write(job_text)
        print(f"# ---- command: {' '.join(shlex.quote(a) for a in sbatch_command(job_script))}"
              f"  (in {point_dir})")
        return None
    write_point(point, point_dir, job_text, cfg, binary)
    if args.local:
        return "ran" if run_local(point, point_dir, job_script, cfg, tag) else "failed"
    return "submitted" if submit(point_dir, job_script, tag) else "failed"


def finish_sweep(args, cfg, points, sweep_dir, binary, counts):
    """After the points: the planner's predictions, the counts and the next command."""
    if not args.dry_run and not args.list and not args.no_plan:
        write_plans(cfg, points, sweep_dir, binary)
    if any(counts.values()):
        print("sweep: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
    if not args.dry_run and not args.list:
        collect_py = os.path.relpath(os.path.join(SCRIPT_DIR, "collect.py"))
        if collect_py.startswith(".."):
            collect_py = os.path.join(SCRIPT_DIR, "collect.py")
        print(f"sweep: next: {collect_py} {sweep_dir} -o {os.path.join(sweep_dir, 'results.csv')}")


def submit(point_dir, job_script, tag):
    cmd = sbatch_command(job_script)
    try:
        res = subprocess.run(cmd, cwd=point_dir, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        print(f"{tag}: sbatch failed: {error}")
        return None
    if res.returncode != 0:
        print(f"{tag}: sbatch failed (exit {res.returncode}): {res.stderr.strip()}")
        return None
    job = res.stdout.strip().split(";")[0]
    record_submission(point_dir, "sbatch", job_id=job)
    print(f"{tag}: submitted job {job}")
    return job


def run_local(point, point_dir, job_script, cfg, tag):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_"))}
    env["ZEROMINI_LAUNCHER"] = cfg["local"]["launcher"]
    env["ZEROMINI_NTASKS"] = str(point["ranks"])
    if point["nodes"] > 1:
        print(f"{tag}: note: {point['nodes']} nodes run as {point['ranks']} ranks on this "
              "machine")
    log = os.path.join(point_dir, "local.out")
    start = time.time()
    print(f"{tag}: running {point['ranks']} rank(s) ...", flush=True)
    with open(log, "w", encoding="utf-8") as f:
        res = subprocess.run(["bash", job_script], cwd=point_dir, env=env, stdout=f,
                             stderr=subprocess.STDOUT)
    record_submission(point_dir, "local", status=res.returncode)
    status = summary_status(point_dir, point)
    seconds = time.time() - start
    if res.returncode == 0 and status == "finished":
        print(f"{tag}: done in {seconds:.1f} s")
        return True
    print(f"{tag}: FAILED (exit {res.returncode}; {status}) after {seconds:.1f} s; log: {log}")
    return False


if __name__ == "__main__":
    sys.exit(main())
