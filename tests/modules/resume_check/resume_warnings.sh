#!/usr/bin/env bash
# The warnings of a resumed run that changes its training against the run that wrote the
# checkpoint, on real runs: more steps (the learning-rate schedule), fewer ranks (the global
# batch), another seed (the data order); a resume that changes nothing warns of nothing.
#   resume_warnings.sh ZEROMINI MPIEXEC DECK WORKDIR
set -uo pipefail
zeromini=$1 mpiexec=$2 deck=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
# run NAME RANKS ARGS...: a run under a 120 s limit, log $work/NAME.log; fails unless it exits 0.
run() {
  local name=$1 ranks=$2
  shift 2
  timeout 120 "$mpiexec" -n "$ranks" "$zeromini" run "$deck" --set zero.stage=1 \
    --set output.checkpoint_every=3 "$@" >"$work/$name.log" 2>&1
  local status=$?
  echo "--- $name: exit $status"
  grep "warning: resuming" "$work/$name.log"
  [[ $status -eq 0 ]] || { cat "$work/$name.log"; fail "$name exited $status"; }
}
expect() { grep -qE "$2" "$work/$1.log" || fail "$1: no line matching: $2"; }

run first 2 --set train.steps=6 --out "$work/run"
cp -r "$work/run" "$work/same"
run same 2 --set train.steps=6 --set train.resume="$work/same/checkpoints/step_00000003.h5" --out "$work/same"
! grep -q "warning: resuming" "$work/same.log" || fail "a resume that changes nothing warned"
run longer 2 --set train.steps=10 --set train.resume=latest --out "$work/run"
expect longer "^warning: resuming from .*step_00000006\.h5: the learning-rate schedule changes: train\.steps 6 -> 10$"
run fewer 1 --set train.steps=12 --set train.seed=8 --set train.resume=latest --out "$work/run"
expect fewer "^warning: resuming from .*: the learning-rate schedule changes: train\.steps 10 -> 12$"
expect fewer "^warning: resuming from .*: the global batch changes: ranks 2 -> 1 \(sequences per step [0-9]+ -> [0-9]+\)$"
expect fewer "^warning: resuming from .*: the data order changes: train\.seed 7 -> 8$"
echo PASS
