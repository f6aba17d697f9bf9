#!/usr/bin/env python3
"""Tests of the communication-exposure scripts: src/modules/timeline/plot_timeline.py
(`plot.py timeline`), `plot.py overlap` and collect.py's exposed_comm_s, comm_in_flight_s and
overlap_efficiency.

    /usr/bin/python3 tests/modules/timeline/test_comm_exposure.py [-v]

The traces are synthetic, in the format of zeromini's trace.json (output.trace = true): a small
simulation of each ZeRO stage's step on every rank, collectives queued on one communication
stream, waits wherever compute needs a collective that has not completed. Its own bookkeeping of
the waits and of the in-flight intervals (integer microseconds, counted tick by tick) is the
expected answer the scripts' figures are checked against. Plotting tests need matplotlib
(Debian's /usr/bin/python3); the exposure and CSV tests need only the standard library.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SCRIPTS = os.path.join(REPO, "scripts")
MODULE = os.path.join(REPO, "src", "modules", "timeline")
sys.path.insert(0, SCRIPTS)
sys.path.insert(0, MODULE)

import collect  # noqa: E402
import plot_timeline  # noqa: E402

PYTHON = sys.executable
try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


class RankStep:
    """One rank's step: compute in sequence, collectives queued on one stream."""

    def __init__(self, events, rank, stage, step, t, ranks):
        self.events, self.rank, self.stage, self.step = events, rank, stage, step
        self.ring = 2 * (ranks - 1) / ranks     # a ring collective's time, relative to 2 ranks
        self.start = self.t = self.comm_free = t
        self.done, self.waited, self.in_flight, self.count = {}, 0, set(), 0

    def _event(self, **e):
        e.setdefault("tid", 0)
        e["args"] = dict(e.get("args", {}), stage=self.stage, step=self.step)
        self.events.append(dict(e, pid=self.rank))

    def compute(self, name, dur, waits=(), after=None, **args):
        """A region as zeromini traces it: the waits it starts with, dur of work, then after()
        (which may post and wait) inside it too."""
        start = self.t
        for cid, op in waits:
            self.wait(cid, op)
        self.t += dur
        if after:
            after()
        self._event(ph="X", cat="compute", name=name, ts=start, dur=self.t - start, args=args)

    def post(self, op, dur, unit=-1, purpose="other"):
        self.count += 1
        cid = f"{self.rank}:{self.stage}.{self.step}.{self.count}"
        self.comm_free = max(self.t, self.comm_free) + round(dur * self.ring)
        self.done[cid] = self.comm_free
        self.in_flight |= set(range(int(self.t), int(self.comm_free)))
        self._event(ph="b", cat="collective", name=op, id=cid, ts=self.t, tid=1,
                    args={"op": op, "bytes": 4096, "unit": unit, "purpose": purpose})
        self.events.append({"ph": "e", "cat": "collective", "name": op, "id": cid, "tid": 1,
                            "pid": self.rank, "ts": self.comm_free,
                            "args": {"stage": self.stage, "step": self.step}})
        return cid

    def wait(self, cid, op):
        if self.done[cid] > self.t:
            dur = self.done[cid] - self.t
            self._event(ph="X", cat="wait", name=f"wait {op}", ts=self.t, dur=dur,
                        args={"id": cid, "op": op})
            self.waited += dur
            self.t += dur

    def finish(self):
        self._event(ph="X", cat="step", name=f"step {self.step}", ts=self.start,
                    dur=self.t - self.start)


