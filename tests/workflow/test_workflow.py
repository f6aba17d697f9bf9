#!/usr/bin/env python3
"""Tests of the scaling-study scripts: scripts/sweep.py, scripts/collect.py, scripts/plot.py.

    python3 tests/workflow/test_workflow.py [-v]

Most tests use fake_zeromini.py, a stand-in that writes a summary.json in zeromini's format, and
fake sbatch/squeue commands; the local runs use MPICH's mpiexec when it is installed. Sweep files
are read by the real zeromini (`zeromini sweep expand`), for sweep.py and for the stand-in:
ZEROMINI_SWEEP_BIN or ZEROMINI_BIN, else build/bin/zeromini; without one the tests that read sweep
files are skipped (they fail when a variable names a file that is not an executable). With
ZEROMINI_BIN set to the real executable, RealZerominiTest also runs a small sweep of the real
program with --local and checks collect.py's and plot.py's results.
"""

import csv
import io
import json
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

import collect  # noqa: E402
import sweep  # noqa: E402

FAKE = os.path.join(HERE, "fake_zeromini.py")
SWEEP_BIN_GIVEN = os.environ.get("ZEROMINI_SWEEP_BIN") or os.environ.get("ZEROMINI_BIN")
SWEEP_BIN = SWEEP_BIN_GIVEN or os.path.join(ROOT, "build", "bin", "zeromini")
TINY = os.path.join(ROOT, "inputs", "tiny-test.toml")
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
    repeats = 2
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


class SweepExpandTest(SweepDir):
    """`zeromini sweep expand` itself: JSON for good files, file:line and key for bad ones."""

    def test_example_sweep_files(self):
        directory = os.path.join(ROOT, "inputs", "sweeps")
        counts = {"hybrid-local.toml": 4 * 2 * 2, "perlmutter-example.toml": 4 * 4 * 2 * 3,
                  "quickstart-local.toml": 4 * 2 * 2 * 2}   # the last: checked below
        self.assertEqual(sorted(f for f in os.listdir(directory) if f.endswith(".toml")),
                         sorted(counts))
        for name, count in counts.items():
            res = self.expand(os.path.join(directory, name), "--root", ROOT)
            self.assertEqual(res.returncode, 0, res.stderr)
            data = json.loads(res.stdout)
            points = data["points"]
            self.assertEqual(len(points), count, name)
            self.assertEqual(len({p["name"] for p in points}), count, name)
            for p in points:
                self.assertTrue(os.path.isfile(p["deck"]), p["deck"])
                self.assertIsNone(p["problem"])
            self.assertTrue(os.path.isfile(data["sweep"]["slurm"]["template"]))
            if name == "hybrid-local.toml":
                self.assertEqual({(p["shard_size"], p["recompute"]) for p in points},
                                 {(0, "none"), (0, "blocks"), (2, "none"), (2, "blocks")})
                self.assertIn("hybrid-local-s3-n1x4-quickstart-shard2-rcblocks-r0",
                              {p["name"] for p in points})
            else:   # sweeps without the deck axes: names and overrides as before them
                self.assertEqual({(p["shard_size"], p["recompute"]) for p in points},
                                 {(None, None)})
        self.assertEqual(points[0]["name"], "quickstart-local-s0-n1x1-quickstart-r0")
        self.assertEqual(points[-1]["name"], "quickstart-local-s3-n1x2-l8d256-r1")
        self.assertEqual(points[-1]["overrides"],
                         ["model.layers=8", "model.dim=256", "model.heads=8", "model.seq_len=128",
                          "output.log_every=5", "zero.stage=3", "train.steps=20"])

    def test_errors_name_the_file_line_and_key(self):
        for text, pattern in (
                ('deck = "{deck}"\nstage = [0]\n', r"t\.toml:2:1: unknown key 'stage' \(known: "),
                ('deck = "{deck}"\n\nstages = [1, 4]\n',
                 r"t\.toml:3:14: stages: 4 is not a ZeRO stage"),
                ('deck = "{deck}"\n[slurm]\ntime = 20\n', r"t\.toml:3:8: slurm\.time = 20: "
                 "expected a string"),
                ('a = 1\nb = "open\n', r"t\.toml:2:\d+: TOML syntax error"),
                ('a = 1\na = 2\n', r"t\.toml:2:\d+: TOML syntax error: .*redefine"),
                ('stages = [0]\n', r"t\.toml: deck: required")):
            res = self.expand(self.sweep_file(text))
            self.assertEqual(res.returncode, 1, text)
            self.assertEqual(res.stdout, "")
            self.assertRegex(res.stderr, "^zeromini: error: .*" + pattern)

    def test_relative_paths(self):
        # The deck beside the sweep file, the template relative to the repository (--root).
        shutil.copy(TINY, os.path.join(self.tmp, "deck.toml"))
        path = self.sweep_file('deck = "deck.toml"\n[slurm]\ntemplate = '
                               '"scripts/slurm/cpu-partition.sbatch"\n')
        res = self.expand(path, "--root", ROOT)
        self.assertEqual(res.returncode, 0, res.stderr)
        cfg = json.loads(res.stdout)["sweep"]
        self.assertEqual(cfg["deck"], os.path.join(self.tmp, "deck.toml"))
        self.assertEqual(cfg["slurm"]["template"],
                         os.path.join(ROOT, "scripts", "slurm", "cpu-partition.sbatch"))
        res = self.expand(path)
        self.assertRegex(res.stderr, r't\.toml:3:12: slurm\.template = "scripts/slurm/cpu-partition'
                         r'\.sbatch": no such file')


