"""trace.json of a real run, loaded with Python's json module.

    python3 test_trace_json.py ZEROMINI MPIEXEC DECK WORKDIR

Runs DECK at 2 ranks, stages 0-3 (zero.stage = "all") with output.trace = true and checks, for
every traced step of every stage:
- every rank has forward and backward events of every unit (embedding, each block, final_norm,
  and the LM head), once per micro-step;
- every collective has one post ("b") and one completion ("e") event with the same id, the
  completion not before the post, on the communication track;
- the exposed communication computed from the trace (the sum of a rank's "wait" events in the
  step) equals summary.json's exposed_seconds_by_rank within 1%, and the communication in flight
  (the union of the collectives' intervals) its in_flight_seconds_by_rank;
- steps outside output.trace_steps have no events.
"""
import collections
import json
import os
import shutil
import subprocess
import sys

TRACE_STEPS = [2, 4]  # output.trace_steps = "2,4" of 4 steps
STEPS = 4


def run(zeromini, mpiexec, deck, out):
    command = [mpiexec, "-n", "2", zeromini, "run", deck, "--out", out,
               "--set", 'zero.stage="all"', "--set", f"train.steps={STEPS}",
               "--set", "train.grad_accum=2", "--set", "output.trace=true",
               "--set", 'output.trace_steps="2,4"']
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAIL: {' '.join(command)} exited {result.returncode}")


def union_length(intervals):
    total, covered = 0.0, float("-inf")
    for begin, end in sorted(intervals):
        if end > covered:
            total += end - max(begin, covered)
            covered = end
    return total


def close(a, b, what):
    # 1%, with a floor of 20 ns for the rounding of each event's times to 1 ns.
    if abs(a - b) > max(0.01 * max(abs(a), abs(b)), 2e-8):
        raise SystemExit(f"FAIL: {what}: trace {a!r} s, summary {b!r} s")


def check_units(events, layers, micro_steps, where):
    units = ["embedding"] + [f"block {i}" for i in range(layers)] + ["final_norm", "head"]
    seen = collections.Counter(e["name"] for e in events if e["cat"] == "compute")
    for use in ("forward", "backward"):
        for unit in units:
            count = seen[f"{use} {unit}"]
            if count != micro_steps:
                raise SystemExit(f"FAIL: {where}: {count} '{use} {unit}' events, expected "
                                 f"{micro_steps} (one per micro-step)")


def check_collectives(events, where):
    posts = {e["id"]: e for e in events if e["ph"] == "b"}
    ends = collections.Counter(e["id"] for e in events if e["ph"] == "e")
    if not posts:
        raise SystemExit(f"FAIL: {where}: no collectives")
    for id_, post in posts.items():
        matching = [e for e in events if e["ph"] == "e" and e["id"] == id_]
        if ends[id_] != 1 or matching[0]["name"] != post["name"] or matching[0]["tid"] != 1:
            raise SystemExit(f"FAIL: {where}: collective {id_} has {ends[id_]} completions")
        if matching[0]["ts"] < post["ts"] or post["tid"] != 1:
            raise SystemExit(f"FAIL: {where}: collective {id_} completes before it is posted")
        for key in ("op", "bytes", "unit", "purpose"):
            if key not in post["args"]:
                raise SystemExit(f"FAIL: {where}: collective {id_} has no {key}")
    if len(ends) != len(posts):
        raise SystemExit(f"FAIL: {where}: {len(ends)} completions for {len(posts)} posts")
    return [(p["ts"], [e for e in events if e["ph"] == "e" and e["id"] == i][0]["ts"])
            for i, p in posts.items()]


def main():
    zeromini, mpiexec, deck, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "run")
    run(zeromini, mpiexec, deck, out)
    with open(os.path.join(out, "trace.json"), encoding="utf-8") as f:
        trace = json.load(f)
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    layers, micro_steps = summary["model"]["layers"], summary["grad_accum"]
    events = [e for e in trace["traceEvents"] if e["ph"] != "M"]
    groups = collections.defaultdict(list)
    for e in events:
        groups[(e["args"]["stage"], e["args"]["step"], e["pid"])].append(e)
    checked = 0
    for stage in summary["stages"]:
        exposure = stage["comm_exposure"]
        for rank in range(stage["ranks"]):
            for step in range(1, STEPS + 1):
                group = groups.get((stage["stage"], step, rank), [])
                where = f"stage {stage['stage']} step {step} rank {rank}"
                if step not in TRACE_STEPS:
                    if group:
                        raise SystemExit(f"FAIL: {where}: untraced step has {len(group)} events")
                    continue
                check_units(group, layers, micro_steps, where)
                intervals = check_collectives(group, where)
                index = exposure["steps"].index(step)
                exposed = sum(e["dur"] for e in group if e["cat"] == "wait") * 1e-6
                close(exposed, exposure["exposed_seconds_by_rank"][rank][index],
                      f"{where}: exposed communication")
                in_flight = union_length(intervals) * 1e-6
                close(in_flight, exposure["in_flight_seconds_by_rank"][rank][index],
                      f"{where}: communication in flight")
                checked += 1
    if checked != 4 * 2 * len(TRACE_STEPS):
        raise SystemExit(f"FAIL: checked {checked} (stage, step, rank) groups")
    print(f"trace.json: {len(events)} events, {checked} traced (stage, step, rank) groups agree "
          "with summary.json")


if __name__ == "__main__":
    main()