def simulate_step(rs, layers, ranks):
    """A ZeRO step of rs.stage: forward, backward with the stage's collectives, optimizer."""
    stage = rs.stage
    fwd = [(0, "embedding")] + [(i + 1, f"block {i}") for i in range(layers)] + \
        [(layers + 1, "final_norm"), (0, "head")]
    grad_op = "all_reduce" if stage == 0 else "reduce_scatter"
    grads = []
    for order, kind, dur in ((fwd, "forward", 80 + 4 * rs.rank), (fwd[::-1], "backward", 160)):
        gathers = {}
        for k, (unit, name) in enumerate(order):
            if stage == 3:    # all-gather this unit (prefetching the next) before computing it
                for u, _ in order[k:k + 2]:
                    if u not in gathers:
                        gathers[u] = rs.post("all_gather", 70, u, "param_gather")
            rs.compute(f"{kind} {name}", dur, [(gathers[unit], "all_gather")] if stage == 3
                       else (), unit=unit, unit_name=name, micro=0)
            # Gradients: stage 0 all-reduces buckets of two units, the others reduce-scatter
            # each unit as backward completes it.
            if kind == "backward" and (stage > 0 or k % 2 == 1 or k == len(order) - 1):
                grads.append(rs.post(grad_op, 200 if stage == 0 else 100, unit, "grad_reduce"))
    rs.compute("finish_backward", 5, [(cid, grad_op) for cid in grads])
    rs.compute("grad_stats", 10, after=lambda: rs.wait(rs.post("all_reduce", 30, -1, "stats"),
                                                        "all_reduce"))
    gather = (lambda: rs.wait(rs.post("all_gather", 260, -1, "param_gather"), "all_gather")) \
        if stage in (1, 2) else None
    rs.compute("optimizer", 300 // (ranks if stage >= 1 else 1), after=gather)
    rs.finish()


def synthetic_run(directory, stages, ranks=2, layers=2, steps=2, summary=True):
    """A run directory with trace.json (and summary.json: its comm_exposure from the
    simulation); returns {(stage, step, rank): (exposed_us, in_flight_us)}."""
    events = [{"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}}
              for r in range(ranks)]
    events += [{"ph": "M", "name": "thread_name", "pid": r, "tid": t, "args": {"name": n}}
               for r in range(ranks) for t, n in ((0, "compute"), (1, "communication"))]
    truth, t = {}, 100.0
    for stage in stages:
        for step in range(1, steps + 1):
            done = []
            for rank in range(ranks):
                rs = RankStep(events, rank, stage, step, t + 7 * rank, ranks)
                simulate_step(rs, layers, ranks)
                truth[stage, step, rank] = (rs.waited, len(rs.in_flight))
                done.append(rs.t)
            t = max(done) + 50
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "trace.json"), "w", encoding="utf-8") as f:
        json.dump({"displayTimeUnit": "ms", "otherData": {"ranks": ranks},
                   "traceEvents": events}, f)
    if summary:
        write_summary(directory, stages, ranks, steps, truth)
    return truth


def write_summary(directory, stages, ranks, steps, truth, scale=1.0):
    entries = []
    for stage in stages:
        by = {k: [[truth[stage, s, r][i] * 1e-6 * scale for s in range(1, steps + 1)]
                  for r in range(ranks)] for i, k in enumerate(("exposed", "in_flight"))}
        timed = [truth[stage, s, r] for s in range(2, steps + 1) for r in range(ranks)]
        exposed, flight = sum(x[0] for x in timed), sum(x[1] for x in timed)
        entries.append({"stage": stage, "ranks": ranks, "steps": steps, "comm_exposure": {
            "exposed_seconds": exposed * 1e-6 / len(timed),
            "in_flight_seconds": flight * 1e-6 / len(timed),
            "overlap_efficiency": 1 - exposed / flight if flight else None,
            "steps": list(range(1, steps + 1)), "exposed_seconds_by_rank": by["exposed"],
            "in_flight_seconds_by_rank": by["in_flight"]}})
    with open(os.path.join(directory, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"deck": "synthetic.toml", "micro_batch": 2, "grad_accum": 1,
                   "model": {"layers": 2, "dim": 32, "heads": 4, "vocab": 97, "seq_len": 16},
                   "stages": entries}, f)