class SweepFileTest(SweepDir):
    def check(self, text, pattern):
        path = self.sweep_file(text)
        with self.assertRaisesRegex(sweep.SweepError, "^" + re.escape(path) + pattern):
            sweep.load_sweep(path, SWEEP_BIN)

    def test_errors(self):
        self.check('deck = "{deck}"\nstage = [0]\n', r":2:1: unknown key 'stage'")
        self.check('stages = [0]\n', r": deck: required")
        self.check('deck = "{deck}"\nstages = [4]\n', r":2:11: stages: 4 is not a ZeRO stage")
        self.check('deck = "{deck}"\nscaling = "strong"\n', r":2:11: .*needs global_batch")
        self.check('deck = "{deck}"\nglobal_batch = 8\n', r":2:16: global_batch is for .*strong")
        self.check('deck = "{deck}"\nmodels = [{{name = "a-b"}}]\n',
                   r":2:19: models\[0\]\.name = \"a-b\": .*no '-'")
        self.check('deck = "{deck}"\nmodels = [{{name = "a"}}, {{name = "a"}}]\n',
                   r":2:33: models\[1\]\.name = \"a\": the name is used twice")
        self.check('deck = "{deck}"\nset = ["layers=3"]\n', r":2:8: set: \"layers=3\" is not an "
                   r"override \(section\.key=value\)")
        self.check('deck = "no/such.toml"\n', r':1:8: deck = "no/such\.toml": no such file')
        self.check('deck = "{deck}"\nrepeats = 0\n',
                   r":2:11: repeats = 0: expected an integer >= 1")
        self.check('deck = "{deck}"\nnodes = [1, 1.5]\n', r":2:13: nodes: 1\.5: expected integers")
        self.check('deck = "{deck}"\n[slurm]\nlauncher = "aprun"\n',
                   r':3:12: slurm\.launcher = "aprun": expected "srun" or "mpiexec"')
        self.check('deck = "{deck}"\n[slurm]\nenv = {{ 1X = "a" }}\n',
                   r":3:9: slurm\.env: '1X' is not an environment variable name")
        self.check('deck = "{deck}"\n[local]\nlauncher = "aprun"\n', r":3:12: local\.launcher")

    def test_points_and_names(self):
        cfg, points = self.load()
        # 2 models x 2 node counts x 1 rpn x 2 stages x 2 repeats
        self.assertEqual(len(points), 16)
        names = [p["name"] for p in points]
        self.assertEqual(len(set(names)), 16)
        self.assertIn("t-s3-n2x2-wide-r1", names)
        p = next(p for p in points if p["name"] == "t-s3-n2x2-wide-r1")
        self.assertEqual((p["stage"], p["nodes"], p["ranks_per_node"], p["ranks"], p["repeat"]),
                         (3, 2, 2, 4, 1))
        self.assertEqual(p["overrides"], ["model.dim=64", "model.heads=8", "output.log_every=1",
                                          "zero.stage=3", "train.steps=4"])

    def test_strong_scaling_divides_the_global_batch(self):
        text = 'deck = "{deck}"\nstages = [1]\nranks_per_node = [1, 2, 3]\n' \
               'scaling = "strong"\nglobal_batch = 8\n'
        cfg, points = self.load(text)
        self.assertEqual(cfg["global_batch"], 8)
        by_ranks = {p["ranks"]: p for p in points}
        self.assertIn("train.micro_batch=8", by_ranks[1]["overrides"])
        self.assertIn("train.micro_batch=4", by_ranks[2]["overrides"])
        self.assertIsNone(by_ranks[2]["problem"])
        self.assertRegex(by_ranks[3]["problem"], "not divisible by 3")


