#!/usr/bin/env bash
# What inspect says of the results file a run left when it ended abnormally or was resumed: the
# core's fault case makes the run (tests/fault/), then inspect reads what it left.
#   after_fault.sh CASE ZEROMINI MPIEXEC PYTHON DECK WORKDIR
# CASE:
#   watchdog       a rank hung (exit 5): "aborted (rank 0, exit status 5): ... watchdog: step 2"
#   second_signal  a second SIGTERM (exit 143): aborted with its reason; without the abort record
#                  (a rank killed outright), "not closed cleanly"
#   resume_history a run resumed into its directory: "10 steps (steps 1-10)", a line per run
set -uo pipefail
case_name=$1 zeromini=$2 work=$6/$1
here=$(cd "$(dirname "$0")" && pwd)
faults=$here/../../fault
fail() { echo "FAIL: $*"; exit 1; }
# status_line RESULTS: inspect's status line of a results file.
status_line() { "$zeromini" inspect "$1" | grep -E "^  status " || fail "inspect $1 failed"; }

case $case_name in
  watchdog | second_signal) script=exit_code_tests.sh ;;
  resume_history) script=io_fault_tests.sh ;;
  *) fail "unknown case $case_name" ;;
esac
"$faults/$script" "$@" || fail "the fault case $case_name failed"
results=$work/run/results.h5
case $case_name in
  watchdog)
    line=$(status_line "$results")
    echo "$line"
    grep -Eq "status +aborted \(rank 0, exit status 5\): .*watchdog: step 2" <<<"$line" ||
      fail "inspect does not report the abort: $line"
    ;;
  second_signal)
    line=$(status_line "$results")
    echo "$line"
    grep -Eq "status +aborted .*second stop signal" <<<"$line" || fail "inspect does not report the abort"
    rm "$results.abort"
    line=$(status_line "$results")
    echo "$line"
    grep -Eq "status +not closed cleanly" <<<"$line" ||
      fail "inspect does not report a run that died as not closed cleanly"
    ;;
  resume_history)
    "$zeromini" inspect "$results" | tee "$work/inspect.txt" | grep -q "10 steps (steps 1-10)" ||
      fail "inspect"
    [[ $(grep -c "run from step" "$work/inspect.txt") -eq 2 ]] || fail "inspect does not show both runs"
    ;;
esac
echo "PASS: inspect after $case_name"