def run(args, check=True):
    res = subprocess.run([PYTHON] + args, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {res.returncode}:\n{res.stdout}\n"
                             f"{res.stderr}")
    return res


def collective(cid, b, e, op="all_reduce", rank=0, stage=0, step=1):
    args = {"stage": stage, "step": step}
    out = [{"ph": "b", "cat": "collective", "name": op, "id": cid, "pid": rank, "tid": 1,
            "ts": b, "args": dict(args, op=op, bytes=8, unit=-1, purpose="grad_reduce")}]
    if e is not None:
        out.append({"ph": "e", "cat": "collective", "name": op, "id": cid, "pid": rank,
                    "tid": 1, "ts": e, "args": args})
    return out


def wait(ts, dur, rank=0, stage=0, step=1):
    return [{"ph": "X", "cat": "wait", "name": "wait all_reduce", "pid": rank, "tid": 0,
             "ts": ts, "dur": dur, "args": {"stage": stage, "step": step, "op": "all_reduce"}}]


class ExposureTest(unittest.TestCase):
    """plot_timeline's figures on hand-made traces with known answers."""

    def test_known_answers(self):
        events = collective("0:1", 0, 10) + collective("0:2", 5, 20) + wait(10, 3) + wait(16, 4)
        x = plot_timeline.exposure_of(events, 0, 1)
        self.assertEqual(x["by_rank"], {0: {"exposed_us": 7.0, "in_flight_us": 20.0}})
        self.assertAlmostEqual(x["efficiency"], 1 - 7 / 20)
        # A second rank: disjoint collectives, no waits. Means over ranks; efficiency from sums.
        events += collective("1:1", 100, 130, rank=1) + collective("1:2", 140, 150, rank=1)
        x = plot_timeline.exposure_of(events, 0, 1)
        self.assertEqual(x["by_rank"][1], {"exposed_us": 0.0, "in_flight_us": 40.0})
        self.assertEqual((x["exposed_us"], x["in_flight_us"]), (3.5, 30.0))
        self.assertAlmostEqual(x["efficiency"], 1 - 7 / 60)

    def test_steps_and_stages_apart(self):
        events = collective("0:1", 0, 10) + collective("0:2", 50, 60, step=2) + \
            collective("0:3", 0, 100, stage=3) + wait(2, 1, step=2) + wait(20, 5, stage=3)
        index = plot_timeline.index_trace(events)
        self.assertEqual(sorted(index), [0, 3])
        self.assertEqual(plot_timeline.step_exposure(index[0][1])["by_rank"][0],
                         {"exposed_us": 0.0, "in_flight_us": 10.0})
        self.assertEqual(plot_timeline.step_exposure(index[0][2])["by_rank"][0],
                         {"exposed_us": 1.0, "in_flight_us": 10.0})
        self.assertAlmostEqual(plot_timeline.step_exposure(index[3][1])["efficiency"], 0.95)

    def test_union_and_lanes(self):
        union = plot_timeline.union_length
        self.assertEqual(union([]), 0)
        self.assertEqual(union([(0, 10), (2, 3)]), 10)
        self.assertEqual(union([(5, 8), (0, 5)]), 8)
        self.assertEqual(union([(0, 1), (3, 4), (2, 5)]), 4)
        lane_of, n = plot_timeline.lanes([(0, 10), (5, 20), (12, 15), (21, 22)])
        self.assertEqual((lane_of, n), ([0, 1, 0, 0], 2))

    def test_nothing_in_flight_and_unfinished(self):
        step = [{"ph": "X", "cat": "step", "name": "step 1", "pid": 0, "tid": 0, "ts": 0,
                 "dur": 100, "args": {"stage": 1, "step": 1}}]
        self.assertIsNone(plot_timeline.exposure_of(step, 1, 1)["efficiency"])
        # A collective the trace never saw complete is in flight until the step's end.
        x = plot_timeline.exposure_of(step + collective("0:1", 60, None, stage=1), 1, 1)
        self.assertEqual(x["in_flight_us"], 40.0)

    def test_synthetic_trace_against_its_simulation(self):
        tmp = tempfile.mkdtemp(prefix="zeromini-exposure-")
        self.addCleanup(shutil.rmtree, tmp)
        truth = synthetic_run(tmp, [0, 1, 2, 3], ranks=2, steps=2)
        _, index, _ = plot_timeline.read_run(tmp)
        for (stage, step, rank), (exposed, flight) in truth.items():
            got = plot_timeline.step_exposure(index[stage][step])["by_rank"][rank]
            self.assertAlmostEqual(got["exposed_us"], exposed, places=6)
            self.assertAlmostEqual(got["in_flight_us"], flight, places=6)
        # The stages differ as the simulation has them: stage 1's parameter all-gather after the
        # optimizer is all exposed, stage 0's gradient all-reduce mostly hidden behind backward.
        eff = {s: plot_timeline.step_exposure(index[s][2])["efficiency"] for s in range(4)}
        self.assertGreater(eff[0], eff[1])
        self.assertEqual(eff[1], eff[2])


class CollectTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zeromini-collect-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_exposure_columns(self):
        new = os.path.join(self.tmp, "new")
        truth = synthetic_run(new, [0, 3], ranks=2, steps=3)
        old = os.path.join(self.tmp, "old")
        os.makedirs(old)
        with open(os.path.join(new, "summary.json")) as f:
            summary = json.load(f)
        for entry in summary["stages"]:
            del entry["comm_exposure"]
        with open(os.path.join(old, "summary.json"), "w") as f:
            json.dump(summary, f)
        out = os.path.join(self.tmp, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), self.tmp, "-o", out])
        with open(out) as f:
            reader = csv.DictReader(f)
            header, rows = reader.fieldnames, list(reader)
        cols = ["exposed_comm_s", "comm_in_flight_s", "overlap_efficiency"]
        at = header.index("time_optimizer_s") + 1
        self.assertEqual(header[at:at + 3], cols)
        self.assertEqual(header[at + 3], "mem_parameters_bytes")
        self.assertEqual(header.count("comm_in_flight_s"), 1)
        for row in rows:
            stage = int(row["stage"])
            if row["run_dir"].endswith("old"):
                self.assertEqual([row[c] for c in cols], ["", "", ""])
                continue
            timed = [truth[stage, s, r] for s in (2, 3) for r in (0, 1)]
            exposed, flight = sum(t[0] for t in timed), sum(t[1] for t in timed)
            self.assertAlmostEqual(float(row["exposed_comm_s"]), exposed * 1e-6 / 4)
            self.assertAlmostEqual(float(row["comm_in_flight_s"]), flight * 1e-6 / 4)
            self.assertAlmostEqual(float(row["overlap_efficiency"]), 1 - exposed / flight)
        self.assertEqual(len(rows), 4)

    def test_null_efficiency_is_empty(self):
        entry = {"comm_exposure": {"exposed_seconds": 0.0, "in_flight_seconds": 0.0,
                                   "overlap_efficiency": None}}
        self.assertEqual(collect.exposure_columns(entry),
                         {"exposed_comm_s": 0.0, "comm_in_flight_s": 0.0,
                          "overlap_efficiency": None})
        self.assertEqual(set(collect.exposure_columns({}).values()), {None})


