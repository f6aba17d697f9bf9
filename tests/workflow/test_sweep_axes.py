#!/usr/bin/env python3
"""Tests of the sweep files' deck axes (shard_sizes, recompute) through the scaling-study scripts:
`zeromini sweep expand` (points, names, overrides, errors), scripts/sweep.py (the overrides
reaching zeromini run and zeromini plan, one planner CSV per value), scripts/collect.py (the
hybrid columns) and `scripts/plot.py hybrid` (measured against planned).

    python3 tests/workflow/test_sweep_axes.py [-v] [RealHybridSweepTest]

Helpers and the stand-in zeromini are workflow_common.py's. RealHybridSweepTest (ZEROMINI_BIN set
to the real executable, and mpiexec) runs a small hybrid sweep of the real program and requires
the measured memory and traffic within and across shard groups to equal the planner's.
"""

import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import unittest

from workflow_common import (HAVE_MATPLOTLIB, SCRIPTS, TINY, SweepDir, WorkDir, collect,
                             fake_binary, run)

AXES = """\
    name = "h"
    deck = "{deck}"
    stages = [0, 1]
    ranks_per_node = [4]
    shard_sizes = [0, 2, "node"]
    recompute = ["none", "blocks"]
    steps = 3
    set = ["zero.ranks_per_node=2"]
    models = [{{ name = "m" }}]
"""


class AxesExpandTest(SweepDir):
    """`zeromini sweep expand` with the deck axes."""

    def test_points_names_and_overrides(self):
        cfg, points = self.load(AXES)
        self.assertEqual(cfg["shard_sizes"], [0, 2, "node"])
        self.assertEqual(cfg["recompute"], ["none", "blocks"])
        # Order: stage, then shard size, then recompute, then repeat.
        self.assertEqual([p["name"] for p in points[:4]],
                         ["h-s0-n1x4-m-shard0-rcnone-r0", "h-s0-n1x4-m-shard0-rcblocks-r0",
                          "h-s0-n1x4-m-shard2-rcnone-r0", "h-s0-n1x4-m-shard2-rcblocks-r0"])
        self.assertEqual(len(points), 2 * 3 * 2)
        self.assertEqual(len({p["name"] for p in points}), len(points))
        point = next(p for p in points if p["name"] == "h-s1-n1x4-m-shardnode-rcblocks-r0")
        self.assertEqual((point["shard_size"], point["recompute"]), ("node", "blocks"))
        self.assertEqual(point["overrides"],
                         ["zero.ranks_per_node=2", "zero.stage=1", "zero.shard_size=node",
                          "model.recompute=blocks", "train.steps=3"])
        point = next(p for p in points if p["name"] == "h-s1-n1x4-m-shard2-rcnone-r0")
        self.assertEqual(point["shard_size"], 2)
        self.assertIn("zero.shard_size=2", point["overrides"])
        self.assertTrue(all(p["problem"] is None for p in points))

    def test_one_value_is_named_and_no_axis_is_not(self):
        _, points = self.load('deck = "{deck}"\nstages = [2]\nshard_sizes = 2\n'
                              'ranks_per_node = [2]\n')
        self.assertEqual([p["name"] for p in points], ["t-s2-n1x2-base-shard2-r0"])
        self.assertIsNone(points[0]["recompute"])
        self.assertNotIn("model.recompute", " ".join(points[0]["overrides"]))
        cfg, points = self.load('deck = "{deck}"\nstages = [2]\nrecompute = "blocks"\n')
        self.assertEqual([p["name"] for p in points], ["t-s2-n1x1-base-rcblocks-r0"])
        self.assertEqual(cfg["shard_sizes"], [])
        cfg, points = self.load('deck = "{deck}"\nstages = [2]\n')
        self.assertEqual([p["name"] for p in points], ["t-s2-n1x1-base-r0"])
        self.assertEqual((cfg["shard_sizes"], cfg["recompute"]), ([], []))
        self.assertEqual((points[0]["shard_size"], points[0]["recompute"]), (None, None))
        self.assertEqual(points[0]["overrides"], ["zero.stage=2"])

    def test_a_shard_size_that_does_not_divide_the_ranks(self):
        _, points = self.load('deck = "{deck}"\nstages = [0, 3]\nranks_per_node = [4]\n'
                              'shard_sizes = [3, 8, "node"]\n')
        problems = {p["name"]: p["problem"] for p in points}
        # Stage 0 shards nothing; "node" always divides.
        self.assertIsNone(problems["t-s0-n1x4-base-shard3-r0"])
        divisor = ("--set zero.shard_size={0}: zero.shard_size = {0} ({0} ranks per shard group): "
                   "expected a divisor of the rank count 4 (ranks are grouped consecutively, "
                   "and every group holds a whole replica)")
        self.assertEqual(problems["t-s3-n1x4-base-shard3-r0"], divisor.format(3))
        self.assertEqual(problems["t-s3-n1x4-base-shard8-r0"], divisor.format(8))
        self.assertIsNone(problems["t-s3-n1x4-base-shardnode-r0"])

    def test_errors_name_the_file_line_and_key(self):
        shard = r'a shard size \(an integer >= 0, 0 = all ranks, or "node"\)'
        mode = r'an activation recomputation mode \("none" or "blocks"\)'
        for text, pattern in (
                ('deck = "{deck}"\nshard_sizes = [0, -2]\n',
                 r"t\.toml:2:19: shard_sizes: -2 is not " + shard),
                ('deck = "{deck}"\nshard_sizes = ["nodes"]\n',
                 r't\.toml:2:16: shard_sizes: "nodes" is not ' + shard),
                ('deck = "{deck}"\nshard_sizes = [1.5]\n',
                 r"t\.toml:2:16: shard_sizes: 1\.5 is not " + shard),
                ('deck = "{deck}"\nshard_sizes = [2, 2]\n',
                 r"t\.toml:2:19: shard_sizes: 2 is listed twice"),
                ('deck = "{deck}"\nshard_sizes = []\n',
                 r"t\.toml:2:15: shard_sizes: expected " + shard + ", found an empty list"),
                ('deck = "{deck}"\nrecompute = ["none", "full"]\n',
                 r't\.toml:2:22: recompute: "full" is not ' + mode),
                ('deck = "{deck}"\nrecompute = true\n', r"t\.toml:2:13: recompute: true is not "),
                ('deck = "{deck}"\nshard_sizes = [2]\nset = ["zero.shard_size=4"]\n',
                 r"t\.toml:2:15: shard_sizes: zero\.shard_size is an axis here, so a set cannot "
                 r'give it too \(found "zero\.shard_size=4"\)'),
                ('deck = "{deck}"\nrecompute = ["none"]\n'
                 'models = [{{name = "a", set = ["model.recompute=blocks"]}}]\n',
                 r"t\.toml:2:13: recompute: model\.recompute is an axis here")):
            res = self.expand(self.sweep_file(text))
            self.assertEqual(res.returncode, 2, text)  # bad input (README, exit statuses)
            self.assertEqual(res.stdout, "")
            self.assertRegex(res.stderr, "^zeromini: error: .*" + pattern)

    def test_sweep_py_reports_the_error(self):
        self.assert_sweep_py_rejects('deck = "{deck}"\nrecompute = ["some"]\n',
                                     '2:14: recompute: "some" is not an activation recomputation '
                                     'mode ("none" or "blocks")')


