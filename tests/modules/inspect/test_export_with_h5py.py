"""An exported checkpoint read back with h5py, as a user outside zeromini would: the GPT-2 tensors
with their names and shapes, and the same tensors from a checkpoint written at parallel.tp = 2,
whose inspect names the degree.

    python3 test_export_with_h5py.py ZEROMINI MPIEXEC DECK WORKDIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np


def check_tensor_parallel_export(zeromini, mpiexec, deck, work, tp1_export, env):
    """A checkpoint written at parallel.tp = 2: inspect names the degree, and its export is the
    same GPT-2 (names, shapes, dtype) as the tp = 1 run's."""
    out = os.path.join(work, "run-tp2")
    subprocess.run([mpiexec, "-n", "2", zeromini, "run", deck, "--set", "parallel.tp=2",
                    "--set", "zero.stage=3", "--set", "train.steps=4",
                    "--set", "output.checkpoint_every=4", "--out", out],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    checkpoint = os.path.join(out, "checkpoints", "step_00000004.h5")
    described = subprocess.run([zeromini, "inspect", checkpoint], check=True,
                               capture_output=True, text=True).stdout
    assert "tensor parallel   tp 2 x 1 data-parallel ranks" in described, described
    with h5py.File(checkpoint, "r") as f:
        assert int(f.attrs["tp"]) == 2
    exported = os.path.join(work, "exported-tp2.h5")
    subprocess.run([zeromini, "export", checkpoint, exported], check=True, stdout=subprocess.DEVNULL)
    with h5py.File(exported, "r") as tp2, h5py.File(tp1_export, "r") as tp1:
        assert sorted(tp2.keys()) == sorted(tp1.keys())
        for name in tp1.keys():
            assert tp2[name].shape == tp1[name].shape and tp2[name].dtype == tp1[name].dtype, name


def main(zeromini, mpiexec, deck, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "run")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    subprocess.run([mpiexec, "-n", "2", zeromini, "run", deck, "--set", "zero.stage=3",
                    "--set", "train.steps=4", "--set", "output.checkpoint_every=4", "--out", out],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    exported = os.path.join(work, "exported.h5")
    checkpoint = os.path.join(out, "checkpoints", "step_00000004.h5")
    subprocess.run([zeromini, "export", checkpoint, exported], check=True, stdout=subprocess.DEVNULL)
    with h5py.File(exported, "r") as f:
        C, V, L = int(f.attrs["model.dim"]), int(f.attrs["model.vocab"]), int(f.attrs["model.layers"])
        assert f["wte.weight"].shape == (V, C)
        assert f[f"h.{L - 1}.mlp.c_fc.weight"].shape == (4 * C, C)
        assert f["ln_f.bias"].shape == (C,)
        # LayerNorm weights start at 1 and moved a little in 4 steps; nothing is NaN.
        for name, ds in f.items():
            assert np.all(np.isfinite(ds[...])), name
        assert abs(float(np.mean(f["ln_f.weight"][...])) - 1.0) < 0.1
        count = len(f.keys())
    check_tensor_parallel_export(zeromini, mpiexec, deck, work, exported, env)
    print(f"ok: {count} exported tensors read with h5py")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
