#!/usr/bin/env python3
"""Lists the GoogleTest cases that skipped in the last ctest run of a build, with their reasons,
and fails on a registered run that executed no case at all.

ctest counts a test executable whose cases skipped as passed; this reads ctest's full log
(BUILD/Testing/Temporary/LastTest.log) so that a skip is seen, and says which configuration ran
what. Prints one line per ctest test that had skipped cases; then the runs that skipped most of
their cases (more skipped than run), and the runs that ran none: such an entry looks like
coverage and is not, so the script exits 1 naming them (scripts/test.sh fails the configuration).
A test is registered only where it runs cases (tests/CMakeLists.txt: zm_add_mpi_test's NEEDS_BF16,
the rank counts each program is given).

    scripts/list-skipped-tests.py BUILD_DIR [LABEL]
"""
import os
import re
import sys

TEST = re.compile(r"^\d+/\d+ Testing: (\S+)")
SKIP_AT = re.compile(r": Skipped$")
SKIPPED_CASE = re.compile(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)$")
RAN_CASE = re.compile(r"^\[ +(OK|FAILED) +\] (\S+) \(\d+ ms\)$")
GTEST_START = re.compile(r"^\[==========\] Running \d+ tests? from")


def skipped_cases(log_lines):
    """{ctest test: [(case, reason)]} in the order they ran."""
    found = {}
    test, reason, expect_reason = None, "", False
    for line in log_lines:
        line = line.rstrip("\n")
        match = TEST.match(line)
        if match:
            test, reason, expect_reason = match.group(1), "", False
            continue
        if expect_reason:
            reason, expect_reason = line.strip(), False
            continue
        if SKIP_AT.search(line):
            expect_reason = True
            continue
        match = SKIPPED_CASE.match(line)
        if match and test:
            found.setdefault(test, []).append((match.group(1), reason))
            reason = ""
    return found


def executed_cases(log_lines):
    """{ctest test: (cases run, cases skipped)} of the tests whose output is a GoogleTest run's."""
    counts = {}
    test = None
    for line in log_lines:
        line = line.rstrip("\n")
        match = TEST.match(line)
        if match:
            test = match.group(1)
            continue
        if test is None:
            continue
        if GTEST_START.match(line):
            counts.setdefault(test, [0, 0])
        elif RAN_CASE.match(line) and test in counts:
            counts[test][0] += 1
        elif SKIPPED_CASE.match(line) and test in counts:
            counts[test][1] += 1
    return {test: tuple(c) for test, c in counts.items()}


def main(build, label="this build"):
    log = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(log):
        print(f"{label}: no ctest log at {log}")
        return 1
    with open(log, errors="replace") as f:
        lines = f.readlines()
    found = skipped_cases(lines)
    if not found:
        print(f"{label}: no GoogleTest case skipped")
    else:
        count = sum(len(cases) for cases in found.values())
        print(f"{label}: {count} GoogleTest case(s) skipped (ctest counts them as passed):")
        for test, cases in found.items():
            listed = "; ".join(f"{case} ({reason or 'no reason given'})" for case, reason in cases)
            print(f"  {test}: {listed}")
    counts = executed_cases(lines)
    mostly = [(t, ran, skipped) for t, (ran, skipped) in counts.items() if 0 < ran < skipped]
    if mostly:
        print(f"{label}: runs that skipped most of their cases (run / skipped):")
        for test, ran, skipped in mostly:
            print(f"  {test}: {ran} / {skipped}")
    empty = [t for t, (ran, skipped) in counts.items() if ran == 0]
    if empty:
        print(f"{label}: FAILED: {len(empty)} registered run(s) executed no GoogleTest case, only "
              f"skipped ones: {', '.join(empty)}. Register them only where they run cases.")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
