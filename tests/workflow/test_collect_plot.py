#!/usr/bin/env python3
"""Tests of scripts/collect.py (rows and columns from summary.json, point.json and job.env; the
command line; the summary over repeats: median, min, max and N of every timing, on synthetic run
directories) and scripts/plot.py (the figures of a sweep against the planner's prediction; the
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


def synthetic_run(directory, repeat, step_s, tokens_per_s, final_loss=3.5, status_steps=10,
                  evaluation=None, time_to_target=None, exposure=True, point="q-s1-n1x2-m"):
    """A sweep point's run directory written by hand: summary.json (one stage) and point.json."""
    stage = {"stage": 1, "ranks": 2, "params": 1000, "padded_params": 1000,
             "steps": status_steps, "stopped_non_finite": False,
             "tokens_per_rank_per_step": 64, "tokens_per_second_per_rank": tokens_per_s,
             "final_loss": final_loss,
             "time_seconds": {"step": step_s, "forward": step_s / 4, "backward": step_s / 2,
                              "comm_wait": step_s / 10, "optimizer": step_s / 4},
             "memory_peak_bytes_max_over_ranks": {"parameters": 4000, "gradients": 4000,
                                                  "optimizer": 4000, "total": 20000},
             "bytes_per_rank_per_step": {"all_reduce": 0, "reduce_scatter": 4000}}
    if exposure:
        stage["comm_exposure"] = {"exposed_seconds": step_s / 20, "in_flight_seconds": step_s / 5,
                                  "overlap_efficiency": 0.75}
    if evaluation is not None:
        stage["evaluation"] = evaluation
    if time_to_target is not None:
        stage["time_to_target"] = time_to_target
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "summary.json"), "w") as f:
        json.dump({"deck": "d.toml", "model": {"layers": 2}, "micro_batch": 2, "grad_accum": 1,
                   "stages": [stage]}, f)
    with open(os.path.join(directory, "point.json"), "w") as f:
        json.dump({"sweep": "q", "name": f"{point}-r{repeat}", "model": "m", "nodes": 1,
                   "ranks_per_node": 2, "repeat": repeat, "scaling": "weak", "steps": 10}, f)


