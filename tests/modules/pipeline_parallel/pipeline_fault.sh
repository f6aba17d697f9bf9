#!/usr/bin/env bash
# A pipeline that loses a rank: pp 2 x dp 2 (2 micro-batches a step, stage 1, a checkpoint every 2
# steps), rank 1 killed (SIGKILL, the module fault_injection) at the start of step 3, in the middle
# of its stage's transfers. The job must end on its own, soon, with the checkpoint of step 2
# published; resumed at the same layout it must end with the uninterrupted run's parameters bit
# for bit, and the checkpoint must also resume at pp 1 x dp 4 and at pp 4 (checkpoints are the
# whole model's).
#   pipeline_fault.sh ZEROMINI MPIEXEC PYTHON DECK WORKDIR
set -uo pipefail
zeromini=$1 mpiexec=$2 python=$3 deck=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
compare=$here/../../fault/compare_params.py
rm -rf "$work"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME ARGS... -> status in $status
  local name=$1
  shift
  "$mpiexec" -n 4 "$zeromini" run "$deck" "$@" >"$work/$name.log" 2>&1
  status=$?
  echo "--- $name: exit $status"
  tail -3 "$work/$name.log"
}
latest() { echo "$1/checkpoints/$(cat "$1/checkpoints/latest")"; }
common=(--set model.layers=4 --set zero.stage=1 --set train.steps=8 --set train.grad_accum=2
        --set output.checkpoint_every=2 --set comm.timeout_s=20)
pipeline=(--set parallel.pp=2)

run reference "${common[@]}" "${pipeline[@]}" --out "$work/reference"
[[ $status -eq 0 ]] || fail "the uninterrupted run failed"
start=$(date +%s)
ZEROMINI_TEST_FAULT=kill ZEROMINI_TEST_FAULT_STEP=3 ZEROMINI_TEST_FAULT_RANK=1 \
  timeout 120 "$mpiexec" -n 4 "$zeromini" run "$deck" "${common[@]}" "${pipeline[@]}" \
  --out "$work/run" >"$work/killed.log" 2>&1
status=$?
elapsed=$(($(date +%s) - start))
echo "--- killed run: exit $status after ${elapsed}s"
tail -3 "$work/killed.log"
[[ $status -ne 0 ]] || fail "the job survived a dead rank"
[[ $status -ne 124 ]] || fail "the job hung until the test's own timeout"
((elapsed <= 60)) || fail "the job took ${elapsed}s (> 60 s) to end"
[[ $(cat "$work/run/checkpoints/latest") == step_00000002.h5 ]] || fail "latest is not step 2"
for layout in pp2 pp1 pp4; do
  cp -r "$work/run" "$work/resume-$layout"
done
run resumed "${common[@]}" "${pipeline[@]}" --out "$work/resume-pp2" --set train.resume=latest
[[ $status -eq 0 ]] || fail "the resumed run failed"
grep -q "resumed from .*step_00000002.h5" "$work/resumed.log" || fail "did not resume from step 2"
"$python" "$compare" "$(latest "$work/reference")" "$(latest "$work/resume-pp2")" ||
  fail "final parameters differ from the uninterrupted run"
# At other layouts the same global batch: dp 4 with 1 micro-batch each, pp 4 with 4.
run resumed_pp1 "${common[@]}" --set parallel.pp=1 --set train.grad_accum=1 \
  --out "$work/resume-pp1" --set train.resume=latest
[[ $status -eq 0 ]] || fail "the run resumed at pp 1 x dp 4 failed"
grep -q "resumed from .*step_00000002.h5" "$work/resumed_pp1.log" || fail "pp 1 did not resume"
run resumed_pp4 "${common[@]}" --set parallel.pp=4 --set train.grad_accum=4 \
  --out "$work/resume-pp4" --set train.resume=latest
[[ $status -eq 0 ]] || fail "the run resumed at pp 4 failed"
grep -q "resumed from .*step_00000002.h5" "$work/resumed_pp4.log" || fail "pp 4 did not resume"
echo "PASS"
