"""results.h5 and a checkpoint read back with h5py, as a user outside zeromini would.

    python3 test_read_with_h5py.py ZEROMINI MPIEXEC DECK WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "workflow"))
from workflow_common import built_modules  # noqa: E402


def main(zeromini, mpiexec, deck, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "run")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    subprocess.run([mpiexec, "-n", "2", zeromini, "run", deck, "--set", "zero.stage=3",
                    "--set", "train.steps=4", "--set", "output.checkpoint_every=4", "--out", out],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    modules = built_modules(zeromini)
    # summary.json is the run_summary module's: where it is built, it agrees with results.h5.
    summary = json.load(open(os.path.join(out, "summary.json"))) if "run_summary" in modules else None
    with h5py.File(os.path.join(out, "results.h5"), "r") as f:
        assert f.attrs["status"] == b"completed" or f.attrs["status"] == "completed", f.attrs["status"]
        assert int(f.attrs["world_size"]) == 2
        assert "[model]" in (f.attrs["deck"].decode() if isinstance(f.attrs["deck"], bytes) else f.attrs["deck"])
        stage = f["stage_3"]
        times = stage["step_times"]
        # The core's five columns first; modules may add theirs after them.
        assert times.shape[:2] == (4, 2) and times.shape[2] >= 5, times.shape
        assert times.attrs["units"] in (b"seconds", "seconds")
        columns = [c.decode() if isinstance(c, bytes) else c for c in times.attrs["columns"]]
        assert columns[:5] == ["forward", "backward", "comm_wait", "optimizer", "total"], columns
        assert len(columns) == times.shape[2], columns
        assert np.all(np.array(times)[:, :, :5] > 0)
        assert stage["loss"].shape == (4,)
        assert stage["memory_peak"].shape == (2, 8)
        columns = [c.decode() if isinstance(c, bytes) else c for c in stage["memory_peak"].attrs["columns"]]
        assert columns[0] == "parameters" and columns[-2:] == ["host", "storage"], columns
        # Nothing in host memory or files; a build with the offload module also writes its
        # host-device copies, none here, in their own datasets (every run has them).
        assert np.all(np.array(stage["memory_peak"])[:, -2:] == 0)
        if "offload" in modules:
            for name in ("transfer_calls", "transfer_bytes", "transfer_seconds"):
                assert stage[name].shape == (2, 2), (name, stage[name].shape)
            assert np.all(np.array(stage["transfer_bytes"]) == 0)
        else:
            assert "transfer_bytes" not in stage
        # One column per collective kind, named; all_to_all (qgZ) came last so that the older
        # kinds kept their columns.
        kinds = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "barrier", "all_to_all"]
        # The zeropp module's bytes out of the node (none on one node) with the same columns.
        zeropp = "zeropp" in built_modules(zeromini)
        names = ("comm_bytes", "comm_bytes_inter_group") + (("comm_bytes_cross_node",) if zeropp else ())
        for name in names:
            assert stage[name].shape == (2, len(kinds)), (name, stage[name].shape)
            columns = [c.decode() if isinstance(c, bytes) else c for c in stage[name].attrs["columns"]]
            assert columns[-1] == "all_to_all" and len(columns) == len(kinds), (name, columns)
        if zeropp:
            assert np.all(np.array(stage["comm_bytes_cross_node"]) == 0)
        else:
            assert "comm_bytes_cross_node" not in stage
        fom = float(f.attrs["figure_of_merit"])
        assert fom > 0, fom
        if summary is not None:
            assert abs(fom - summary["figure_of_merit"]["value"]) < 1e-6 * fom, (fom, summary)
            loss = np.array(stage["loss"])
            assert abs(loss[-1] - summary["stages"][0]["final_loss"]) < 1e-9
    checkpoint = os.path.join(out, "checkpoints", "step_00000004.h5")
    with h5py.File(checkpoint, "r") as f:
        assert f["params/unit_0000"].fletcher32
        assert int(f.attrs["ranks"]) == 2 and int(f.attrs["stage"]) == 3
        # Every state of every unit reads back (HDF5 verifies each dataset's Fletcher32 checksum).
        units = 0
        for state in ("params", "adam_m", "adam_v"):
            for name, ds in f[state].items():
                assert np.all(np.isfinite(ds[...])), (state, name)
                units += 1
    print(f"ok: results.h5 ({times.shape}) and a checkpoint of {units} unit states read with h5py")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
