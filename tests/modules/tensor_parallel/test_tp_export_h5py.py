"""A checkpoint written at parallel.tp = 2, read back as a user outside zeromini would: inspect
names the degree, the checkpoint records it, and its export is the same GPT-2 (names, shapes,
dtype) as a tp = 1 run's.

    python3 test_tp_export_h5py.py ZEROMINI MPIEXEC DECK WORKDIR
"""
import os
import shutil
import subprocess
import sys

import h5py


def run_and_export(zeromini, mpiexec, deck, work, name, sets, env):
    out = os.path.join(work, name)
    subprocess.run([mpiexec, "-n", "2", zeromini, "run", deck, "--set", "zero.stage=3",
                    "--set", "train.steps=4", "--set", "output.checkpoint_every=4", "--out", out]
                   + [a for s in sets for a in ("--set", s)],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    checkpoint = os.path.join(out, "checkpoints", "step_00000004.h5")
    exported = os.path.join(work, f"exported-{name}.h5")
    subprocess.run([zeromini, "export", checkpoint, exported], check=True, stdout=subprocess.DEVNULL)
    return checkpoint, exported


def main(zeromini, mpiexec, deck, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    _, tp1_export = run_and_export(zeromini, mpiexec, deck, work, "tp1", [], env)
    checkpoint, tp2_export = run_and_export(zeromini, mpiexec, deck, work, "tp2",
                                            ["parallel.tp=2"], env)
    described = subprocess.run([zeromini, "inspect", checkpoint], check=True,
                               capture_output=True, text=True).stdout
    assert "tensor parallel   tp 2 x 1 data-parallel ranks" in described, described
    with h5py.File(checkpoint, "r") as f:
        assert int(f.attrs["tp"]) == 2
    with h5py.File(tp2_export, "r") as tp2, h5py.File(tp1_export, "r") as tp1:
        assert sorted(tp2.keys()) == sorted(tp1.keys())
        for name in tp1.keys():
            assert tp2[name].shape == tp1[name].shape and tp2[name].dtype == tp1[name].dtype, name
    print("ok: the tp 2 checkpoint exports the tp 1 run's tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
