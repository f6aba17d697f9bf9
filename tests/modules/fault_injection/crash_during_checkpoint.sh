#!/usr/bin/env bash
# A run killed while writing a checkpoint (after the data, before the rename) leaves the previous
# checkpoint as 'latest' and loadable, and its results file readable; resuming completes the run.
#   crash_during_checkpoint.sh ZEROMINI MPIEXEC DECK WORKDIR PYTHON (PYTHON with h5py)
set -euo pipefail
zeromini=$1 mpiexec=$2 deck=$3 work=$4 python=$5
rm -rf "$work"
mkdir -p "$work"
common=(--set zero.stage=2 --set train.steps=8 --set output.checkpoint_every=2 --set output.results_every=1 --out "$work/run")

echo "== crash at the checkpoint of step 4"
if ZEROMINI_TEST_CRASH_BEFORE_RENAME=4 "$mpiexec" -n 2 "$zeromini" run "$deck" "${common[@]}" >"$work/crash.log" 2>&1; then
  echo "FAIL: the run was expected to die"; cat "$work/crash.log"; exit 1
fi
ls -l "$work/run/checkpoints"
[[ $(cat "$work/run/checkpoints/latest") == step_00000002.h5 ]] || { echo "FAIL: latest is not step 2"; exit 1; }
[[ -e $work/run/checkpoints/step_00000004.h5.tmp ]] || { echo "FAIL: no partial checkpoint left to show the crash"; exit 1; }
[[ ! -e $work/run/checkpoints/step_00000004.h5 ]] || { echo "FAIL: the unfinished checkpoint was published"; exit 1; }
# The run died without recording how: its results file reads, with the status it started with
# ("running") and no abort record beside it; the resume below loads the checkpoint of step 2.
"$python" - "$work/run/results.h5" <<'PY' || { echo "FAIL: results file not readable as a run that did not close it"; exit 1; }
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    status = f.attrs["status"]
    status = status.decode() if isinstance(status, bytes) else status
    assert status == "running", status
    assert len(f["stage_2"]["loss"]) >= 2, len(f["stage_2"]["loss"])
PY
[[ ! -e $work/run/results.h5.abort ]] || { echo "FAIL: an abort record for a run killed outright"; exit 1; }

echo "== resume from latest"
"$mpiexec" -n 2 "$zeromini" run "$deck" "${common[@]}" --set train.resume=latest | tee "$work/resume.log"
grep -q "resumed from .*step_00000002.h5 after step 2" "$work/resume.log" || { echo "FAIL: did not resume from step 2"; exit 1; }
grep -q "step     8/8" "$work/resume.log" || { echo "FAIL: did not finish"; exit 1; }
[[ $(cat "$work/run/checkpoints/latest") == step_00000008.h5 ]] || { echo "FAIL: latest is not step 8"; exit 1; }
echo "PASS"
