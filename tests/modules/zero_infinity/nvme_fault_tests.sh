#!/usr/bin/env bash
# The NVMe tier's faults on real runs, 2 ranks at stage 2 with the optimizer state on NVMe: a
# failed transfer, a short read, a full disk (also for backward's write of the gradient shard,
# zero.nvme_gradients) and a rank killed in the middle of a write during a step (the module fault_injection's nvme_* faults), and a disk too small for the swap files. Each
# run that fails ends within the test's limit, saying which file, unit and operation; nothing is
# lost: the last checkpoint resumes the run to the same parameters, bit for bit, as a run that
# never failed. Each case is one subcommand (one ctest entry).
#   nvme_fault_tests.sh CASE ZEROMINI MPIEXEC PYTHON DECK WORKDIR
set -uo pipefail
case_name=$1 zeromini=$2 mpiexec=$3 python=$4 deck=$5 work=$6/$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work/swap"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
nvme=(--set zero.stage=2 --set zero.offload_optimizer=nvme --set zero.nvme_dir="$work/swap")
common=(--set train.steps=6 --set output.checkpoint_every=2 --set comm.timeout_s=20)
# run NAME ARGS...: 2 ranks under a 120 s limit (124: it hung) -> $status, log $work/NAME.log
run() {
  local name=$1
  shift
  timeout 120 "$mpiexec" -n 2 "$zeromini" run "$deck" "${common[@]}" "$@" \
    >"$work/$name.log" 2>&1
  status=$?
  echo "--- $name: exit $status"
  grep -E "zeromini: |watchdog|resumed" "$work/$name.log" | head -4
}
swap_empty() {  # the swap files went with the processes, however they ended
  [[ -z $(ls -A "$work/swap") ]] || fail "the swap directory holds $(ls -A "$work/swap")"
}
# failed_then_resumed FAULT STATUS PATTERN [ARGS of the resumed run]: the fault at step 4 on
# rank 1 ends the run with STATUS ("killed": any but 0 and the limit's), its log matching PATTERN; checkpoint 2 stays latest, and the
# run resumed from it (with ARGS: another home of the optimizer state) ends with the parameters
# of the reference run.
failed_then_resumed() {
  local fault=$1 want=$2 pattern=$3
  shift 3
  run reference "${nvme[@]}" --out "$work/reference"
  [[ $status -eq 0 ]] || fail "the run without a fault failed"
  ZEROMINI_TEST_FAULT=$fault ZEROMINI_TEST_FAULT_STEP=4 ZEROMINI_TEST_FAULT_RANK=1 \
    run failed "${nvme[@]}" --out "$work/run"
  [[ $status -ne 124 ]] || fail "the job hung until the test's own limit"
  if [[ $want == killed ]]; then
    [[ $status -ne 0 ]] || fail "the job survived a killed rank"
  else
    [[ $status -eq $want ]] || fail "exit status $status, expected $want"
  fi
  grep -Eq "$pattern" "$work/failed.log" || fail "the log does not match: $pattern"
  swap_empty
  [[ $(cat "$work/run/checkpoints/latest") == step_00000002.h5 ]] \
    || fail "latest is $(cat "$work/run/checkpoints/latest"), not step 2"
  run resumed "$@" --set train.resume=latest --out "$work/run"
  [[ $status -eq 0 ]] || fail "the resumed run failed"
  grep -q "resumed from .*step_00000002.h5" "$work/resumed.log" || fail "did not resume from step 2"
  swap_empty
  "$python" "$here/../../fault/compare_params.py" "$work/reference/checkpoints/step_00000006.h5" \
    "$work/run/checkpoints/step_00000006.h5" || fail "the parameters differ from the run without a fault"
}

# What the failed transfer's message names: the rank, the operation, the unit, the swap file.
names() { echo "rank 1: I/O error: NVMe $1 of unit [0-9]+'s optimizer state failed: .* swap file in $work/swap \(rank 1's optimizer state\), after [0-9]+ bytes: $2"; }

case $case_name in
  io_error)  # the kernel refuses a transfer: exit 4; resumed with the state on NVMe
    failed_then_resumed nvme_io_error 4 "$(names read "Bad address")" "${nvme[@]}"
    ;;
  short_read)  # a read comes back short; resumed without offload
    failed_then_resumed nvme_short_read 4 "$(names read "short read: [0-9]+ of [0-9]+ bytes")" \
      --set zero.stage=2
    ;;
  disk_full_injected)  # a write meets a full disk (ENOSPC); resumed with the state in host memory
    failed_then_resumed nvme_disk_full 4 "$(names write "No space left on device")" \
      --set zero.stage=2 --set zero.offload_optimizer=host
    ;;
  kill_in_write)  # rank 1 killed in the middle of a write: the job ends; resumed on NVMe
    failed_then_resumed nvme_kill_in_write killed "is torn: [0-9]+ of [0-9]+ bytes written" "${nvme[@]}"
    ;;
  gradient_disk_full)  # with the gradient shard there too, backward's write of it meets a full
    # disk (the step's first write: backward's come before the update's); resumed likewise
    nvme+=(--set zero.nvme_gradients=true)
    failed_then_resumed nvme_disk_full 4 \
      "rank 1: I/O error: NVMe write of unit [0-9]+'s gradient shard failed: .* swap file in $work/swap \(rank 1's optimizer state and gradient shard\), after [0-9]+ bytes: No space left on device" \
      "${nvme[@]}"
    ;;
  disk_full)
    # A real file system too small for the swap files: refused on every rank before the first
    # step (exit 2, a run that cannot fit), naming the key, the directory and the bytes.
    mkdir -p "$work/disk"
    if ! mount -t tmpfs -o size=4k tmpfs "$work/disk" 2>/dev/null || ! mountpoint -q "$work/disk"; then
      echo "skipped: no tmpfs can be mounted here"
      exit 77
    fi
    trap 'umount -l "$work/disk" 2>/dev/null' EXIT
    run small --set zero.stage=2 --set zero.offload_optimizer=nvme --set zero.nvme_dir="$work/disk" \
      --out "$work/small"
    [[ $status -eq 2 ]] || fail "exit status $status, expected 2"
    grep -Eq "zero\.nvme_dir = \"$work/disk\": $work/disk: ([0-9]+ bytes free, [0-9]+ needed|cannot allocate [0-9]+ bytes)" \
      "$work/small.log" || fail "no message naming the directory and the bytes"
    grep -q "step 1" "$work/small.log" && fail "a step ran"
    [[ -z $(ls -A "$work/disk") ]] || fail "the disk holds $(ls -A "$work/disk")"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