class JobScriptTest(SweepDir):
    def render(self, template=None):
        cfg, points = self.load()
        if template:
            cfg["slurm"]["template"] = template
        point = next(p for p in points if p["name"] == "t-s0-n2x2-small-r0")
        with open(cfg["slurm"]["template"], encoding="utf-8") as f:
            text = f.read()
        return sweep.render_job(point, cfg, "/runs/t/t-s0-n2x2-small-r0", "/opt/zeromini",
                                text, cfg["slurm"]["template"])

    def sbatch_lines(self, script):
        lines = script.splitlines()
        header = lines[:next(i for i, l in enumerate(lines)
                             if i and l.strip() and not l.startswith("#"))]
        return [l for l in header if l.startswith("#SBATCH")]

    def test_generic_template(self):
        script = self.render()
        sb = self.sbatch_lines(script)
        for want in ("--job-name=t-s0-n2x2-small-r0", "--nodes=2", "--ntasks-per-node=2",
                     "--time=00:20:00", "--partition=gpu", "--account=proj123",
                     "--output=/runs/t/t-s0-n2x2-small-r0/slurm-%j.out", "--exclusive",
                     "--mail-type=NONE", "--gpus-per-task=1", "--signal=B:TERM@120"):
            self.assertEqual(sum(want in l for l in sb), 1, f"{want} in {sb}")
        # The template's own values for what the sweep sets are gone.
        self.assertNotIn("#SBATCH --job-name=zeromini", script)
        self.assertNotIn("#SBATCH --ntasks-per-node=4", script)
        self.assertIn("export ZEROMINI_OUT=/runs/t/t-s0-n2x2-small-r0", script)
        self.assertIn("export ZEROMINI_BIN=/opt/zeromini", script)
        self.assertIn("export NCCL_DEBUG=WARN", script)
        self.assertIn(f"set -- {TINY} --set model.layers=2 --set output.log_every=1 "
                      "--set zero.stage=0 --set train.steps=4", script)
        res = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        self.assertEqual(res.returncode, 0, res.stderr)

    def test_site_templates(self):
        for name in ("perlmutter-gpu.sbatch", "cpu-partition.sbatch"):
            script = self.render(os.path.join(SCRIPTS, "slurm", name))
            sb = self.sbatch_lines(script)
            self.assertEqual(sum("--nodes=" in l for l in sb), 1, name)
            self.assertEqual(sum("--job-name=" in l for l in sb), 1, name)
            self.assertIn("set -- ", script)
            self.assertLess(script.index("set -- "), script.index("exec bash"), name)
            res = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
            self.assertEqual(res.returncode, 0, res.stderr)


def summary_for(directory, stage, ranks, steps=4, **stage_fields):
    s = {"stage": stage, "ranks": ranks, "params": 10, "steps": steps,
         "stopped_non_finite": False, "tokens_per_second_per_rank": 100.0}
    s.update(stage_fields)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"deck": "d", "model": {}, "micro_batch": 2, "grad_accum": 1,
                   "stages": [s]}, f)


