#!/usr/bin/env python3
"""A committed reference made wrong in one loss: `zeromini run --check-reference` must catch it.

    check_reference_miss.py ZEROMINI MPIEXEC ROOT REFERENCE WORK

Reads REFERENCE (inputs/references/*.toml), moves the loss of its last stage at its middle step
by 3 x its tolerance and runs that stage with the reference's own command (from ROOT, with
--check-reference in place of --write-reference): the run must exit 7 and name that stage and
step, and no other loss may miss. Then the same loss moved by half the tolerance must pass, so
the check is neither blind nor looser than the file says.
"""

import os
import re
import shlex
import subprocess
import sys
import tomllib

MISS_STATUS = 7  # kExitReferenceMiss, README's exit-status table


def fail(message):
    sys.exit(f"check_reference_miss: FAIL: {message}")


def moved(text, stage, index, factor):
    """REFERENCE's text with loss `index` of `stage` multiplied by `factor`."""
    line = re.search(rf"^stage{stage} = \[(.*)\]$", text, re.MULTILINE)
    if not line:
        fail(f"no line stage{stage} = [...] in the reference")
    values = [v.strip() for v in line.group(1).split(",")]
    values[index] = repr(float(values[index]) * factor)
    return text[:line.start(1)] + ", ".join(values) + text[line.end(1):]


def check(zeromini, mpiexec, root, reference, wrong, stage, out):
    """Runs the reference's command for one stage against `wrong`; returns (status, output)."""
    words = shlex.split(reference["command"])
    if words[:2] != ["mpiexec", "-n"] or words[3:5] != ["zeromini", "run"]:
        fail(f"unexpected command in the reference: {reference['command']}")
    command = [mpiexec, "-n", words[2], zeromini, "run"]
    rest = words[5:]
    i = 0
    while i < len(rest):
        if rest[i] == "--write-reference":
            i += 2
            continue
        if rest[i] == "--set" and rest[i + 1].startswith("zero.stage="):
            i += 2
            continue
        command.append(rest[i])
        i += 1
    command += ["--set", f"zero.stage={stage}", "--check-reference", wrong, "--out", out]
    done = subprocess.run(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    print(f"$ {shlex.join(command)}\n{done.stdout}--- exit {done.returncode}")
    return done.returncode, done.stdout


def main():
    zeromini, mpiexec, root, path, work = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    reference = tomllib.loads(text)
    tolerance = reference["tolerance"]["relative"]
    steps = reference["losses"]["steps"]
    stages = sorted(int(k[len("stage"):]) for k in reference["losses"] if k.startswith("stage"))
    stage, index = stages[-1], len(steps) // 2
    step = steps[index]

    wrong = os.path.join(work, "wrong.toml")
    with open(wrong, "w", encoding="utf-8") as f:
        f.write(moved(text, stage, index, 1 + 3 * tolerance))
    status, output = check(zeromini, mpiexec, root, reference, wrong, stage,
                           os.path.join(work, "miss"))
    if status != MISS_STATUS:
        fail(f"a loss 3 x the tolerance off: exit status {status}, expected {MISS_STATUS}")
    if not re.search(rf"MISS at stage {stage}, step {step}: expected loss [0-9.e+-]+, got "
                     rf"[0-9.e+-]+, relative difference [0-9.e+-]+ > tolerance", output):
        fail(f"the miss does not name stage {stage}, step {step}")
    if f"failed: 1 of {len(steps)} losses outside the relative tolerance" not in output:
        fail("another loss than the one moved missed, or the count is not reported")

    near = os.path.join(work, "near.toml")
    with open(near, "w", encoding="utf-8") as f:
        f.write(moved(text, stage, index, 1 + 0.5 * tolerance))
    status, output = check(zeromini, mpiexec, root, reference, near, stage,
                           os.path.join(work, "near"))
    if status != 0 or "passed:" not in output:
        fail(f"a loss half the tolerance off: exit status {status}, expected a pass")
    print(f"PASS: stage {stage}, step {step}: 3 x the tolerance caught, 0.5 x passed")


if __name__ == "__main__":
    main()
