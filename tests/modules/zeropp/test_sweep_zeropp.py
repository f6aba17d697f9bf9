#!/usr/bin/env python3
"""Tests of the sweep files' ZeRO++ axes (quantize_weights, quantize_grads, error_feedback)
through the scaling-study scripts: `zeromini sweep expand` (points, names, overrides, the points
the run would refuse, errors), scripts/sweep.py (skipped points, one planner CSV per combination
that runs), scripts/collect.py (the ZeRO++ columns) and `scripts/plot.py zeropp`.

    python3 tests/modules/zeropp/test_sweep_zeropp.py [-v] [RealZeroppSweepTest]

Helpers and the stand-in zeromini are tests/workflow/workflow_common.py's. RealZeroppSweepTest
(ZEROMINI_BIN set to the real executable, and mpiexec) runs a small ZeRO++ sweep of the real
program and requires its all-gather, reduce-scatter and all-to-all bytes to equal the planner's.
"""

import csv
import glob
import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "workflow"))
from workflow_common import (  # noqa: E402
    HAVE_MATPLOTLIB, SCRIPTS, SweepDir, collect, fake_binary, run)

ZEROPP = """\
    name = "z"
    deck = "{deck}"
    stages = [0, 1, 3]
    ranks_per_node = [2]
    quantize_weights = ["none", "int8"]
    quantize_grads = ["none", "int8", "int4"]
    error_feedback = [false, true]
    steps = 3
    models = [{{ name = "m" }}]
"""
# The run's own refusals (src/core/validate.cpp), naming the --set that gave the key.
def weights_at(stage, all_stages=False):
    return ('--set zero.quantize_weights=int8: zero.quantize_weights = "int8" needs zero.stage = '
            f'3, the stage that gathers parameters per unit; this run is stage {stage}'
            + (' (zero.stage = "all" runs stages 0-3)' if all_stages else '')
            + '. Expected "none" at stages 0-2')


def grads_at(kind, stage, where=None):
    return (f'{where or "--set zero.quantize_grads=" + kind}: zero.quantize_grads = "{kind}" '
            f'needs zero.stage 1-3, whose gradients are reduce-scattered; stage {stage} '
            f'all-reduces them in buckets. Expected "none" at stage {stage}')


SET_INT4 = '--set zero.quantize_grads="int4"'
FEEDBACK = ('zero.error_feedback = true changes nothing with zero.quantize_grads = "none" (the '
            'same run as error_feedback = false)')