class FinishedTest(WorkDir):
    def test_summary_status(self):
        point = {"stage": 2, "ranks": 4, "steps": 4}
        d = os.path.join(self.tmp, "p")
        self.assertEqual(sweep.summary_status(d, point), "no summary.json")
        summary_for(d, 2, 4)
        self.assertEqual(sweep.summary_status(d, point), "finished")
        summary_for(d, 2, 2)
        self.assertRegex(sweep.summary_status(d, point), "2 ranks, expected 4")
        summary_for(d, 1, 4)
        self.assertRegex(sweep.summary_status(d, point), r"stages \[1\], expected \[2\]")
        summary_for(d, 2, 4, steps=3)
        self.assertRegex(sweep.summary_status(d, point), "stopped early")
        summary_for(d, 2, 4, stopped_non_finite=True)
        self.assertRegex(sweep.summary_status(d, point), "non-finite")
        summary_for(d, 2, 4, tokens_per_second_per_rank=None)
        self.assertRegex(sweep.summary_status(d, point), "no throughput")
        with open(os.path.join(d, "summary.json"), "w") as f:
            f.write('{"stages": [')
        self.assertRegex(sweep.summary_status(d, point), "unreadable")


class DryRunTest(SweepDir):
    def test_dry_run_writes_nothing_and_prints_every_script(self):
        out_dir = os.path.join(self.tmp, "sweep")
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(), "--dir", out_dir,
                   "--dry-run", "--bin", fake_binary(self.tmp)])
        self.assertFalse(os.path.exists(out_dir))
        self.assertEqual(res.stdout.count("#!/bin/bash"), 16)
        self.assertEqual(res.stdout.count("# ---- command: sbatch --parsable "), 16)
        self.assertIn("#SBATCH --job-name=t-s3-n1x2-wide-r1\n", res.stdout)

    def test_only_and_list(self):
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(), "--dir",
                   os.path.join(self.tmp, "s"), "--list", "--only", "n2x2-small", "--bin",
                   SWEEP_BIN])
        self.assertIn("4 points", res.stdout)
        self.assertEqual(res.stdout.count(": to run (no summary.json)"), 4)

    def test_bad_sweep_file_exits_2(self):
        path = self.sweep_file('deck = "{deck}"\nstages = [9]\n')
        res = run([os.path.join(SCRIPTS, "sweep.py"), path, "--dry-run", "--bin", SWEEP_BIN],
                  check=False)
        self.assertEqual(res.returncode, 2)
        self.assertEqual(res.stderr, f"sweep: error: {path}:2:11: stages: 9 is not a ZeRO stage "
                         "(0..3 or \"all\")\n")

    def test_no_zeromini_exits_2(self):
        # zeromini reads the sweep file, so even --dry-run needs it.
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(), "--dry-run", "--bin",
                   "/nonexistent/zeromini"], check=False)
        self.assertEqual(res.returncode, 2)
        self.assertIn("sweep: error: /nonexistent/zeromini: no such executable", res.stderr)
        self.assertEqual(res.stdout, "")


