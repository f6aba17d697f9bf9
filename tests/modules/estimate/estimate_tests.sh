#!/usr/bin/env bash
# The run's estimate from the command line, one case per ctest entry: the estimate line on the
# machine measured at start-up and on a machine file, the warning naming the key that makes a run
# long, and the notice of a first step still running.
#   estimate_tests.sh CASE ZEROMINI MPIEXEC DECK WORKDIR
set -uo pipefail
case_name=$1 zeromini=$2 mpiexec=$3 deck=$4 work=$5/$1
rm -rf "$work"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
# expect STATUS PATTERN NAME RANKS ARGS...: a run (120 s limit) exits STATUS, its log matches
# PATTERN (grep -E).
expect() {
  local want=$1 pattern=$2 name=$3 ranks=$4
  shift 4
  timeout -s KILL 120 "$mpiexec" -n "$ranks" "$zeromini" run "$deck" "$@" >"$work/$name.log" 2>&1
  local status=$?
  echo "--- $name: exit $status"
  grep -E "zeromini: |watchdog|received|Estimate|warning|still running" "$work/$name.log" | head -5
  [[ $status -eq $want ]] || fail "$name: exit status $status, expected $want"
  grep -Eq "$pattern" "$work/$name.log" || fail "$name: the log does not match: $pattern"
}

case $case_name in
  estimate)  # before the first step: the planner's estimate, and a warning naming the long key
    expect 0 "Estimate \(planner; machine: measured at start-up: GEMM .* per step, about .* for the run's 2 steps" \
      measured 2 --set train.steps=2 --out "$work/measured"
    expect 0 "Estimate \(planner; machine: .*this-host.toml\)" machine_file 1 --set train.steps=2 \
      --machine "$(dirname "$deck")/machines/this-host.toml" --out "$work/machine_file"
    expect 0 "warning: this run is estimated at .*, longer than output\.long_run_s = .*; most of it from model\.seq_len = 1024 \(at its default 64: " \
      long 1 --set model.seq_len=1024 --set train.steps=1 --set output.long_run_s=1e-6 \
      --out "$work/long"
    grep -q "warning: this run is estimated" "$work/measured.log" &&
      fail "a 2-step run of the tiny deck warned of its length"
    ;;
  first_step_notice)  # a first step that has not finished after the delay says so
    ZEROMINI_TEST_FIRST_STEP_NOTICE_S=1 ZEROMINI_TEST_FAULT=stall ZEROMINI_TEST_FAULT_STEP=1 \
      ZEROMINI_TEST_FAULT_RANK=1 expect 5 "\[stage 0\] step 1 still running after 1 s \(estimated .* per step\)" \
      stall 2 --set train.steps=2 --set comm.timeout_s=4 --out "$work/stall"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