class ZeroppExpandTest(SweepDir):
    """`zeromini sweep expand` with the ZeRO++ axes."""

    def test_points_names_and_overrides(self):
        cfg, points = self.load(ZEROPP)
        self.assertEqual((cfg["quantize_weights"], cfg["quantize_grads"], cfg["error_feedback"]),
                         (["none", "int8"], ["none", "int8", "int4"], [False, True]))
        self.assertEqual(len(points), 3 * 2 * 3 * 2)
        self.assertEqual(len({p["name"] for p in points}), len(points))
        # Order: stage, then quantize_weights, quantize_grads, error_feedback, repeat.
        self.assertEqual([p["name"] for p in points[:4]],
                         ["z-s0-n1x2-m-qwnone-qgnone-effalse-r0",
                          "z-s0-n1x2-m-qwnone-qgnone-eftrue-r0",
                          "z-s0-n1x2-m-qwnone-qgint8-effalse-r0",
                          "z-s0-n1x2-m-qwnone-qgint8-eftrue-r0"])
        point = next(p for p in points if p["name"] == "z-s3-n1x2-m-qwint8-qgint4-eftrue-r0")
        self.assertEqual((point["quantize_weights"], point["quantize_grads"],
                          point["error_feedback"]), ("int8", "int4", True))
        self.assertEqual(point["overrides"],
                         ["zero.stage=3", "zero.quantize_weights=int8", "zero.quantize_grads=int4",
                          "zero.error_feedback=true", "train.steps=3"])
        self.assertIsNone(point["problem"])

    def test_no_axis_is_not_named(self):
        cfg, points = self.load('deck = "{deck}"\nstages = [2]\n')
        self.assertEqual((cfg["quantize_weights"], cfg["quantize_grads"], cfg["error_feedback"]),
                         ([], [], []))
        self.assertEqual([p["name"] for p in points], ["t-s2-n1x1-base-r0"])
        self.assertEqual((points[0]["quantize_weights"], points[0]["quantize_grads"],
                          points[0]["error_feedback"]), (None, None, None))

    def test_points_the_run_would_refuse_are_skipped_with_the_reason(self):
        _, points = self.load(ZEROPP)
        problems = {p["name"]: p["problem"] for p in points}
        self.assertEqual(problems["z-s0-n1x2-m-qwint8-qgnone-effalse-r0"], weights_at(0))
        self.assertEqual(problems["z-s1-n1x2-m-qwint8-qgint8-effalse-r0"], weights_at(1))
        self.assertEqual(problems["z-s0-n1x2-m-qwnone-qgint4-effalse-r0"],
                         grads_at("int4", 0))
        self.assertEqual(problems["z-s3-n1x2-m-qwint8-qgnone-eftrue-r0"], FEEDBACK)
        for name in ("z-s0-n1x2-m-qwnone-qgnone-effalse-r0", "z-s1-n1x2-m-qwnone-qgint4-eftrue-r0",
                     "z-s3-n1x2-m-qwint8-qgnone-effalse-r0", "z-s3-n1x2-m-qwint8-qgint8-eftrue-r0"):
            self.assertIsNone(problems[name], name)
        # Stage 0: 1 point; stage 1: 5 (no int8 weights, no feedback without quantized
        # gradients); stage 3: 2 x 5.
        self.assertEqual(sum(p is None for p in problems.values()), 1 + 5 + 10)

    def test_stage_all_and_settings_given_by_set(self):
        _, points = self.load('deck = "{deck}"\nstages = ["all", 2]\nquantize_weights = "int8"\n')
        self.assertEqual({p["name"]: p["problem"] for p in points},
                         {"t-sall-n1x1-base-qwint8-r0":
                          weights_at(0, all_stages=True),
                          "t-s2-n1x1-base-qwint8-r0": weights_at(2)})
        # The gradients quantized for every point by set: stage 0 refused; both feedbacks run.
        _, points = self.load('deck = "{deck}"\nstages = [0, 2]\nerror_feedback = [false, true]\n'
                              'set = ["zero.quantize_grads=\\"int4\\""]\n')
        self.assertEqual({p["name"]: p["problem"] for p in points},
                         {"t-s0-n1x1-base-effalse-r0": grads_at("int4", 0, SET_INT4),
                          "t-s0-n1x1-base-eftrue-r0": grads_at("int4", 0, SET_INT4),
                          "t-s2-n1x1-base-effalse-r0": None, "t-s2-n1x1-base-eftrue-r0": None})
        _, points = self.load('deck = "{deck}"\nstages = [2]\nquantize_grads = ["int8", "int4"]\n'
                              'set = ["zero.quantize_block=5"]\n')
        self.assertEqual([p["problem"] for p in points],
                         [None, '--set zero.quantize_block=5: zero.quantize_block = 5 with '
                          'zero.quantize_grads = "int4": expected an even block (two int4 codes '
                          'share a byte, and no byte may span two blocks)'])

    def test_errors_name_the_file_line_and_key(self):
        for text, pattern in (
                ('deck = "{deck}"\nquantize_weights = ["none", "int4"]\n',
                 r't\.toml:2:29: quantize_weights: "int4" is not a weight quantization '
                 r'\("none" or "int8"\)'),
                ('deck = "{deck}"\nquantize_grads = [8]\n',
                 r't\.toml:2:19: quantize_grads: 8 is not a gradient quantization '
                 r'\("none", "int8" or "int4"\)'),
                ('deck = "{deck}"\nerror_feedback = ["yes"]\n',
                 r't\.toml:2:19: error_feedback: "yes" is not true or false'),
                ('deck = "{deck}"\nerror_feedback = [true, true]\n',
                 r"t\.toml:2:25: error_feedback: true is listed twice"),
                ('deck = "{deck}"\nquantize_grads = "int8"\nset = ["zero.quantize_grads=int4"]\n',
                 r"t\.toml:2:18: quantize_grads: zero\.quantize_grads is an axis here, so a set "
                 r'cannot give it too \(found "zero\.quantize_grads=int4"\)')):
            res = self.expand(self.sweep_file(text))
            self.assertEqual(res.returncode, 2, text)  # bad input (README, exit statuses)
            self.assertEqual(res.stdout, "")
            self.assertRegex(res.stderr, "^zeromini: error: .*" + pattern)

    def test_dry_run_prints_the_skipped_points(self):
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(ZEROPP), "--dry-run",
                   "--dir", os.path.join(self.tmp, "s"), "--bin", fake_binary(self.tmp)])
        self.assertEqual(res.stdout.count("#!/bin/bash"), 16)
        self.assertIn("z-s1-n1x2-m-qwint8-qgnone-effalse-r0: skipped: " + weights_at(1),
                      res.stdout)
        self.assertIn("z-s3-n1x2-m-qwnone-qgnone-eftrue-r0: skipped: " + FEEDBACK, res.stdout)
        self.assertIn("--set zero.stage=3 --set zero.quantize_weights=int8 "
                      "--set zero.quantize_grads=int4 --set zero.error_feedback=true", res.stdout)
        self.assertIn("sweep: 20 skipped", res.stdout)


