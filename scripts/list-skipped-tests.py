#!/usr/bin/env python3
"""Lists the GoogleTest cases that skipped in the last ctest run of a build, with their reasons.

ctest counts a test executable whose cases skipped as passed; this reads ctest's full log
(BUILD/Testing/Temporary/LastTest.log) so that a skip is seen, and says which configuration ran
what. Prints one line per ctest test that had skipped cases.

    scripts/list-skipped-tests.py BUILD_DIR [LABEL]
"""
import os
import re
import sys

TEST = re.compile(r"^\d+/\d+ Testing: (\S+)")
SKIP_AT = re.compile(r": Skipped$")
SKIPPED_CASE = re.compile(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)$")


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


def main(build, label="this build"):
    log = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(log):
        print(f"{label}: no ctest log at {log}")
        return 1
    with open(log, errors="replace") as f:
        found = skipped_cases(f)
    if not found:
        print(f"{label}: no GoogleTest case skipped")
        return 0
    count = sum(len(cases) for cases in found.values())
    print(f"{label}: {count} GoogleTest case(s) skipped (ctest counts them as passed):")
    for test, cases in found.items():
        listed = "; ".join(f"{case} ({reason or 'no reason given'})" for case, reason in cases)
        print(f"  {test}: {listed}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