class SubmitTest(SweepDir):
    """sbatch and squeue replaced by scripts that log their arguments."""

    def setUp(self):
        super().setUp()
        self.bin_dir = os.path.join(self.tmp, "bin")
        os.makedirs(self.bin_dir)
        self.log = os.path.join(self.tmp, "commands.log")
        self.queue = os.path.join(self.tmp, "queue")   # squeue prints this file
        write(os.path.join(self.bin_dir, "sbatch"), f"""\
            #!/bin/sh
            echo "sbatch $* (in $PWD)" >> {self.log}
            n=$(wc -l < {self.log})
            echo "$((1000 + n));testcluster"
            """)
        write(os.path.join(self.bin_dir, "squeue"), f"""\
            #!/bin/sh
            echo "squeue $*" >> {self.log}
            cat {self.queue} 2>/dev/null
            """)
        for name in ("sbatch", "squeue"):
            os.chmod(os.path.join(self.bin_dir, name), 0o755)
        self.env = dict(os.environ, PATH=self.bin_dir + os.pathsep + os.environ["PATH"])
        self.zeromini = fake_binary(self.tmp)

    def sweep(self, *extra):
        text = 'deck = "{deck}"\nstages = [1, 2]\nranks_per_node = [2]\n'
        return run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir",
                    os.path.join(self.tmp, "s"), "--bin", self.zeromini, *extra], env=self.env)

    def test_submit_queue_and_finish(self):
        res = self.sweep()
        self.assertIn("t-s1-n1x2-base-r0: submitted job 1001", res.stdout)
        self.assertIn("t-s2-n1x2-base-r0: submitted job 1002", res.stdout)
        point_dir = os.path.join(self.tmp, "s", "t-s1-n1x2-base-r0")
        with open(os.path.join(point_dir, "point.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["job_id"], "1001")
        self.assertEqual(meta["ranks"], 2)
        with open(self.log) as f:
            self.assertIn(f"sbatch --parsable {point_dir}/job.sbatch (in {point_dir})",
                          f.read())
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "s", "planned-base.csv")))
        # Still queued: nothing is submitted again.
        with open(self.queue, "w") as f:
            f.write("RUNNING\n")
        res = self.sweep()
        self.assertIn("t-s1-n1x2-base-r0: in the queue (job 1001)", res.stdout)
        self.assertNotIn("submitted", res.stdout)
        # Gone from the queue without results: submitted again.
        os.remove(self.queue)
        summary_for(point_dir, 1, 2, tokens_per_second_per_rank=None)
        res = self.sweep("--only", "s1-")
        self.assertIn("t-s1-n1x2-base-r0: submitted job", res.stdout)
        # Finished: skipped, unless --force.
        summary_for(point_dir, 1, 2, steps=5)
        res = self.sweep("--only", "s1-")
        self.assertIn("t-s1-n1x2-base-r0: finished", res.stdout)
        res = self.sweep("--only", "s1-", "--force")
        self.assertIn("t-s1-n1x2-base-r0: submitted job", res.stdout)

    def test_sbatch_failure_is_reported(self):
        write(os.path.join(self.bin_dir, "sbatch"), "#!/bin/sh\necho 'sbatch: error: "
              "Invalid account' >&2\nexit 1\n")
        res = run([os.path.join(SCRIPTS, "sweep.py"),
                   self.sweep_file('deck = "{deck}"\nstages = [0]\n'), "--dir",
                   os.path.join(self.tmp, "s"), "--bin", self.zeromini], env=self.env,
                  check=False)
        self.assertEqual(res.returncode, 1)
        self.assertIn("sbatch failed (exit 1): sbatch: error: Invalid account", res.stdout)


@unittest.skipUnless(shutil.which("mpiexec"), "no mpiexec")
class LocalRunTest(SweepDir):
    def test_local_runs_skip_finished_and_collect(self):
        zeromini = fake_binary(self.tmp)
        log = os.path.join(self.tmp, "zeromini.log")
        env = dict(os.environ, FAKE_ZEROMINI_LOG=log)
        text = 'deck = "{deck}"\nstages = [0, 3]\nranks_per_node = [1, 2]\nsteps = 4\n' \
               'models = [{{name = "m"}}]\n'
        sweep_file = self.sweep_file(text)
        out = os.path.join(self.tmp, "s")
        args = [os.path.join(SCRIPTS, "sweep.py"), sweep_file, "--dir", out, "--bin", zeromini,
                "--local"]
        res = run(args, env=env)
        self.assertEqual(res.stdout.count(": done in "), 4, res.stdout)
        with open(log) as f:
            runs = [l for l in f if l.startswith("run ")]
        self.assertEqual(len(runs), 2 + 2 * 2)   # the 2-rank points start two processes
        res = run(args, env=env)
        self.assertEqual(res.stdout.count(": finished"), 4, res.stdout)
        with open(log) as f:
            self.assertEqual(len([l for l in f if l.startswith("run ")]), 6)
        env_file = os.path.join(out, "t-s3-n1x2-m-r0", "job.env")
        with open(env_file) as f:
            self.assertIn("launcher=mpiexec\n", f.read())
        rows = collect.collect([out])
        self.assertEqual(len(rows), 4)
        row = next(r for r in rows if r["point"] == "t-s3-n1x2-m-r0")
        self.assertEqual((row["stage"], row["ranks"], row["nodes"], row["ranks_per_node"],
                          row["model"], row["status"]), (3, 2, 1, 2, "m", "completed"))

    def test_a_failing_run_is_reported(self):
        zeromini = fake_binary(self.tmp)
        env = dict(os.environ, FAKE_ZEROMINI_EXIT="3")
        res = run([os.path.join(SCRIPTS, "sweep.py"),
                   self.sweep_file('deck = "{deck}"\nstages = [1]\n'), "--dir",
                   os.path.join(self.tmp, "s"), "--bin", zeromini, "--local"], env=env,
                  check=False)
        self.assertEqual(res.returncode, 1)
        self.assertIn("FAILED (exit 3", res.stdout)