@unittest.skipUnless(shutil.which("mpiexec"), "no mpiexec")
class ZeroppLocalTest(SweepDir):
    """sweep.py --local with the stand-in: the runs, the planner's predictions, collect.py's
    columns and plot.py zeropp."""

    def test_runs_plans_collect_and_plot(self):
        log = os.path.join(self.tmp, "zeromini.log")
        text = ZEROPP.replace("[0, 1, 3]", "[1, 3]").replace('["none", "int8", "int4"]',
                                                             '["none", "int4"]')
        out = os.path.join(self.tmp, "s")
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir", out,
                   "--bin", fake_binary(self.tmp), "--local"],
                  env=dict(os.environ, FAKE_ZEROMINI_LOG=log))
        # Stage 1: none/none/false, none/int4/false, none/int4/true; stage 3: twice that.
        self.assertEqual(res.stdout.count(": done in "), 9, res.stdout)
        self.assertIn("sweep: 9 ran, 7 skipped", res.stdout)
        self.assertEqual(sorted(os.path.basename(p)
                                for p in glob.glob(os.path.join(out, "planned-*.csv"))),
                         [f"planned-m-{combo}.csv" for combo in (
                             "qwint8-qgint4-effalse", "qwint8-qgint4-eftrue",
                             "qwint8-qgnone-effalse", "qwnone-qgint4-effalse",
                             "qwnone-qgint4-eftrue", "qwnone-qgnone-effalse")])
        with open(log) as f:
            plans = [line for line in f.read().splitlines() if line.startswith("plan ")]
        self.assertIn("--set zero.quantize_weights=int8 --set zero.quantize_grads=int4 "
                      "--set zero.error_feedback=true", " | ".join(plans))
        with open(os.path.join(out, "z-s3-n1x2-m-qwint8-qgint4-eftrue-r0", "point.json")) as f:
            meta = json.load(f)
        self.assertEqual((meta["quantize_weights"], meta["quantize_grads"],
                          meta["error_feedback"]), ("int8", "int4", True))
        csv_path = os.path.join(out, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), out, "-o", csv_path])
        with open(csv_path) as f:
            reader = csv.DictReader(f)
            header, rows = reader.fieldnames, {r["point"]: r for r in reader}
        self.assertEqual(header[-3:], ["quantize_weights", "quantize_grads", "error_feedback"])
        self.assertEqual(header[:len(collect.COLUMNS_HEAD)], collect.COLUMNS_HEAD)
        row = rows["z-s3-n1x2-m-qwint8-qgint4-eftrue-r0"]
        self.assertEqual((row["quantize_weights"], row["quantize_grads"], row["error_feedback"]),
                         ("int8", "int4", "true"))
        self.assertGreater(float(row["comm_all_to_all_bytes"]), 0)
        self.assertEqual(float(row["comm_reduce_scatter_bytes"]), 0)
        row = rows["z-s1-n1x2-m-qwnone-qgnone-effalse-r0"]
        self.assertEqual((row["quantize_weights"], row["quantize_grads"], row["error_feedback"]),
                         ("none", "none", "false"))
        # Runs whose overrides set none of them: no ZeRO++ columns (the CSV as before them).
        for d in glob.glob(os.path.join(out, "*", "point.json")):
            with open(d) as f:
                meta = json.load(f)
            meta["overrides"] = [o for o in meta["overrides"] if "quantize" not in o and
                                 "error_feedback" not in o]
            with open(d, "w") as f:
                json.dump(meta, f)
        header = collect.columns_for(collect.collect([out]))
        self.assertFalse({"quantize_weights", "quantize_grads", "error_feedback"} & set(header))
        self.assertEqual(header[-1], "busbw_all_to_all_gbs")
        if not HAVE_MATPLOTLIB:
            return
        planned = sorted(glob.glob(os.path.join(out, "planned-*.csv")))
        res = run([os.path.join(SCRIPTS, "plot.py"), "zeropp", csv_path, "--planned", *planned])
        self.assertIn("plot zeropp: 27 of 27 byte figures measured == planned to the byte",
                      res.stdout)
        self.assertGreater(os.path.getsize(os.path.join(out, "zeropp.png")), 10000)
        with open(os.path.join(out, "zeropp_vs_plan.csv")) as f:
            table = list(csv.DictReader(f))
        self.assertEqual(len(table), 9 * 3)
        gathers = {(r["stage"], r["quantize_weights"]): r["measured"] for r in table
                   if r["collective"] == "all_gather" and r["quantize_grads"] == "none"}
        self.assertLess(int(gathers["3", "int8"]), int(gathers["3", "none"]))
        # A planner that disagrees by 8 bytes on one figure: the comparison says so.
        path = os.path.join(out, "planned-m-qwnone-qgint4-effalse.csv")
        with open(path) as f:
            reader = csv.DictReader(f)
            fields, plan_rows = reader.fieldnames, list(reader)
        stage1 = next(r for r in plan_rows if r["stage"] == "1")
        stage1["all_to_all_bytes"] = str(int(stage1["all_to_all_bytes"]) + 8)
        with open(path, "w") as f:
            writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
            writer.writeheader()
            writer.writerows(plan_rows)
        res = run([os.path.join(SCRIPTS, "plot.py"), "zeropp", csv_path, "--planned", *planned])
        self.assertIn("plot zeropp: 26 of 27 byte figures measured == planned to the byte",
                      res.stdout)
        with open(os.path.join(out, "zeropp_vs_plan.csv")) as f:
            diffs = [r for r in csv.DictReader(f) if r["measured_minus_planned"] not in ("0", "")]
        self.assertEqual([(r["stage"], r["collective"], r["measured_minus_planned"])
                          for r in diffs], [("1", "all_to_all", "-8")])