class AxesJobTest(SweepDir):
    """The axes' overrides in the job scripts, the runs and the planner's predictions."""

    def test_dry_run_job_scripts_carry_the_overrides(self):
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(AXES), "--dry-run",
                   "--dir", os.path.join(self.tmp, "s"), "--bin", fake_binary(self.tmp)])
        self.assertEqual(res.stdout.count("#!/bin/bash"), 12)
        self.assertIn("#SBATCH --job-name=h-s1-n1x4-m-shard2-rcblocks-r0\n", res.stdout)
        self.assertIn(f"set -- {TINY} --set zero.ranks_per_node=2 --set zero.stage=1 "
                      "--set zero.shard_size=2 --set model.recompute=blocks --set train.steps=3\n",
                      res.stdout)

    @unittest.skipUnless(shutil.which("mpiexec"), "no mpiexec")
    def test_local_runs_plans_and_collect(self):
        log = os.path.join(self.tmp, "zeromini.log")
        env = dict(os.environ, FAKE_ZEROMINI_LOG=log)
        text = AXES.replace("[0, 2, \"node\"]", "[0, 2]").replace("ranks_per_node = [4]",
                                                                  "ranks_per_node = [2]")
        out = os.path.join(self.tmp, "s")
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir", out,
                   "--bin", fake_binary(self.tmp), "--local"], env=env)
        self.assertEqual(res.stdout.count(": done in "), 8, res.stdout)
        with open(log) as f:
            lines = f.read().splitlines()
        runs = [l for l in lines if l.startswith("run ") and "shard_size=2" in l
                and "recompute=blocks" in l and "zero.stage=1" in l]
        self.assertEqual(len(runs), 2, lines)   # one point, two ranks
        self.assertIn("--set zero.shard_size=2 --set model.recompute=blocks", runs[0])
        plans = sorted(l for l in lines if l.startswith("plan "))
        self.assertEqual(len(plans), 4, lines)
        self.assertTrue(all("--set zero.ranks_per_node=2" in l and "--ranks 2 " in l
                            for l in plans), plans)
        self.assertEqual(sum("--set zero.shard_size=2 --set model.recompute=blocks" in l
                             for l in plans), 1, plans)
        self.assertFalse([l for l in plans if "zero.stage" in l], plans)
        self.assertEqual(sorted(os.path.basename(p) for p in
                                glob.glob(os.path.join(out, "planned-*.csv"))),
                         ["planned-m-shard0-rcblocks.csv", "planned-m-shard0-rcnone.csv",
                          "planned-m-shard2-rcblocks.csv", "planned-m-shard2-rcnone.csv"])
        with open(os.path.join(out, "planned-m-shard2-rcblocks.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({(r["shard_size"], r["recompute"]) for r in rows if r["stage"] == "1"},
                         {("2", "blocks")})
        with open(os.path.join(out, "h-s1-n1x2-m-shard2-rcblocks-r0", "point.json")) as f:
            meta = json.load(f)
        self.assertEqual((meta["shard_size"], meta["recompute"]), (2, "blocks"))
        rows = {r["point"]: r for r in collect.collect([out])}
        row = rows["h-s1-n1x2-m-shard2-rcblocks-r0"]
        self.assertEqual((row["shard_size"], row["shard_size_setting"], row["recompute"]),
                         (2, "2", "blocks"))
        row = rows["h-s1-n1x2-m-shard0-rcnone-r0"]
        self.assertEqual((row["shard_size"], row["shard_size_setting"], row["recompute"]),
                         (2, "0", "none"))


class CollectHybridTest(WorkDir):
    def make_run(self, name, stage, ranks, overrides, point=True):
        d = os.path.join(self.tmp, "runs", name)
        cmd = [fake_binary(self.tmp), "run", TINY, "--out", d, "--set", f"zero.stage={stage}"]
        for o in overrides:
            cmd += ["--set", o]
        subprocess.run(cmd, env=dict(os.environ, SLURM_NTASKS=str(ranks)), check=True)
        if point:
            with open(os.path.join(d, "point.json"), "w") as f:
                json.dump({"sweep": "h", "name": name, "model": "m", "nodes": 1,
                           "ranks_per_node": ranks, "repeat": 0, "steps": 5,
                           "overrides": [f"zero.stage={stage}"] + overrides}, f)
        return d

    def table(self):
        buf = io.StringIO()
        collect.write_csv(collect.collect([os.path.join(self.tmp, "runs")]), buf)
        buf.seek(0)
        reader = csv.DictReader(buf)
        return reader.fieldnames, {r["point"]: r for r in reader}

    def test_columns(self):
        self.make_run("a", 2, 4, ["zero.shard_size=2", "model.recompute=blocks"])
        self.make_run("b", 0, 4, ["zero.shard_size=2", "model.recompute=none"])
        self.make_run("c", 1, 4, [], point=False)
        old = self.make_run("d", 1, 4, ["zero.shard_size=node", "zero.ranks_per_node=2"])
        with open(os.path.join(old, "summary.json")) as f:
            summary = json.load(f)
        for s in summary["stages"]:   # a summary from before hybrid sharding
            del s["shard_size"], s["bytes_per_rank_per_step_inter_group"]
        with open(os.path.join(old, "summary.json"), "w") as f:
            json.dump(summary, f)
        header, rows = self.table()
        # The columns before run_dir are the ones collect.py always wrote; the hybrid ones follow.
        self.assertEqual(header[:len(collect.COLUMNS_HEAD)], collect.COLUMNS_HEAD)
        after = header[header.index("run_dir") + 1:]
        self.assertEqual(after[:5], ["shard_size", "shard_size_setting", "recompute",
                                     "intra_group_bytes", "inter_group_bytes"])
        self.assertEqual(after[5:8], ["intra_all_reduce_bytes", "intra_reduce_scatter_bytes",
                                      "intra_all_gather_bytes"])
        self.assertIn("inter_all_reduce_bytes", after)
        self.assertFalse([c for c in header[:header.index("run_dir")]
                          if c.startswith(("intra", "inter", "shard"))])
        a = rows["a"]
        self.assertEqual((a["shard_size"], a["shard_size_setting"], a["recompute"]),
                         ("2", "2", "blocks"))
        comm = sum(float(a[f"comm_{op}_bytes"]) for op in collect.COLLECTIVES)
        intra, inter = float(a["intra_group_bytes"]), float(a["inter_group_bytes"])
        self.assertGreater(inter, 0)
        self.assertGreater(intra, 0)
        self.assertEqual(intra + inter, comm)
        self.assertEqual(float(a["inter_all_reduce_bytes"]), inter)
        self.assertEqual(float(a["intra_all_reduce_bytes"]), 0)
        self.assertEqual(float(a["intra_reduce_scatter_bytes"]),
                         float(a["comm_reduce_scatter_bytes"]))
        b = rows["b"]   # stage 0: one group of all ranks, whatever the setting
        self.assertEqual((b["shard_size"], b["shard_size_setting"], b["inter_group_bytes"]),
                         ("4", "2", "0"))
        c = rows["c"]
        self.assertEqual((c["shard_size"], c["shard_size_setting"], c["recompute"]),
                         ("4", "", ""))
        d = rows["d"]
        self.assertEqual((d["shard_size"], d["shard_size_setting"], d["intra_group_bytes"],
                          d["inter_group_bytes"]), ("", "node", "", ""))


@unittest.skipUnless(HAVE_MATPLOTLIB, "no matplotlib in this Python (use /usr/bin/python3)")
class PlotHybridTest(WorkDir):
    COMBOS = [(s, r) for s in ("0", "2") for r in ("none", "blocks")]

    def make(self, skew="0", noise="0"):
        zeromini = fake_binary(self.tmp)
        top = os.path.join(self.tmp, "s")
        for stage in range(4):
            for shard, mode in self.COMBOS:
                name = f"h-s{stage}-n1x4-m-shard{shard}-rc{mode}-r0"
                d = os.path.join(top, name)
                overrides = [f"zero.stage={stage}", f"zero.shard_size={shard}",
                             f"model.recompute={mode}"]
                cmd = [zeromini, "run", TINY, "--out", d]
                for o in overrides:
                    cmd += ["--set", o]
                subprocess.run(cmd, env=dict(os.environ, SLURM_NTASKS="4",
                                             FAKE_ZEROMINI_TRAFFIC_NOISE=noise), check=True)
                with open(os.path.join(d, "point.json"), "w") as f:
                    json.dump({"sweep": "h", "name": name, "model": "m", "nodes": 1,
                               "ranks_per_node": 4, "repeat": 0, "overrides": overrides}, f)
        planned = []
        for shard, mode in self.COMBOS:
            planned.append(os.path.join(top, f"planned-m-shard{shard}-rc{mode}.csv"))
            with open(planned[-1], "w") as f:
                subprocess.run([zeromini, "plan", TINY, "--ranks", "4", "--stage", "all",
                                "--format", "csv", "--set", f"zero.shard_size={shard}", "--set",
                                f"model.recompute={mode}"], stdout=f, check=True,
                               env=dict(os.environ, FAKE_ZEROMINI_PLAN_SKEW=skew))
        csv_path = os.path.join(top, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), top, "-o", csv_path])
        return csv_path, planned

    def plot(self, csv_path, planned, check=True):
        return run([os.path.join(SCRIPTS, "plot.py"), "hybrid", csv_path, "--planned", *planned,
                    "--out-dir", os.path.join(self.tmp, "png")], check=check)

    def comparison(self):
        with open(os.path.join(self.tmp, "png", "hybrid_vs_plan.csv")) as f:
            return list(csv.DictReader(f))

    def test_measured_equal_to_planned(self):
        csv_path, planned = self.make()
        res = self.plot(csv_path, planned)
        self.assertIn("144 of 144 figures measured == planned to the byte (largest "
                      "|measured - planned|: 0 bytes)", res.stdout)
        self.assertNotIn("differs", res.stdout)
        for name in ("hybrid_memory", "hybrid_traffic"):
            path = os.path.join(self.tmp, "png", f"{name}.png")
            self.assertGreater(os.path.getsize(path), 10000, path)
        rows = self.comparison()
        self.assertEqual(len(rows), 16 * 9)
        row = next(r for r in rows if (r["stage"], r["shard_size_setting"], r["recompute"],
                                       r["figure"]) == ("3", "2", "blocks", "inter_group"))
        self.assertEqual(row["shard_size"], "2")
        self.assertGreater(int(row["measured"]), 0)
        self.assertEqual(row["measured"], row["planned"])
        row = next(r for r in rows if (r["stage"], r["shard_size_setting"], r["figure"]) ==
                   ("0", "2", "inter_group"))
        self.assertEqual((row["shard_size"], row["measured"]), ("4", "0"))

    def test_a_planner_that_disagrees_is_reported(self):
        csv_path, planned = self.make(skew="8")
        res = self.plot(csv_path, planned)
        # activations and the total of every point differ by the skew.
        self.assertIn("112 of 144 figures measured == planned to the byte (largest "
                      "|measured - planned|: 8 bytes)", res.stdout)
        self.assertRegex(res.stdout, r"differs: m stage 1 4 ranks shard 2 recompute blocks "
                         r"activations: measured 400, planned 408")
        diffs = {r["measured_minus_planned"] for r in self.comparison()
                 if r["figure"] in ("activations", "memory_total")}
        self.assertEqual(diffs, {"-8"})

    def test_the_rounding_of_mean_traffic_is_not_a_difference(self):
        # summary.json's traffic is a mean in floating point: 1734156.0000000002 for 1734156.
        csv_path, planned = self.make(noise="2.5e-10")
        res = self.plot(csv_path, planned)
        self.assertRegex(res.stdout, r"144 of 144 figures measured == planned to the byte "
                         r"\(largest \|measured - planned\|: [0-9.]+e-10 bytes\)")
        self.assertNotIn("differs", res.stdout)
        diffs = {float(r["measured_minus_planned"]) for r in self.comparison()
                 if r["figure"] == "inter_group" and r["measured"] != "0"}
        self.assertTrue(diffs and all(0 < d < 1e-6 for d in diffs), diffs)   # not rounded away

    def test_planned_csv_without_the_hybrid_columns(self):
        csv_path, _ = self.make()
        old = os.path.join(self.tmp, "old.csv")
        with open(old, "w") as f:
            f.write("deck,precision,stage,ranks,params_bytes,grads_bytes,optimizer_bytes\n"
                    "d,fp32,0,4,1,1,1\n")
        res = self.plot(csv_path, [old], check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertRegex(res.stderr, r"old\.csv: no column .*intra_group_bytes")


@unittest.skipUnless(os.environ.get("ZEROMINI_BIN"), "ZEROMINI_BIN not set")
@unittest.skipUnless(shutil.which("mpiexec"), "no mpiexec")
class RealHybridSweepTest(SweepDir):
    """The real executable: a hybrid sweep at 4 ranks as 2 faked nodes, against its planner."""

    def test_hybrid_sweep_matches_the_planner(self):
        text = ('name = "hyb"\ndeck = "{deck}"\nstages = [1, 3]\nranks_per_node = [4]\n'
                'shard_sizes = [0, 2]\nrecompute = ["none", "blocks"]\nsteps = 2\n'
                'set = ["zero.ranks_per_node=2"]\nmodels = [{{name = "tiny"}}]\n')
        out = os.path.join(self.tmp, "s")
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir", out,
                   "--bin", os.environ["ZEROMINI_BIN"], "--local"])
        self.assertEqual(res.stdout.count(": done in "), 8, res.stdout)
        planned = sorted(glob.glob(os.path.join(out, "planned-tiny-*.csv")))
        self.assertEqual(len(planned), 4, res.stdout)
        csv_path = os.path.join(out, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), out, "-o", csv_path])
        with open(csv_path) as f:
            rows = {(r["stage"], r["shard_size_setting"], r["recompute"]): r
                    for r in csv.DictReader(f)}
        self.assertEqual(len(rows), 8)
        for stage in ("1", "3"):
            hybrid, flat = rows[stage, "2", "none"], rows[stage, "0", "none"]
            self.assertEqual((hybrid["shard_size"], flat["shard_size"]), ("2", "4"))
            self.assertGreater(float(hybrid["inter_group_bytes"]), 0)
            self.assertEqual(float(flat["inter_group_bytes"]), 0)
            self.assertGreater(int(hybrid["mem_optimizer_bytes"]),
                               int(flat["mem_optimizer_bytes"]))
            self.assertLess(int(rows[stage, "0", "blocks"]["mem_activations_bytes"]),
                            int(flat["mem_activations_bytes"]))
        if HAVE_MATPLOTLIB:
            res = run([os.path.join(SCRIPTS, "plot.py"), "hybrid", csv_path, "--planned",
                       *planned])
            found = re.search(r"(\d+) of (\d+) figures measured == planned to the byte \(largest "
                              r"\|measured - planned\|: (\S+) bytes\)", res.stdout)
            self.assertTrue(found, res.stdout)
            self.assertEqual(found.group(1, 2), ("72", "72"), res.stdout)
            self.assertLess(float(found.group(3)), 1e-3, res.stdout)


if __name__ == "__main__":
    unittest.main()