class CollectTest(WorkDir):
    def make_runs(self):
        zeromini = fake_binary(self.tmp)
        top = os.path.join(self.tmp, "runs")
        # Two sweep points (with point.json), one plain job (job.env only), one stage="all" run.
        for name, stage, ranks, repeat, steps_run in (("p-s1-n2x2-m-r0", 1, 4, 0, 4),
                                                       ("p-s1-n2x2-m-r1", 1, 4, 1, 2)):
            d = os.path.join(top, "sweep", name)
            env = dict(os.environ, SLURM_NTASKS=str(ranks),
                       FAKE_ZEROMINI_STEPS_RUN=str(steps_run))
            subprocess.run([zeromini, "run", TINY, "--set", f"zero.stage={stage}", "--set",
                            "train.steps=4", "--out", d], env=env, check=True)
            with open(os.path.join(d, "point.json"), "w") as f:
                json.dump({"sweep": "p", "name": name, "model": "m", "nodes": 2,
                           "ranks_per_node": 2, "repeat": repeat, "scaling": "weak",
                           "steps": 4, "job_id": f"77{repeat}"}, f)
        d = os.path.join(top, "zeromini-4242")
        subprocess.run([zeromini, "run", TINY, "--set", "zero.stage=all", "--out", d],
                       env=dict(os.environ, SLURM_NTASKS="2"), check=True)
        with open(os.path.join(d, "job.env"), "w") as f:
            f.write("job_id=4242\nnodes=1\nntasks=2\n")
        os.makedirs(os.path.join(top, "broken"))
        with open(os.path.join(top, "broken", "summary.json"), "w") as f:
            f.write("not json")
        return top

    def test_rows_and_columns(self):
        top = self.make_runs()
        warnings = []
        rows = collect.collect([top], warn=warnings.append)
        self.assertEqual(len(rows), 2 + 4)
        self.assertEqual(len(warnings), 1)
        self.assertIn("broken/summary.json: not a zeromini summary", warnings[0])
        buf = io.StringIO()
        collect.write_csv(rows, buf)
        buf.seek(0)
        table = list(csv.DictReader(buf))
        header = list(table[0].keys())
        for col in ("deck", "stage", "ranks", "nodes", "ranks_per_node", "threads_per_rank",
                    "model", "repeat",
                    "job_id", "tokens_per_second_per_rank", "time_step_s", "time_forward_s",
                    "time_backward_s", "time_comm_wait_s", "time_optimizer_s",
                    "mem_parameters_bytes", "mem_gradients_bytes", "mem_optimizer_bytes",
                    "mem_activations_bytes", "mem_comm_buffers_bytes", "mem_workspace_bytes",
                    "mem_total_bytes", "mem_model_states_bytes", "comm_all_reduce_bytes",
                    "comm_reduce_scatter_bytes", "comm_all_gather_bytes",
                    "comm_broadcast_bytes", "comm_barrier_bytes", "params", "status"):
            self.assertIn(col, header)
        swept = [r for r in table if r["sweep"] == "p"]
        self.assertEqual([(r["repeat"], r["job_id"], r["status"]) for r in swept],
                         [("0", "770", "completed"), ("1", "771", "stopped_early")])
        self.assertEqual((swept[0]["nodes"], swept[0]["ranks_per_node"], swept[0]["ranks"]),
                         ("2", "2", "4"))
        plain = [r for r in table if r["point"] == "zeromini-4242"]
        self.assertEqual([r["stage"] for r in plain], ["0", "1", "2", "3"])
        self.assertEqual({(r["job_id"], r["nodes"], r["ranks_per_node"]) for r in plain},
                         {("4242", "1", "2")})
        r = plain[3]
        self.assertEqual(int(r["mem_model_states_bytes"]),
                         sum(int(r[f"mem_{k}_bytes"]) for k in ("parameters", "gradients",
                                                                 "optimizer")))

    def test_command_line(self):
        top = self.make_runs()
        out = os.path.join(self.tmp, "all.csv")
        res = run([os.path.join(SCRIPTS, "collect.py"), top, "-o", out])
        self.assertIn("6 rows from 3 runs", res.stderr)
        with open(out) as f:
            self.assertEqual(len(list(csv.DictReader(f))), 6)
        res = run([os.path.join(SCRIPTS, "collect.py"), os.path.join(self.tmp, "nothing")],
                  check=False)
        self.assertEqual(res.returncode, 2)


