"""The Kokkos profiling regions of one training step, as a Kokkos Tools library sees them.

    python3 test_kokkos_regions.py --zeromini BIN --tool LIB --mpiexec MPIEXEC --ranks N
                                   --deck DECK --work DIR

Runs `zeromini run DECK` at N ranks with the tool library kokkos_region_recorder loaded
(KOKKOS_TOOLS_LIBS for Kokkos >= 4, KOKKOS_PROFILE_LIBRARY for Kokkos 3; both are set), which
writes every region push and pop and every kernel launch of rank r to DIR/regions.r.log. Then,
for rank 0's log:
- the regions nest (every pop closes an open region, none is left open at the end);
- there is one zeromini::step region per step of the deck;
- the region tree of the second step (zeromini:: regions only; kernels ignored) is exactly the
  one of the spec (notes: "Kokkos profiling regions"), built from the deck's model.layers and
  train.grad_accum;
- kernels ran inside that step, and every kernel of the whole run is named: "zeromini::..." (the
  kernels in src/kernels) or "Kokkos..." (Kokkos and Kokkos Kernels). An unnamed kernel shows up
  under a mangled type name and fails the test.
"""
import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tomllib

STEP = "zeromini::step"
KERNEL_PREFIXES = ("zeromini::", "Kokkos")


class Region:
    def __init__(self, name, parent=None):
        self.name = name
        self.parent = parent
        self.children = []
        self.kernels = 0  # kernels launched directly inside, outside child regions

    def add(self, name):
        child = Region(name, self)
        self.children.append(child)
        return child

    def kernels_inside(self):
        return self.kernels + sum(child.kernels_inside() for child in self.children)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


def parse_log(path):
    """The log as a tree under a nameless root; (root, kernel names, nesting errors)."""
    root = Region(None)
    current = root
    kernels = []
    errors = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            event, _, name = line.partition(" ")
            if event == "push":
                current = current.add(name)
            elif event == "pop":
                if current is root:
                    errors.append(f"{path}:{number}: a pop with no region open")
                else:
                    current = current.parent
            elif event == "kernel":
                kernels.append(name)
                current.kernels += 1
            else:
                errors.append(f"{path}:{number}: not an event: {line!r}")
    open_regions = []
    while current is not root:
        open_regions.append(current.name)
        current = current.parent
    if open_regions:
        still_open = " > ".join(reversed(open_regions))
        errors.append(f"{path}: regions still open at the end: {still_open}")
    return root, kernels, errors


def zeromini_tree(region):
    """(name, [subtrees]) of the zeromini:: regions under `region`; other regions (Kokkos
    Kernels' own, say) are transparent: their zeromini:: regions count as their parent's."""
    children = []
    for child in region.children:
        if child.name.startswith("zeromini::"):
            children.append(zeromini_tree(child))
        else:
            children.extend(zeromini_tree(child)[1])
    return (region.name, children)


def expected_step_tree(layers, grad_accum):
    """The spec's tree of one optimizer step. Micro-steps run forward then backward, one after
    the other; finish_backward closes the last micro-step's backward."""
    def leaf(name):
        return (f"zeromini::{name}", [])

    forward = [leaf("forward embedding")]
    forward += [leaf(f"forward block {i}") for i in range(layers)]
    forward += [leaf("forward final_norm"), leaf("forward head")]
    backward = [leaf("backward head"), leaf("backward final_norm")]
    backward += [leaf(f"backward block {i}") for i in reversed(range(layers))]
    backward.append(leaf("backward embedding"))
    children = []
    for micro in range(grad_accum):
        children.append(("zeromini::forward", list(forward)))
        last = micro == grad_accum - 1
        children.append(("zeromini::backward",
                         backward + ([leaf("finish_backward")] if last else [])))
    children += [leaf("grad_stats"), leaf("optimizer")]
    return (STEP, children)


def render(tree, depth=0):
    name, children = tree
    lines = ["  " * depth + name]
    for child in children:
        lines += render(child, depth + 1)
    return lines


def foreign_regions(root):
    return sorted({r.name for r in root.walk() if r.name and not r.name.startswith("zeromini::")})


def run_zeromini(args, work, log_pattern):
    env = dict(os.environ)
    env["KOKKOS_TOOLS_LIBS"] = args.tool
    env["KOKKOS_PROFILE_LIBRARY"] = args.tool
    env["ZEROMINI_REGION_LOG"] = log_pattern
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    command = [args.mpiexec, "-n", str(args.ranks), args.zeromini, "run", args.deck,
               "--out", os.path.join(work, "out")]
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    if result.returncode != 0:
        print(result.stdout)
        raise SystemExit(f"FAIL: {' '.join(command)} exited {result.returncode}")
    return result.stdout


def check_kernels(kernels, failures):
    if not kernels:
        failures.append("the tool saw no kernel at all")
    unnamed = sorted({k for k in kernels if not k.startswith(KERNEL_PREFIXES)})
    if unnamed:
        failures.append("kernels named neither zeromini::... nor Kokkos... (unnamed kernels "
                        "show up as type names; name them in src/kernels):\n    " +
                        "\n    ".join(unnamed))


def check_step_tree(step, deck, failures):
    expected = expected_step_tree(deck["model"]["layers"], deck["train"].get("grad_accum", 1))
    seen = zeromini_tree(step)
    if seen != expected:
        diff = difflib.unified_diff(render(expected), render(seen), "expected (spec)",
                                    f"seen (second {STEP})", n=1000, lineterm="")
        failures.append(f"the region tree of the second {STEP} differs from the spec:\n" +
                        "\n".join(diff))


def main():
    parser = argparse.ArgumentParser()
    for option in ("--zeromini", "--tool", "--mpiexec", "--deck", "--work"):
        parser.add_argument(option, required=True)
    parser.add_argument("--ranks", type=int, default=1)
    args = parser.parse_args()
    with open(args.deck, "rb") as f:
        deck = tomllib.load(f)

    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run_zeromini(args, work, os.path.join(work, "regions.%r.log"))
    logs = sorted(name for name in os.listdir(work) if name.endswith(".log"))
    print(f"logs: {', '.join(logs)}")
    if len(logs) != args.ranks:
        raise SystemExit(f"FAIL: expected {args.ranks} logs (one per rank) in {work}, found "
                         f"{len(logs)}: is the tool loaded (KOKKOS_TOOLS_LIBS, "
                         f"KOKKOS_PROFILE_LIBRARY)?")

    root, kernels, failures = parse_log(os.path.join(work, "regions.0.log"))
    steps = [r for r in root.walk() if r.name == STEP]
    print(f"rank 0: {len(kernels)} kernels, {len(steps)} {STEP} regions")
    if foreign_regions(root):
        print("regions not zeromini's (transparent here):", ", ".join(foreign_regions(root)))
    if len(steps) != deck["train"]["steps"]:
        failures.append(f"{len(steps)} {STEP} regions, expected one per step: "
                        f"{deck['train']['steps']}")
    if len(steps) >= 2:
        check_step_tree(steps[1], deck, failures)
        if steps[1].kernels_inside() == 0:
            failures.append(f"the tool saw no kernel inside the second {STEP}")
        print("second step, seen:\n" + "\n".join(render(zeromini_tree(steps[1]))))
    else:
        failures.append(f"no second {STEP} region in rank 0's log")

    check_kernels(kernels, failures)

    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(f"ok: the second {STEP}'s region tree is the spec's; every kernel is named")
    return 0


if __name__ == "__main__":
    sys.exit(main())
