#!/usr/bin/env bash
# Fault behaviour of real runs: a rank killed, a rank hung, SIGTERM, a non-finite gradient, a run
# that cannot fit. Each case is one subcommand (one ctest entry).
#   fault_tests.sh CASE ZEROMINI MPIEXEC PYTHON DECK WORKDIR
set -uo pipefail
case_name=$1 zeromini=$2 mpiexec=$3 python=$4 deck=$5 work=$6/$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME RANKS ARGS... -> status in $status, output in $work/NAME.log
  local name=$1 ranks=$2
  shift 2
  "$mpiexec" -n "$ranks" "$zeromini" run "$deck" "$@" >"$work/$name.log" 2>&1
  status=$?
  echo "--- $name: exit $status"
  tail -5 "$work/$name.log"
}
final_checkpoint() { echo "$1/checkpoints/$(cat "$1/checkpoints/latest")"; }
# results_status RESULTS: the status attribute of a results file (h5py).
results_status() {
  "$python" -c 'import sys, h5py
s = h5py.File(sys.argv[1], "r").attrs["status"]
print(s.decode() if isinstance(s, bytes) else s)' "$1"
}

case $case_name in
  kill)
    # 4 ranks, stage 2; rank 1 dies (SIGKILL) at the start of step 3.
    common=(--set zero.stage=2 --set train.steps=8 --set output.checkpoint_every=2 --set comm.timeout_s=20)
    run reference 4 "${common[@]}" --out "$work/reference"
    [[ $status -eq 0 ]] || fail "the uninterrupted run failed"
    start=$(date +%s)
    ZEROMINI_TEST_FAULT=kill ZEROMINI_TEST_FAULT_STEP=3 ZEROMINI_TEST_FAULT_RANK=1 \
      timeout 120 bash -c "$(printf '%q ' "$mpiexec" -n 4 "$zeromini" run "$deck" "${common[@]}" --out "$work/run")" \
      >"$work/killed.log" 2>&1
    status=$?
    elapsed=$(( $(date +%s) - start ))
    echo "--- killed run: exit $status after ${elapsed}s"; tail -5 "$work/killed.log"
    [[ $status -ne 0 ]] || fail "the job survived a dead rank"
    [[ $status -ne 124 ]] || fail "the job hung until the test's own timeout"
    (( elapsed <= 60 )) || fail "the job took ${elapsed}s (> 60 s) to end"
    [[ $(cat "$work/run/checkpoints/latest") == step_00000002.h5 ]] || fail "latest is not step 2"
    run resumed 4 "${common[@]}" --out "$work/run" --set train.resume=latest
    [[ $status -eq 0 ]] || fail "the resumed run failed"
    grep -q "resumed from .*step_00000002.h5" "$work/resumed.log" || fail "did not resume from step 2"
    "$python" "$here/compare_params.py" "$(final_checkpoint "$work/reference")" "$(final_checkpoint "$work/run")" \
      || fail "final parameters differ from the uninterrupted run"
    ;;
  stall)
    # 3 ranks; rank 1 hangs at step 3 without dying: the watchdog must end the job.
    start=$(date +%s)
    ZEROMINI_TEST_FAULT=stall ZEROMINI_TEST_FAULT_STEP=3 ZEROMINI_TEST_FAULT_RANK=1 \
      timeout 120 "$mpiexec" -n 3 "$zeromini" run "$deck" --set zero.stage=1 --set train.steps=6 \
      --set comm.timeout_s=5 --out "$work/run" >"$work/stalled.log" 2>&1
    status=$?
    elapsed=$(( $(date +%s) - start ))
    echo "--- stalled run: exit $status after ${elapsed}s"; grep -m3 watchdog "$work/stalled.log"
    [[ $status -ne 0 && $status -ne 124 ]] || fail "exit status $status (124: hung)"
    (( elapsed <= 60 )) || fail "took ${elapsed}s"
    grep -q "watchdog: step 3 (forward, backward, optimizer): .* ranks still missing: 1 (has not reached it)" \
      "$work/stalled.log" || fail "no watchdog message naming the phase and rank 1"
    ;;
  sigterm)
    # SIGTERM to the launcher (what Slurm sends at the time limit) mid-run.
    # Enough steps that the signal, sent once step 4 is logged, lands mid-run (1,200 steps: 2 s
    # or more of run left at the fastest, 2 ms a step); the same train.steps in both runs, since
    # the learning-rate schedule depends on it.
    common=(--set zero.stage=3 --set train.steps=1200 --set output.checkpoint_every=500 --set output.log_every=1)
    run reference 2 "${common[@]}" --out "$work/reference"
    [[ $status -eq 0 ]] || fail "the uninterrupted run failed"
    "$mpiexec" -n 2 "$zeromini" run "$deck" "${common[@]}" --out "$work/run" \
      >"$work/terminated.log" 2>&1 &
    launcher=$!
    for _ in $(seq 600); do grep -q "step     4/" "$work/terminated.log" && break; sleep 0.05; done
    kill -TERM $launcher
    wait $launcher
    status=$?
    echo "--- terminated run: exit $status"; grep -E "SIGTERM|checkpoint" "$work/terminated.log" | tail -3
    [[ $status -eq 0 ]] || fail "exit status $status after SIGTERM (expected 0)"
    grep -q "SIGTERM received: stopped after step" "$work/terminated.log" || fail "no SIGTERM message"
    stopped=$(sed -n 's/.*SIGTERM received: stopped after step \([0-9]*\).*/\1/p' "$work/terminated.log")
    [[ $(cat "$work/run/checkpoints/latest") == $(printf 'step_%08d.h5' "$stopped") ]] \
      || fail "latest is not the checkpoint of step $stopped"
    [[ $(results_status "$work/run/results.h5") == terminated ]] || fail "results not flushed"
    run resumed 2 "${common[@]}" --out "$work/run" --set train.resume=latest
    [[ $status -eq 0 ]] || fail "the resumed run failed"
    "$python" "$here/compare_params.py" "$(final_checkpoint "$work/reference")" "$(final_checkpoint "$work/run")" \
      || fail "final parameters differ from the uninterrupted run"
    ;;
  sigterm_thread)
    # SIGTERM delivered to a worker thread of each rank (not the main thread, which checks for it
    # at the end of a step), while the ranks are inside steps and their threads inside parallel
    # regions: the run still stops after the step with a checkpoint, flushes and exits 0.
    common=(--set zero.stage=1 --set train.steps=1000000 --set output.checkpoint_every=1000000 --set output.log_every=1)
    "$mpiexec" -n 2 "$zeromini" run "$deck" "${common[@]}" --out "$work/run" >"$work/terminated.log" 2>&1 &
    launcher=$!
    for _ in $(seq 600); do grep -q "step     4/" "$work/terminated.log" && break; sleep 0.05; done
    grep "^threads:" "$work/terminated.log"
    "$python" "$here/signal_threads.py" TERM "$work/run" || fail "found no rank to signal"
    timeout 120 tail --pid=$launcher -f /dev/null
    kill -0 $launcher 2>/dev/null && { kill -KILL $launcher; fail "the run did not stop within 120 s"; }
    wait $launcher
    status=$?
    echo "--- terminated run: exit $status"; grep -E "SIGTERM|checkpoint" "$work/terminated.log" | tail -3
    [[ $status -eq 0 ]] || fail "exit status $status after SIGTERM (expected 0)"
    stopped=$(sed -n 's/.*SIGTERM received: stopped after step \([0-9]*\).*/\1/p' "$work/terminated.log")
    [[ -n $stopped ]] || fail "no SIGTERM message"
    [[ $(cat "$work/run/checkpoints/latest") == $(printf 'step_%08d.h5' "$stopped") ]] \
      || fail "latest is not the checkpoint of step $stopped"
    [[ $(results_status "$work/run/results.h5") == terminated ]] || fail "results not flushed"
    ;;
  nan)
    # A NaN gradient at step 5: the run stops with the step named; no checkpoint from it.
    ZEROMINI_TEST_FAULT=nan ZEROMINI_TEST_FAULT_STEP=5 run nan 2 --set zero.stage=2 --set train.steps=8 \
      --set output.checkpoint_every=2 --out "$work/run"
    [[ $status -eq 3 ]] || fail "exit status $status (expected 3)"
    grep -q "step 5: the loss or gradient norm is not finite" "$work/nan.log" || fail "no message naming step 5"
    [[ $(cat "$work/run/checkpoints/latest") == step_00000004.h5 ]] || fail "latest is not step 4"
    [[ ! -e $work/run/checkpoints/step_00000005.h5 ]] || fail "a checkpoint was written from the bad step"
    ;;
  oom)
    # A run that cannot fit is refused before it allocates, with the numbers.
    run oom 2 --set model.layers=200 --set model.dim=2048 --set model.heads=16 --set train.micro_batch=64 \
      --set model.seq_len=1024 --out "$work/run"
    [[ $status -eq 2 ]] || fail "exit status $status (expected 2)"
    grep -Eq "needs [0-9.]+ GiB per rank \(parameters [0-9.]+, .*\) but only [0-9.]+ GiB is available per rank" \
      "$work/oom.log" || fail "no memory message"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
