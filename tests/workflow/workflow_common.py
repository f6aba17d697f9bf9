"""What the workflow tests share: the paths, the stand-in zeromini and the test bases.

fake_zeromini.py is a stand-in that writes a summary.json in zeromini's format; fake_binary wraps
it as an executable 'zeromini'. Sweep files are read by the real zeromini (`zeromini sweep
expand`), for sweep.py and for the stand-in: ZEROMINI_SWEEP_BIN or ZEROMINI_BIN, else
build/bin/zeromini; without one the tests that read sweep files (SweepDir) are skipped, and they
fail when a variable names a file that is not an executable. Importing this module puts scripts/
on sys.path, so the tests can import collect and sweep from here.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

import collect  # noqa: E402,F401  (for the tests that import it from here)
import sweep  # noqa: E402

FAKE = os.path.join(HERE, "fake_zeromini.py")
SWEEP_BIN_GIVEN = os.environ.get("ZEROMINI_SWEEP_BIN") or os.environ.get("ZEROMINI_BIN")
SWEEP_BIN = SWEEP_BIN_GIVEN or os.path.join(ROOT, "build", "bin", "zeromini")
TINY = os.path.join(ROOT, "inputs", "tiny-test.toml")


def built_modules(binary=None):
    """The modules a zeromini was built with (its --version's `modules` line), as a set."""
    res = subprocess.run([binary or SWEEP_BIN, "--version"], capture_output=True, text=True,
                         check=True)
    line = re.search(r"^\s*modules\s+(.*)$", res.stdout, re.M)
    if line is None:
        raise AssertionError(f"no modules line in {binary or SWEEP_BIN} --version:\n{res.stdout}")
    return set() if line.group(1).strip() == "none" else set(line.group(1).split(", "))
PYTHON = sys.executable

try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def fake_binary(directory):
    """An executable 'zeromini' that runs fake_zeromini.py with this Python (which hands
    `sweep expand` to the real zeromini)."""
    path = os.path.join(directory, "zeromini")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"#!/bin/sh\nFAKE_ZEROMINI_REAL={shlex.quote(SWEEP_BIN)} exec {PYTHON} {FAKE} "
                "\"$@\"\n")
    os.chmod(path, 0o755)
    return path


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))
    return path


def run(args, env=None, check=True):
    res = subprocess.run([PYTHON] + args, capture_output=True, text=True, env=env)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {res.returncode}:\n{res.stdout}\n"
                             f"{res.stderr}")
    return res


SWEEP = """\
    name = "t"
    deck = "{deck}"
    stages = [0, 3]
    nodes = [1, 2]
    ranks_per_node = [2]
    repeat = 2
    steps = 4
    set = ["output.log_every=1"]
    models = [
      {{ name = "small", set = ["model.layers=2"] }},
      {{ name = "wide", set = ["model.dim=64", "model.heads=8"] }},
    ]

    [slurm]
    partition = "gpu"
    account = "proj123"
    time = "00:20:00"
    extra = ["--exclusive", "#SBATCH --mail-type=NONE"]
    env = {{ NCCL_DEBUG = "WARN" }}
"""


class WorkDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zeromini-workflow-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def sweep_file(self, text=SWEEP, name="t.toml", **fmt):
        fmt.setdefault("deck", TINY)
        return write(os.path.join(self.tmp, name), text.format(**fmt))


class SweepDir(WorkDir):
    """Tests that read sweep files, with the real zeromini."""

    def setUp(self):
        super().setUp()
        if not os.access(SWEEP_BIN, os.X_OK):
            if SWEEP_BIN_GIVEN:
                self.fail(f"{SWEEP_BIN}: not an executable")
            self.skipTest(f"no {SWEEP_BIN} to read sweep files (build zeromini, or set "
                          "ZEROMINI_SWEEP_BIN)")

    def load(self, text=SWEEP):
        return sweep.load_sweep(self.sweep_file(text), SWEEP_BIN)

    def expand(self, path, *extra):
        return subprocess.run([SWEEP_BIN, "sweep", "expand", path, *extra], capture_output=True,
                              text=True)

    def assert_sweep_py_rejects(self, text, error):
        """sweep.py --dry-run on a sweep file of this text exits 2, its whole standard error
        `sweep: error: <the file>:<error>`."""
        path = self.sweep_file(text)
        res = run([os.path.join(SCRIPTS, "sweep.py"), path, "--dry-run", "--bin", SWEEP_BIN],
                  check=False)
        self.assertEqual(res.returncode, 2)
        self.assertEqual(res.stderr, f"sweep: error: {path}:{error}\n")