@unittest.skipUnless(HAVE_MATPLOTLIB, "no matplotlib in this Python (use /usr/bin/python3)")
class PlotTest(WorkDir):
    def test_plots_from_a_fake_sweep(self):
        zeromini = fake_binary(self.tmp)
        top = os.path.join(self.tmp, "s")
        for model, ranks, stage, repeat in [(m, r, s, k) for m in ("a", "b") for r in (1, 2, 4)
                                            for s in range(4) for k in range(2)]:
            d = os.path.join(top, f"x-s{stage}-n1x{ranks}-{model}-r{repeat}")
            subprocess.run([zeromini, "run", TINY, "--set", f"zero.stage={stage}", "--out", d],
                           env=dict(os.environ, SLURM_NTASKS=str(ranks)), check=True)
            with open(os.path.join(d, "point.json"), "w") as f:
                json.dump({"sweep": "x", "model": model, "nodes": 1, "ranks_per_node": ranks,
                           "repeat": repeat, "scaling": "weak"}, f)
        csv_path = os.path.join(top, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), top, "-o", csv_path])
        planned = os.path.join(self.tmp, "planned.csv")
        with open(planned, "w") as f:
            subprocess.run([zeromini, "plan", TINY, "--ranks", "1,2,4", "--format", "csv"],
                           stdout=f, check=True)
        plot = os.path.join(SCRIPTS, "plot.py")
        res = run([plot, csv_path, "--planned", planned], check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("write --planned MODEL=", res.stderr)
        res = run([plot, csv_path, "--planned", f"a={planned}", "--out-dir",
                   os.path.join(self.tmp, "png")])
        for name in ("throughput", "memory", "time_breakdown", "traffic"):
            path = os.path.join(self.tmp, "png", f"{name}.png")
            self.assertTrue(os.path.getsize(path) > 10000, path)


@unittest.skipUnless(os.environ.get("ZEROMINI_BIN"), "ZEROMINI_BIN not set")
@unittest.skipUnless(shutil.which("mpiexec"), "no mpiexec")
class RealZerominiTest(SweepDir):
    """The real executable through sweep.py --local, collect.py and plot.py."""

    def test_local_sweep(self):
        text = 'name = "real"\ndeck = "{deck}"\nstages = [0, 1, 2, 3]\n' \
               'ranks_per_node = [1, 2]\nsteps = 3\nmodels = [{{name = "tiny"}}]\n'
        out = os.path.join(self.tmp, "s")
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir", out,
                   "--bin", os.environ["ZEROMINI_BIN"], "--local"])
        self.assertEqual(res.stdout.count(": done in "), 8, res.stdout)
        self.assertTrue(os.path.exists(os.path.join(out, "planned-tiny.csv")), res.stdout)
        csv_path = os.path.join(out, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), out, "-o", csv_path])
        with open(csv_path) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(sorted((int(r["ranks"]), int(r["stage"])) for r in rows),
                         [(r, s) for r in (1, 2) for s in range(4)])
        # The job scripts give each rank OMP_NUM_THREADS threads, which a Kokkos OpenMP build runs
        # and a Serial one cannot.
        version = subprocess.run([os.environ["ZEROMINI_BIN"], "--version"], capture_output=True,
                                 text=True, check=True).stdout
        threads = int(os.environ.get("OMP_NUM_THREADS", "1")) if "OpenMP" in version else 1
        for r in rows:
            self.assertEqual(r["status"], "completed")
            self.assertGreater(float(r["tokens_per_second_per_rank"]), 0)
            self.assertEqual(int(r["threads_per_rank"]), threads)
        # ZeRO's memory model: stage 3 at 2 ranks holds half the parameters of stage 0.
        by = {(int(r["ranks"]), int(r["stage"])): r for r in rows}
        self.assertLess(int(by[2, 3]["mem_parameters_bytes"]),
                        int(by[2, 0]["mem_parameters_bytes"]))
        if HAVE_MATPLOTLIB:
            run([os.path.join(SCRIPTS, "plot.py"), csv_path, "--planned",
                 os.path.join(out, "planned-tiny.csv")])
            self.assertTrue(os.path.exists(os.path.join(out, "memory.png")))


if __name__ == "__main__":
    unittest.main()