@unittest.skipUnless(os.environ.get("ZEROMINI_BIN"), "ZEROMINI_BIN not set")
@unittest.skipUnless(shutil.which("mpiexec"), "no mpiexec")
class RealZeroppSweepTest(SweepDir):
    """The real executable: quantized gathers and gradients at 4 ranks, against its planner."""

    def test_zeropp_sweep_matches_the_planner(self):
        text = ('name = "zpp"\ndeck = "{deck}"\nstages = [2, 3]\nranks_per_node = [4]\n'
                'quantize_weights = ["none", "int8"]\nquantize_grads = ["none", "int8"]\n'
                'steps = 2\nmodels = [{{name = "tiny"}}]\n')
        out = os.path.join(self.tmp, "s")
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir", out,
                   "--bin", os.environ["ZEROMINI_BIN"], "--local"])
        self.assertIn("sweep: 6 ran, 2 skipped", res.stdout)
        planned = sorted(glob.glob(os.path.join(out, "planned-tiny-*.csv")))
        self.assertEqual(len(planned), 4, res.stdout)
        csv_path = os.path.join(out, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), out, "-o", csv_path])
        with open(csv_path) as f:
            rows = {(r["stage"], r["quantize_weights"], r["quantize_grads"]): r
                    for r in csv.DictReader(f)}
        self.assertEqual(len(rows), 6)
        plain, both = rows["3", "none", "none"], rows["3", "int8", "int8"]
        self.assertLess(float(both["comm_all_gather_bytes"]), float(plain["comm_all_gather_bytes"]))
        self.assertGreater(float(both["comm_all_to_all_bytes"]), 0)
        self.assertEqual(float(both["comm_reduce_scatter_bytes"]), 0)
        if HAVE_MATPLOTLIB:
            res = run([os.path.join(SCRIPTS, "plot.py"), "zeropp", csv_path, "--planned",
                       *planned])
            self.assertIn("plot zeropp: 18 of 18 byte figures measured == planned to the byte",
                          res.stdout)


if __name__ == "__main__":
    unittest.main()
