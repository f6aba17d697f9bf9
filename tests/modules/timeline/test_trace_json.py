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


def run(zeromini, mpiexec, deck, out, settings=('zero.stage="all"',)):
    command = [mpiexec, "-n", "2", zeromini, "run", deck, "--out", out,
               "--set", f"train.steps={STEPS}",
               "--set", "train.grad_accum=2", "--set", "output.trace=true",
               "--set", 'output.trace_steps="2,4"']
    for setting in settings:
        command += ["--set", setting]
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


def check_transfers(zeromini, mpiexec, deck, work):
    """ZeRO-Offload at stage 3: each traced step has one event per host-device copy the summary
    counts, on the transfer track (tid 2), named by direction."""
    out = os.path.join(work, "offload")
    run(zeromini, mpiexec, deck, out, ("zero.stage=3", 'zero.offload_optimizer="host"',
                                       'zero.offload_params="host"'))
    with open(os.path.join(out, "trace.json"), encoding="utf-8") as f:
        trace = json.load(f)
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    names = {e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e.get("tid") == 2}
    if names != {"host transfers"}:
        raise SystemExit(f"FAIL: the transfer track is named {names}")
    copies = summary["stages"][0]["host_transfers_per_rank_per_step"]
    expected = {"d2h": copies["device_to_host"]["calls"], "h2d": copies["host_to_device"]["calls"]}
    if min(expected.values()) == 0:
        raise SystemExit(f"FAIL: offload made no copies in one direction: {copies}")
    for rank in range(2):
        for step in TRACE_STEPS:
            found = collections.Counter(
                e["name"].split()[0] for e in trace["traceEvents"]
                if e["ph"] == "X" and e["cat"] == "transfer" and e["pid"] == rank
                and e["args"]["step"] == step and e["tid"] == 2)
            if dict(found) != expected:
                raise SystemExit(f"FAIL: rank {rank} step {step}: transfer events {dict(found)}, "
                                 f"the summary counts {expected}")
    print(f"trace.json (offload): {sum(expected.values())} copies per traced step on the transfer "
          "track, as summary.json counts them")


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
    check_transfers(zeromini, mpiexec, deck, work)


if __name__ == "__main__":
    main()