@unittest.skipUnless(HAVE_MATPLOTLIB, "no matplotlib in this Python (use /usr/bin/python3)")
class PlotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zeromini-plot-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def assert_picture(self, path, red=False):
        import matplotlib.image
        self.assertGreater(os.path.getsize(path), 20000, path)
        pixels = matplotlib.image.imread(path)[:, :, :3]
        colours = {tuple(p) for p in (pixels[::4, ::4].reshape(-1, 3) * 255).astype(int)}
        self.assertGreater(len(colours), 20, f"{path}: {len(colours)} colours")
        if red:     # the waits: plot_timeline.WAIT_COLOR, #d62728
            r, g, b = (pixels[:, :, i] * 255 for i in range(3))
            hits = ((abs(r - 0xd6) < 4) & (abs(g - 0x27) < 4) & (abs(b - 0x28) < 4)).sum()
            self.assertGreater(hits, 50, f"{path}: no waits drawn")

    def test_timeline_two_stages_one_trace(self):
        synthetic_run(self.tmp, [0, 3], ranks=2)
        out = os.path.join(self.tmp, "t.png")
        res = run([os.path.join(SCRIPTS, "plot.py"), "timeline", self.tmp, "-o", out])
        self.assertNotIn("note:", res.stderr)      # summary.json agrees with the trace
        self.assert_picture(out, red=True)
        run([os.path.join(SCRIPTS, "plot.py"), "timeline", self.tmp])
        self.assert_picture(os.path.join(self.tmp, "timeline.png"))

    def test_timeline_one_stage_per_run(self):
        dirs = [os.path.join(self.tmp, f"s{s}") for s in (1, 2)]
        for s, d in zip((1, 2), dirs):
            synthetic_run(d, [s], ranks=2, steps=3 if s == 1 else 2)
        out = os.path.join(self.tmp, "t.png")
        run([os.path.join(SCRIPTS, "plot.py"), "timeline", *dirs, "-o", out, "--step", "2"])
        self.assert_picture(out, red=True)
        res = run([os.path.join(SCRIPTS, "plot.py"), "timeline", *dirs, "-o", out, "--step", "3"])
        self.assertIn("stage 2 has no step 3", res.stderr)
        os.remove(out)
        run([os.path.join(SCRIPTS, "plot.py"), "timeline", *dirs, "-o", out, "--ranks", "1"])
        self.assert_picture(out, red=True)
        res = run([os.path.join(SCRIPTS, "plot.py"), "timeline", *dirs, "-o", out, "--ranks",
                   "5"], check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("none of the ranks [5]", res.stderr)

    def test_timeline_disagreeing_summary_and_no_trace(self):
        truth = synthetic_run(self.tmp, [2], ranks=2)
        write_summary(self.tmp, [2], 2, 2, truth, scale=2.0)
        res = run([os.path.join(SCRIPTS, "plot.py"), "timeline", self.tmp, "-o",
                   os.path.join(self.tmp, "t.png")])
        self.assertIn("in summary.json", res.stderr)
        res = run([os.path.join(SCRIPTS, "plot.py"), "timeline", os.path.join(self.tmp, "x")],
                  check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("no trace.json", res.stderr)

    def test_overlap_from_collected_csv(self):
        for ranks in (1, 2, 4):
            synthetic_run(os.path.join(self.tmp, f"n{ranks}"), [0, 1, 2, 3], ranks=ranks,
                          steps=2)
        csv_path = os.path.join(self.tmp, "results.csv")
        run([os.path.join(SCRIPTS, "collect.py"), self.tmp, "-o", csv_path])
        out = os.path.join(self.tmp, "o.png")
        run([os.path.join(SCRIPTS, "plot.py"), "overlap", csv_path, "-o", out])
        self.assert_picture(out)
        run([os.path.join(SCRIPTS, "plot.py"), "overlap", csv_path])
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "overlap.png")))
        with open(csv_path) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({r["overlap_efficiency"] for r in rows if r["ranks"] == "1"}, {""})
        for row in rows:
            row["exposed_comm_s"] = row["overlap_efficiency"] = ""
        old = os.path.join(self.tmp, "old.csv")
        with open(old, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        res = run([os.path.join(SCRIPTS, "plot.py"), "overlap", old], check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("no exposed_comm_s", res.stderr)


if __name__ == "__main__":
    unittest.main()
