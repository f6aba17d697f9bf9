#!/usr/bin/env python3
"""Tests of the sweep files and the job scripts made from them: `zeromini sweep expand` (JSON for
good files, file:line and key for bad ones), scripts/sweep.py's reading of them (points, names,
overrides, repeats in alternating rounds, strong scaling) and the Slurm job scripts it renders
(the generic and site templates).

    python3 tests/workflow/test_sweep_files.py [-v]

The sweep files are read by the real zeromini: ZEROMINI_SWEEP_BIN or ZEROMINI_BIN, else
build/bin/zeromini; without one these tests are skipped (see workflow_common.py).
"""

import json
import os
import re
import shutil
import subprocess
import unittest

from workflow_common import (ROOT, SCRIPTS, SWEEP, SWEEP_BIN, TINY, SweepDir, built_modules,
                             sweep)


class SweepExpandTest(SweepDir):
    """`zeromini sweep expand` itself: JSON for good files, file:line and key for bad ones."""

    def test_example_sweep_files(self):
        directory = os.path.join(ROOT, "inputs", "sweeps")
        counts = {"hybrid-local.toml": 4 * 2 * 2, "perlmutter-example.toml": 4 * 4 * 2 * 3,
                  "tp-local.toml": 4 * 3, "zeropp-local.toml": 2 * 3 * 2,
                  "quickstart-local.toml": 4 * 2 * 2 * 3}  # the last: checked below
        # The points an example skips: error feedback without quantized gradients.
        skipped = {"zeropp-local.toml": [f"zeropp-local-s3-n1x4-quickstart-qw{w}-qgnone-eftrue-r0"
                                         for w in ("none", "int8")]}
        self.assertEqual(sorted(f for f in os.listdir(directory) if f.endswith(".toml")),
                         sorted(counts))
        modules = built_modules()
        for name, count in counts.items():
            res = self.expand(os.path.join(directory, name), "--root", ROOT)
            self.assertEqual(res.returncode, 0, res.stderr)
            data = json.loads(res.stdout)
            points = data["points"]
            self.assertEqual(len(points), count, name)
            self.assertEqual(len({p["name"] for p in points}), count, name)
            for p in points:
                self.assertTrue(os.path.isfile(p["deck"]), p["deck"])
            if name == "zeropp-local.toml" and "zeropp" not in modules:
                # A build without the module: every point is refused, naming it.
                for p in points:
                    self.assertIn("belongs to the module zeropp", p["problem"] or "", p["name"])
                continue
            self.assertEqual([p["name"] for p in points if p["problem"] is not None],
                             skipped.get(name, []), name)
            self.assertTrue(os.path.isfile(data["sweep"]["slurm"]["template"]))
            if name == "hybrid-local.toml":
                self.assertEqual({(p["shard_size"], p["recompute"]) for p in points},
                                 {(0, "none"), (0, "blocks"), (2, "none"), (2, "blocks")})
                self.assertIn("hybrid-local-s3-n1x4-quickstart-shard2-rcblocks-r0",
                              {p["name"] for p in points})
            elif name == "tp-local.toml":
                self.assertEqual({(p["tp"], p["ranks"]) for p in points}, {(1, 4), (2, 4), (4, 4)})
                self.assertIn("tp-local-s2-n1x4-tiny-tp4-r0", {p["name"] for p in points})
            elif name == "zeropp-local.toml":
                self.assertEqual({p["stage"] for p in points}, {3})
                self.assertIn("zeropp-local-s3-n1x4-quickstart-qwint8-qgint4-eftrue-r0",
                              {p["name"] for p in points})
            else:   # sweeps without the deck axes: names and overrides as before them
                self.assertEqual({(p["shard_size"], p["recompute"]) for p in points},
                                 {(None, None)})
        self.assertEqual(data["sweep"]["repeat"], 3)
        self.assertEqual(points[0]["name"], "quickstart-local-s0-n1x1-quickstart-r0")
        # Three rounds of 16: the last point of round 1 is followed by the first of round 2.
        self.assertEqual(points[15]["name"], "quickstart-local-s3-n1x2-l8d256-r0")
        self.assertEqual(points[16]["name"], "quickstart-local-s0-n1x1-quickstart-r1")
        self.assertEqual(points[-1]["name"], "quickstart-local-s3-n1x2-l8d256-r2")
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
            self.assertEqual(res.returncode, 2, text)  # bad input (README, exit statuses)
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
        self.check('deck = "{deck}"\nrepeat = 0\n',
                   r":2:10: repeat = 0: expected an integer >= 1")
        self.check('deck = "{deck}"\nrepeats = 0\n',
                   r":2:11: repeats = 0: expected an integer >= 1")
        self.check('deck = "{deck}"\nrepeat = "3"\n',
                   r':2:10: repeat = "3": expected an integer >= 1')
        # repeats, the older spelling, and repeat: one or the other, the error names both.
        self.check('deck = "{deck}"\nrepeats = 2\nrepeat = 3\n',
                   r":2:11: repeats = 2: repeat = 3 is given too \(line 3\); repeats is the "
                   r"older spelling of repeat, so give one of them$")
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

    def test_repeats_run_in_alternating_rounds(self):
        cfg, points = self.load()
        self.assertEqual(cfg["repeat"], 2)
        # Round 1 (repeat 0) lists every point before round 2 (repeat 1) lists any ...
        self.assertEqual([p["repeat"] for p in points], [0] * 8 + [1] * 8)
        # ... in the same order, ...
        self.assertEqual([p["name"][:-len("-r1")] for p in points[8:]],
                         [p["name"][:-len("-r0")] for p in points[:8]])
        for first, again in zip(points[:8], points[8:]):
            self.assertEqual({k: v for k, v in first.items() if k not in ("name", "repeat")},
                             {k: v for k, v in again.items() if k not in ("name", "repeat")})
        # ... so no point's repeats are back to back.
        stems = [p["name"].rsplit("-r", 1)[0] for p in points]
        self.assertTrue(all(a != b for a, b in zip(stems, stems[1:])), stems)

    def test_repeats_is_the_older_spelling_of_repeat(self):
        old = SWEEP.replace("repeat = 2", "repeats = 2")
        self.assertNotEqual(old, SWEEP)
        cfg, points = self.load(old)
        self.assertEqual(cfg["repeat"], 2)
        self.assertEqual(points, self.load()[1])
        # One point with repeat = 3: three, one a round.
        _, points = self.load('deck = "{deck}"\nstages = [1]\nrepeat = 3\n')
        self.assertEqual([p["name"] for p in points], [f"t-s1-n1x1-base-r{r}" for r in range(3)])
        self.assertEqual(len({p["problem"] for p in points}), 1)

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
        # Every round skips what the first does.
        _, points = self.load(text + "repeat = 2\n")
        self.assertEqual([(p["ranks"], p["repeat"], p["problem"] is None) for p in points],
                         [(1, 0, True), (2, 0, True), (3, 0, False),
                          (1, 1, True), (2, 1, True), (3, 1, False)])


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


if __name__ == "__main__":
    unittest.main()
