#!/usr/bin/env python3
"""Where the time of scripts/test.sh went: one table per run, printed at its end.

    ci_times.py PHASE_LOG CONFIG=BUILD_DIR...

PHASE_LOG holds "CONFIG PHASE SECONDS [background]" lines (test.sh writes them: deps, kokkos,
configure, compile, waited, tests, kit) and "all elapsed SECONDS". A phase marked background ran
beside the others (the cuda build during the debian and openmp tests): it is shown with "bg" and
left out of the totals, which count the foreground's wait for it ("waited") instead. Each BUILD_DIR's last ctest log (Testing/Temporary/LastTest.log) gives the
seconds of every test: the ten slowest are listed, and the device kit's check (kit_bare_check),
which runs among the tests, is shown in the kit column too (its seconds are part of tests).
Prints Markdown, so that the table can be pasted into results/ci-time.md as it is.
"""
import os
import re
import sys

PHASES = ["deps", "kokkos", "configure", "compile", "waited", "tests", "kit"]
KIT_TESTS = ("kit_bare_check",)
TEST_START = re.compile(r"^\d+/\d+ Test: (\S+)$")
TEST_TIME = re.compile(r"^Test time =\s*([0-9.]+) sec$")


def read_phases(path):
    """({config: {phase: seconds}}, {(config, phase)} that ran in the background, elapsed or
    None), the configurations in the order they first appear."""
    phases, background, elapsed = {}, set(), None
    with open(path) as log:
        for line in log:
            words = line.split()
            if words[:2] == ["all", "elapsed"] and len(words) == 3:
                elapsed = int(words[2])
                continue
            if len(words) not in (3, 4):
                continue
            config, phase, seconds = words[:3]
            entry = phases.setdefault(config, {})
            entry[phase] = entry.get(phase, 0) + int(seconds)
            if len(words) == 4 and words[3] == "background":
                background.add((config, phase))
    return phases, background, elapsed


def read_test_times(build):
    """[(seconds, test)] of the build's last ctest run; [] where it has none."""
    log = os.path.join(build, "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(log):
        return []
    times, test = [], None
    with open(log, errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            match = TEST_START.match(line)
            if match:
                test = match.group(1)
                continue
            match = TEST_TIME.match(line)
            if match and test:
                times.append((float(match.group(1)), test))
                test = None
    return times


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    phases, background, elapsed = read_phases(argv[1])
    builds = dict(arg.split("=", 1) for arg in argv[2:])
    test_times = {config: read_test_times(build) for config, build in builds.items()
                  if config in phases}
    for config, times in test_times.items():
        kit = sum(seconds for seconds, test in times if test in KIT_TESTS)
        if kit and "kit" not in phases[config]:
            phases[config]["kit"] = round(kit)

    print("| configuration | " + " | ".join(PHASES) + " | total |")
    print("|---" * (len(PHASES) + 2) + "|")
    grand = 0
    for config, entry in phases.items():
        # The kit's seconds from ctest are inside tests already; a kit phase of its own is not.
        inside_tests = config in test_times and any(t in KIT_TESTS for _, t in test_times[config])
        total = sum(s for p, s in entry.items()
                    if not (p == "kit" and inside_tests) and (config, p) not in background)
        grand += total

        def cell(p):
            if p not in entry:
                return ""
            if (config, p) in background:
                return f"{entry[p]} bg"
            return str(entry[p]) + (" (in tests)" if p == "kit" and inside_tests else "")

        print(f"| {config} | " + " | ".join(cell(p) for p in PHASES) + f" | {total} |")
    print("| total | " + " | ".join("" for _ in PHASES) + f" | {grand} ({grand / 60:.1f} min) |")
    if elapsed is not None:
        print(f"\nscripts/test.sh ran {elapsed} s ({elapsed / 60:.1f} min) in all; \"bg\": in the "
              "background, beside the other configurations, not counted in the totals.")

    for config, times in test_times.items():
        if not times:
            continue
        slowest = sorted(times, reverse=True)[:10]
        print(f"\nTen slowest tests, {config} ({len(times)} tests, "
              f"{sum(s for s, _ in times):.0f} s of test time in all):\n")
        print("| test | seconds |")
        print("|---|---|")
        for seconds, test in slowest:
            print(f"| {test} | {seconds:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