class SummaryTest(WorkDir):
    """collect.py's summary over repeats: median, min, max and n per timing and point."""

    def make_sweep(self):
        top = os.path.join(self.tmp, "q")
        # Point A: four repeats, three completed (step 30, 36, 31 ms), one stopped early at
        # 90 ms, which no figure may include.
        for repeat, step, tokens, steps in ((0, 0.030, 1000.0, 10), (1, 0.036, 900.0, 10),
                                            (2, 0.031, 990.0, 10), (3, 0.090, 100.0, 4)):
            synthetic_run(os.path.join(top, f"q-s1-n1x2-m-r{repeat}"), repeat, step, tokens,
                          status_steps=steps)
        # Point B: two repeats (median: their mean) whose final loss differs, the second
        # without an exposure figure.
        for repeat, step, loss in ((0, 0.050, 3.25), (1, 0.060, 3.5)):
            synthetic_run(os.path.join(top, f"q-s1-n1x2-b-r{repeat}"), repeat, step, 500.0,
                          final_loss=loss, exposure=repeat == 0, point="q-s1-n1x2-b")
        return top

    def summary(self, top):
        warnings = []
        rows, columns = collect.summarize(collect.collect([top]), warn=warnings.append)
        return {r["point"]: r for r in rows}, columns, warnings

    def test_median_min_max_and_n_per_point(self):
        by_point, columns, warnings = self.summary(self.make_sweep())
        self.assertEqual(sorted(by_point), ["q-s1-n1x2-b", "q-s1-n1x2-m"])
        a = by_point["q-s1-n1x2-m"]
        self.assertEqual((a["runs"], a["completed"]), (4, 3))
        self.assertEqual([a[f"time_step_s_{s}"] for s in ("median", "min", "max", "n")],
                         [0.031, 0.030, 0.036, 3])
        self.assertEqual([a[f"tokens_per_second_per_rank_{s}"] for s in ("median", "min", "max",
                                                                          "n")],
                         [990.0, 900.0, 1000.0, 3])
        self.assertEqual([a[f"tokens_per_second_{s}"] for s in ("median", "min", "max")],
                         [1980.0, 1800.0, 2000.0])
        for phase, share in (("forward", 4), ("backward", 2), ("comm_wait", 10)):
            self.assertAlmostEqual(a[f"time_{phase}_s_median"], 0.031 / share)
            self.assertAlmostEqual(a[f"time_{phase}_s_max"], 0.036 / share)
        self.assertAlmostEqual(a["exposed_comm_s_min"], 0.030 / 20)
        self.assertEqual((a["overlap_efficiency_median"], a["overlap_efficiency_n"]), (0.75, 3))
        # What is not a timing is one value: the deck, memory, bytes, the loss.
        self.assertEqual((a["stage"], a["ranks"], a["model"], a["mem_total_bytes"],
                          a["comm_reduce_scatter_bytes"], a["final_loss"], a["differing"]),
                         (1, 2, "m", 20000, 4000, 3.5, ""))
        b = by_point["q-s1-n1x2-b"]
        self.assertEqual((b["runs"], b["completed"]), (2, 2))
        self.assertEqual([b[f"time_step_s_{s}"] for s in ("median", "min", "max", "n")],
                         [0.055, 0.050, 0.060, 2])
        self.assertEqual((b["exposed_comm_s_median"], b["exposed_comm_s_n"]), (0.05 / 20, 1))
        # Repeats that should agree and do not: a warning, the first repeat's value, the column.
        self.assertEqual((b["final_loss"], b["differing"]), (3.25, "final_loss"))
        self.assertEqual(len(warnings), 1, warnings)
        self.assertRegex(warnings[0], r"^q-s1-n1x2-b stage 1: final_loss differs between repeats "
                         r"\(repeat 0: 3\.25, repeat 1: 3\.5\)")
        # The columns: runs and completed for repeat; four per timing; none of one run's own.
        for gone in ("repeat", "job_id", "status", "run_dir", "time_step_s", "tokens_per_second"):
            self.assertNotIn(gone, columns)
        at = columns.index("runs")
        self.assertEqual(columns[at:at + 2], ["runs", "completed"])
        at = columns.index("time_step_s_median")
        self.assertEqual(columns[at:at + 4], [f"time_step_s_{s}" for s in ("median", "min",
                                                                             "max", "n")])
        self.assertIn("mem_total_bytes", columns)
        self.assertEqual(columns[-1], "differing")
        self.assertFalse(any(c.startswith(("val_loss", "eval_seconds")) for c in columns))

    def test_evaluation_columns(self):
        top = os.path.join(self.tmp, "q")
        for repeat, seconds, to_target in ((0, 1.5, 12.0), (1, 1.25, 10.0), (2, 2.0, 11.0)):
            synthetic_run(os.path.join(top, f"q-s1-n1x2-m-r{repeat}"), repeat, 0.03, 1000.0,
                          evaluation={"every": 5, "batches": 2, "loss_floor": None,
                                      "evaluations": [{"step": 5, "loss": 4.0, "seconds": 0.5}],
                                      "seconds": seconds, "last_loss": 3.75},
                          time_to_target={"target_loss": 4.0, "reached": True, "step": 7,
                                          "tokens": 896, "seconds": to_target})
        # A point that evaluated without reaching its target, and one that did not evaluate.
        synthetic_run(os.path.join(top, "q-s1-n1x2-x-r0"), 0, 0.03, 1000.0, point="q-s1-n1x2-x",
                      evaluation={"every": 5, "batches": 2, "loss_floor": None, "evaluations": [],
                                  "seconds": 0.5, "last_loss": None},
                      time_to_target={"target_loss": 2.0, "reached": False, "step": None,
                                      "tokens": None, "seconds": None})
        synthetic_run(os.path.join(top, "q-s1-n1x2-y-r0"), 0, 0.03, 1000.0, point="q-s1-n1x2-y")
        rows = collect.collect([top])
        buf = io.StringIO()
        collect.write_csv(rows, buf)
        buf.seek(0)
        table = list(csv.DictReader(buf))
        header = list(table[0])
        self.assertEqual(header[-6:], ["val_loss", "eval_seconds", "target_loss",
                                       "steps_to_target", "tokens_to_target",
                                       "seconds_to_target"])
        by_point = {r["point"]: r for r in table}
        self.assertEqual([by_point["q-s1-n1x2-m-r1"][c] for c in header[-6:]],
                         ["3.75", "1.25", "4.0", "7", "896", "10.0"])
        self.assertEqual([by_point["q-s1-n1x2-x-r0"][c] for c in header[-6:]],
                         ["", "0.5", "2.0", "", "", ""])
        self.assertEqual([by_point["q-s1-n1x2-y-r0"][c] for c in header[-6:]], [""] * 6)
        summary, columns = collect.summarize(rows, warn=self.fail)
        m = next(r for r in summary if r["point"] == "q-s1-n1x2-m")
        self.assertEqual([m[f"seconds_to_target_{s}"] for s in ("median", "min", "max", "n")],
                         [11.0, 10.0, 12.0, 3])
        self.assertEqual([m[f"eval_seconds_{s}"] for s in ("median", "min", "max", "n")],
                         [1.5, 1.25, 2.0, 3])
        self.assertEqual((m["val_loss"], m["target_loss"], m["steps_to_target"],
                          m["tokens_to_target"]), (3.75, 4.0, 7, 896))
        x = next(r for r in summary if r["point"] == "q-s1-n1x2-x")
        self.assertEqual((x["seconds_to_target_median"], x["seconds_to_target_n"]), (None, 0))

    def test_command_line_writes_the_summary_beside_the_rows(self):
        top = self.make_sweep()
        out = os.path.join(self.tmp, "results.csv")
        table = os.path.join(self.tmp, "table.md")
        res = run([os.path.join(SCRIPTS, "collect.py"), top, "-o", out, "--markdown", table])
        self.assertIn("6 rows from 6 runs", res.stderr)
        self.assertIn(f"2 points (median, min, max and n of each timing over the completed "
                      f"repeats) -> {os.path.join(self.tmp, 'results-summary.csv')}", res.stderr)
        self.assertIn("final_loss differs between repeats", res.stderr)
        # Spreads: A (36 - 30) / 31 = 19.4 %, B (60 - 50) / 55 = 18.2 %.
        self.assertIn("step time over 2/3 completed repeats per point: spread (max - min) / "
                      "median 18.8 % (median over 2 points), largest 19.4 % (q-s1-n1x2-m, "
                      "stage 1)", res.stderr)
        with open(os.path.join(self.tmp, "results-summary.csv")) as f:
            summary = {r["point"]: r for r in csv.DictReader(f)}
        self.assertEqual([summary["q-s1-n1x2-m"][f"time_step_s_{s}"]
                          for s in ("median", "min", "max", "n")],
                         ["0.031", "0.03", "0.036", "3"])
        with open(table) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[2], "| s1-n1x2-b | 1 | 2 | 55.0 | 50.0-60.0 | 18.2 % | 500 | "
                                   "500-500 |")
        self.assertEqual(lines[3], "| s1-n1x2-m | 1 | 3 | 31.0 | 30.0-36.0 | 19.4 % | 990 | "
                                   "900-1000 |")
        other = os.path.join(self.tmp, "elsewhere.csv")
        run([os.path.join(SCRIPTS, "collect.py"), top, "-o", out, "--summary", other])
        with open(other) as f:
            self.assertEqual(len(list(csv.DictReader(f))), 2)


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
