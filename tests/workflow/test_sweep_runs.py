#!/usr/bin/env python3
"""Tests of scripts/sweep.py running a sweep: when a point counts as finished, --dry-run, --list
and --only, submission with sbatch and the queue (fake sbatch and squeue commands that log their
arguments), and local runs with mpiexec, all with fake_zeromini.py as zeromini; repeats in
alternating rounds (every point once per round) in all of them.

    python3 tests/workflow/test_sweep_runs.py [-v] [RealZerominiTest]

The local runs use MPICH's mpiexec when it is installed. Sweep files are read by the real
zeromini (see workflow_common.py). With ZEROMINI_BIN set to the real executable,
RealZerominiTest also runs a small sweep of the real program with --local and checks collect.py's
and plot.py's results.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import unittest

from workflow_common import (HAVE_MATPLOTLIB, SCRIPTS, SWEEP_BIN, SweepDir, WorkDir, collect,
                             fake_binary, run, sweep, write)



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

    def test_list_and_dry_run_go_round_by_round(self):
        out_dir = os.path.join(self.tmp, "sweep")
        for mode in ("--list", "--dry-run"):
            res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(), "--dir", out_dir,
                       mode, "--bin", fake_binary(self.tmp)])
            self.assertIn("16 points", res.stdout)
            self.assertIn("in 2 rounds (every point once per round)", res.stdout)
            names = re.findall(r"^\[\d+/16\] (\S+): ", res.stdout, re.M)
            self.assertEqual(len(names), 16, res.stdout)
            self.assertEqual(names[:8], [n.replace("-r1", "-r0") for n in names[8:]])
            self.assertTrue(all(n.endswith("-r0") for n in names[:8]), names)

    def test_only_and_list(self):
        res = run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(), "--dir",
                   os.path.join(self.tmp, "s"), "--list", "--only", "n2x2-small", "--bin",
                   SWEEP_BIN])
        self.assertIn("4 points", res.stdout)
        self.assertEqual(res.stdout.count(": to run (no summary.json)"), 4)

    def test_bad_sweep_file_exits_2(self):
        self.assert_sweep_py_rejects('deck = "{deck}"\nstages = [9]\n',
                                     '2:11: stages: 9 is not a ZeRO stage (0..3 or "all")')

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

    def test_repeats_are_submitted_round_by_round(self):
        text = 'deck = "{deck}"\nstages = [1, 2]\nrepeat = 3\n'
        run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir",
             os.path.join(self.tmp, "s"), "--bin", self.zeromini], env=self.env)
        with open(self.log) as f:
            submitted = re.findall(r"^sbatch --parsable .*/(t-\S+)/job\.sbatch", f.read(), re.M)
        self.assertEqual(submitted, [f"t-s{s}-n1x1-base-r{r}" for r in range(3) for s in (1, 2)])

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

    def test_local_runs_go_round_by_round(self):
        zeromini = fake_binary(self.tmp)
        log = os.path.join(self.tmp, "zeromini.log")
        text = 'deck = "{deck}"\nstages = [0, 3]\nrepeat = 2\nsteps = 4\n' \
               'models = [{{name = "a"}}, {{name = "b"}}]\n'
        run([os.path.join(SCRIPTS, "sweep.py"), self.sweep_file(text), "--dir",
             os.path.join(self.tmp, "s"), "--bin", zeromini, "--local", "--no-plan"],
            env=dict(os.environ, FAKE_ZEROMINI_LOG=log))
        with open(log) as f:
            ran = re.findall(r"^run .* --out \S+/(t-\S+) ", f.read(), re.M)
        # Round 1 runs every point once before round 2 runs any again.
        self.assertEqual(ran, [f"t-s{s}-n1x1-{m}-r{r}" for r in range(2) for m in "ab"
                               for s in (0, 3)])

    def test_a_failing_run_is_reported(self):
        zeromini = fake_binary(self.tmp)
        env = dict(os.environ, FAKE_ZEROMINI_EXIT="3")
        res = run([os.path.join(SCRIPTS, "sweep.py"),
                   self.sweep_file('deck = "{deck}"\nstages = [1]\n'), "--dir",
                   os.path.join(self.tmp, "s"), "--bin", zeromini, "--local"], env=env,
                  check=False)
        self.assertEqual(res.returncode, 1)
        self.assertIn("FAILED (exit 3", res.stdout)


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
