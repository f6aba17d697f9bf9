#!/usr/bin/env python3
"""Tests of scripts/collect.py (rows and columns from summary.json, point.json and job.env; the
command line) and scripts/plot.py (the figures of a sweep against the planner's prediction; the
median and min-max spread it draws), on runs of fake_zeromini.py, a stand-in that writes a
summary.json in zeromini's format.

    python3 tests/workflow/test_collect_plot.py [-v]

Plotting needs matplotlib (Debian's /usr/bin/python3); without it PlotTest is skipped.
"""

import csv
import io
import json
import os
import subprocess
import unittest

from workflow_common import HAVE_MATPLOTLIB, SCRIPTS, TINY, WorkDir, collect, fake_binary, run


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
        # Throughput, appended after tp: MFU empty without a peak, busbw in GB/s where sent.
        self.assertEqual(header[-len(collect.THROUGHPUT) - 5:-5], collect.THROUGHPUT)
        for r in table:
            self.assertAlmostEqual(float(r["tflops_total"]),
                                   float(r["tflops_per_device"]) * int(r["ranks"]))
            self.assertEqual((r["mfu"], r["peak_tflops_per_device"]), ("", ""))
        self.assertEqual(plain[0]["busbw_all_reduce_gbs"], "1.0")
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


class SpreadTest(unittest.TestCase):
    """What the plots draw of a point's repeats: the median, error bars from min to max."""

    def test_stats_and_error_bars(self):
        from zeromini_tools.plotting import error_bars
        from zeromini_tools.results import stats
        # A slow repeat (90 ms) moves the mean to 50 ms; the median stays at the others'.
        self.assertEqual(stats([0.030, None, 0.090, 0.031]), (0.031, 0.030, 0.090, 3))
        self.assertEqual(stats([2.0, 1.0]), (1.5, 1.0, 2.0, 2))
        self.assertIsNone(stats([None]))
        medians, err = error_bars([(31, 30, 90, 3), (50, 40, 55, 2)])
        self.assertEqual((medians, err), ([31, 50], [[1, 10], [59, 5]]))
        self.assertEqual(error_bars([(31, 31, 31, 1)]), ([31], None))

    def test_throughput_lines_are_medians_with_the_spread(self):
        import plot
        from zeromini_tools.results import stats

        class Axes:
            def __init__(self):
                self.calls = []

            def errorbar(self, x, y, **kw):
                self.calls.append((x, y, kw.get("yerr")))

        ax = Axes()
        drawn = plot.stage_lines(ax, {1: {2: stats([900.0, 1000.0, 990.0]),
                                          1: stats([500.0])}}, scale=10)
        self.assertEqual(sorted(drawn), [1, 2])
        self.assertEqual(ax.calls, [([1, 2], [50.0, 99.0], [[0.0, 9.0], [0.0, 1.0]])])


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


if __name__ == "__main__":
    unittest.main()
