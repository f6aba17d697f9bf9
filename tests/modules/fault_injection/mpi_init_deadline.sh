#!/usr/bin/env bash
# A rank whose MPI_Init does not return (simulated: ZEROMINI_TEST_STALL_MPI_INIT) ends on its own:
# after ZEROMINI_MPI_INIT_TIMEOUT_S with exit status 5, or soon after a SIGTERM with 143, naming
# MPI_Init, instead of waiting for ever.
#   mpi_init_deadline.sh CASE ZEROMINI MPIEXEC PYTHON DECK WORKDIR   (as the other fault scripts;
#   CASE and PYTHON are not used)
set -uo pipefail
zeromini=$2 mpiexec=$3 deck=$5 work=$6
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; cat "$work"/*.log; exit 1; }

echo "== the deadline"
start=$SECONDS
ZEROMINI_TEST_STALL_MPI_INIT=60 ZEROMINI_MPI_INIT_TIMEOUT_S=2 timeout -s KILL 50 \
  "$mpiexec" -n 2 "$zeromini" run "$deck" --out "$work/deadline" >"$work/deadline.log" 2>&1
status=$?
echo "exit status $status after $((SECONDS - start)) s"
[ "$status" -eq 5 ] || fail "expected exit status 5 (the deadline), got $status"
grep -q "MPI_Init did not return within" "$work/deadline.log" || fail "no message naming MPI_Init"

echo "== a SIGTERM during MPI_Init"
ZEROMINI_TEST_STALL_MPI_INIT=60 timeout -s KILL 50 \
  "$zeromini" run "$deck" --out "$work/signal" >"$work/signal.log" 2>&1 &
pid=$!
sleep 1
kill -TERM "$pid"
start=$SECONDS
wait "$pid"
status=$?
echo "exit status $status, $((SECONDS - start)) s after the signal"
[ "$status" -eq 143 ] || fail "expected exit status 143 (SIGTERM), got $status"
grep -q "while MPI_Init had not returned" "$work/signal.log" || fail "no message naming MPI_Init"
echo "PASS"
