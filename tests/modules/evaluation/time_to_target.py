#!/usr/bin/env python3
"""Time to target equal across the ZeRO stages: one run of every stage (zero.stage = "all") at a
rank count, evaluating after every step, must reach train.target_loss at the same step in every
stage, and say so. The stages are exact: stages 1-3 compute the same arithmetic in the same order,
so their validation losses are equal bit for bit; stage 0 all-reduces the gradients where they
reduce-scatter, which sums in the same order at 1 and 2 ranks (equal bit for bit there too) and
may round differently from 3 ranks on (as tests/zero/test_zero_equivalence.cpp states), so there
its losses agree to 1e-5 relative, and the step to target is still the same.

    time_to_target.py MPIEXEC ZEROMINI DECK OUT_DIR RANKS TARGET STEPS [SET...]

SET: more deck overrides (section.key=value), passed to the run with --set.

Checks summary.json: every stage reached the target at one step, which is the first evaluation
at or below it; the stages' evaluations are equal; the run's time_to_target says same_step; the
tokens are the step's global batch times the steps. With output.trace=true and
output.trace_steps=3 among the SETs (the timeline module's test), trace.json has the traced
step's evaluation as a span on every rank. Standard library only.
"""

import json
import subprocess
import sys


def fail(message):
    raise SystemExit(f"FAIL: {message}")


def main():
    mpiexec, zeromini, deck, out, ranks, target, steps = sys.argv[1:8]
    target = float(target)
    command = [mpiexec, "-n", ranks, zeromini, "run", deck, "--out", out,
               "--set", "zero.stage=all", "--set", "train.eval_every=1",
               "--set", "train.eval_batches=2", "--set", f"train.target_loss={target}",
               "--set", f"train.steps={steps}"]
    for override in sys.argv[8:]:
        command += ["--set", override]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout)
    if done.returncode != 0:
        fail(f"{' '.join(command)} exited {done.returncode}")
    with open(f"{out}/summary.json") as f:
        summary = json.load(f)
    stages = summary["stages"]
    if [s["stage"] for s in stages] != [0, 1, 2, 3]:
        fail(f"stages {[s['stage'] for s in stages]}")
    first = stages[0]["evaluation"]["evaluations"]
    if len(first) != int(steps):
        fail(f"{len(first)} evaluations in {steps} steps with train.eval_every = 1")
    sharded = [e["loss"] for e in stages[1]["evaluation"]["evaluations"]]
    for s in stages:
        losses = [e["loss"] for e in s["evaluation"]["evaluations"]]
        bitwise = s["stage"] > 0 or int(ranks) <= 2
        if bitwise and losses != sharded:
            fail(f"stage {s['stage']}: validation losses {losses} differ from stage 1's {sharded}")
        if not bitwise and any(abs(a - b) > 1e-5 * abs(b) for a, b in zip(losses, sharded)):
            fail(f"stage 0: validation losses {losses} differ from stage 1's {sharded} by more "
                 "than 1e-5")
        evaluations = s["evaluation"]["evaluations"]
        t = s["time_to_target"]
        if not t["reached"]:
            fail(f"stage {s['stage']} did not reach {target}: losses "
                 f"{[e['loss'] for e in evaluations]}")
        expected = next(e["step"] for e in evaluations if e["loss"] <= target)
        if t["step"] != expected:
            fail(f"stage {s['stage']}: step to target {t['step']}, the first evaluation at or below "
                 f"{target} is after step {expected}")
        global_tokens = s["tokens_per_rank_per_step"] * s["ranks"]
        if abs(t["tokens"] - global_tokens * expected) > 1e-9 * t["tokens"]:
            fail(f"stage {s['stage']}: {t['tokens']} tokens to target, expected "
                 f"{global_tokens} x {expected}")
        if not t["seconds"] > 0:
            fail(f"stage {s['stage']}: {t['seconds']} seconds to target")
    step = stages[0]["time_to_target"]["step"]
    if step == 1 or step == int(steps):
        fail(f"the target is reached at step {step}: choose one reached inside the run, so that the "
             "check means something")
    if not summary["time_to_target"]["same_step"] or summary["time_to_target"]["stages_reached"] != 4:
        fail(f"summary.json's time_to_target: {summary['time_to_target']}")
    # The trace has each rank's evaluation after the traced step as a span of its own, per stage.
    if "output.trace=true" in sys.argv[8:]:
        with open(f"{out}/trace.json") as f:
            trace = json.load(f)
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        spans = [e for e in events if e.get("cat") == "evaluation"]
        if len(spans) != 4 * int(ranks) or {e["name"] for e in spans} != {"evaluation after step 3"}:
            fail(f"trace.json: evaluation spans {[(e['name'], e.get('pid')) for e in spans]}, "
                 "expected 'evaluation after step 3' once per rank and stage")
    if f"every stage reached it at step {step}" not in done.stdout:
        fail("the closing table does not say that every stage reached the target at one step")
    print(f"time to target {target}: every stage at step {step} on {ranks} ranks")


if __name__ == "__main__":
    main()
