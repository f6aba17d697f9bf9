#!/usr/bin/env bash
# Faults around files, disks, signals and shared directories, on real runs: a rank stalled
# during a checkpoint write and during the results gather, a full disk, two runs on one
# directory, a fresh run over another run's checkpoints, SIGTERM right after launch, FIFOs as
# inputs, and the history of a resumed run. Each case is one subcommand (one ctest entry).
#   io_fault_tests.sh CASE ZEROMINI MPIEXEC PYTHON DECK WORKDIR
set -uo pipefail
case_name=$1 zeromini=$2 mpiexec=$3 python=$4 deck=$5 work=$6/$1
rm -rf "$work"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
# timed NAME RANKS ARGS...: a run under a 120 s limit -> $status, $elapsed (s), log $work/NAME.log
timed() {
  local name=$1 ranks=$2 start
  shift 2
  start=$(date +%s.%N)
  timeout 120 "$mpiexec" -n "$ranks" "$zeromini" run "$deck" "$@" >"$work/$name.log" 2>&1
  status=$?
  elapsed=$(echo "$(date +%s.%N) - $start" | bc)
  echo "--- $name: exit $status after ${elapsed}s"
  grep -E "zeromini: |watchdog|received" "$work/$name.log" | head -4
}
within() { (($(echo "$elapsed <= $1" | bc))) || fail "took ${elapsed}s (more than $1 s)"; }
latest_is() {
  [[ $(cat "$1/checkpoints/latest" 2>/dev/null) == "$2" ]] || fail "latest is '$(cat "$1/checkpoints/latest" 2>/dev/null)', not $2"
}
# The checkpoint loads: a resumed run from it into a fresh directory completes.
loadable() {
  timed "load-$(basename "$1")" 2 --set zero.stage=2 --set train.resume="$1" --set train.steps=100000000 \
    --set train.steps=$(($(basename "$1" .h5 | sed 's/step_0*//') + 1)) --out "$work/load-$(basename "$1")"
  [[ $status -eq 0 ]] || fail "$1 does not load"
}
# mount_small_disk SIZE: a real small file system at $work/disk where the test may mount one (CI
# runs as root) -> $disk, else disk="". Unmounted when the script ends.
mount_small_disk() {
  disk=""
  mkdir -p "$work/disk"
  if mount -t tmpfs -o size="$1" tmpfs "$work/disk" 2>/dev/null && mountpoint -q "$work/disk"; then
    trap 'umount -l "$work/disk" 2>/dev/null' EXIT
    disk=$work/disk
  fi
}

case $case_name in
  stall_checkpoint | stall_gather)
    # 3 ranks; rank 1 stops (SIGSTOP) inside the checkpoint write or results gather after step 2.
    phase=$([[ $case_name == stall_checkpoint ]] && echo "checkpoint write after step 2" || echo "results gather step 2")
    ZEROMINI_TEST_FAULT=$case_name ZEROMINI_TEST_FAULT_STEP=2 ZEROMINI_TEST_FAULT_RANK=1 \
      timed stalled 3 --set zero.stage=3 --set train.steps=6 --set comm.timeout_s=5 \
      --set output.checkpoint_every=1 --set output.results_every=1 --out "$work/run"
    [[ $status -ne 0 && $status -ne 124 ]] || fail "exit status $status (124: hung)"
    within 25  # start-up, two steps, and the timeout of 5 s + 5 s
    grep -q "watchdog: $phase: .* ranks still missing: .*1 (" "$work/stalled.log" \
      || fail "no watchdog message naming '$phase' and rank 1"
    latest_is "$work/run" step_00000001.h5
    loadable "$work/run/checkpoints/step_00000001.h5"
    ;;
  disk_full_np1 | disk_full_np2 | disk_full_np4 | disk_full_injected_np*)
    # The disk fills up during the run: room for the first checkpoint, not for the second. The run
    # ends with exit 4 within 60 s naming the write and ENOSPC, leaves no partial file, and the
    # first checkpoint stays 'latest', intact and loadable. disk_full_npN: a real small disk,
    # skipped (77) where none can be mounted; disk_full_injected_npN: ENOSPC injected (the module
    # fault_injection) into the last rank's part of the second checkpoint.
    ranks=${case_name##*_np}
    disk=""
    [[ $case_name == disk_full_injected_* ]] || mount_small_disk 16m
    [[ $case_name == disk_full_injected_* || -n $disk ]] \
      || { echo "skipped: no tmpfs can be mounted here (disk_full_injected_np2 injects ENOSPC)"; exit 77; }
    common=(--set zero.stage=2 --set train.steps=6 --set output.checkpoint_every=1 --set comm.timeout_s=20)
    if [[ $case_name != disk_full_injected_* ]]; then
      # What a checkpoint write holds ahead: a run on a full disk says it ("needs about X MiB").
      fallocate -l "$(($(df --output=avail -B1 "$disk" | tail -1) - 65536))" "$disk/filler"
      timed probe 1 "${common[@]}" --out "$disk/probe"
      needs=$(sed -n 's/.*needs about \([0-9.]*\) MiB.*/\1/p' "$work/probe.log" | head -1)
      [[ -n $needs ]] || fail "no space figure from the probe run"
      rm -rf "$disk/filler" "$disk/probe"
      # Free: what one checkpoint write holds, and a quarter MiB more.
      keep=$(echo "($needs + 0.25) * 1048576 / 1" | bc)
      fallocate -l "$(($(df --output=avail -B1 "$disk" | tail -1) - keep))" "$disk/filler"
      echo "on a real 16 MiB tmpfs with $(df --output=avail -h "$disk" | tail -1) free; a checkpoint write holds $needs MiB"
      out=$disk/run
      timed full "$ranks" "${common[@]}" --out "$out"
    else
      out=$work/run
      ZEROMINI_TEST_FAULT=enospc_checkpoint ZEROMINI_TEST_FAULT_STEP=2 ZEROMINI_TEST_FAULT_RANK=$((ranks - 1)) \
        timed full "$ranks" "${common[@]}" --out "$out"
    fi
    [[ $status -eq 4 ]] || fail "exit status $status (expected 4, an I/O error)"
    within 60
    grep -q "I/O error: the checkpoint after step 2 was not written: .*No space left on device" \
      "$work/full.log" || fail "no message naming the checkpoint and ENOSPC"
    latest_is "$out" step_00000001.h5
    ls "$out/checkpoints" | grep -q '\.tmp$' && fail "a partial .tmp was left behind"
    cp "$out/checkpoints/step_00000001.h5" "$work/step_00000001.h5"
    loadable "$work/step_00000001.h5"
    ;;
  two_runs)
    # A second run in a directory in use is refused, naming the first run's PID.
    "$mpiexec" -n 2 "$zeromini" run "$deck" --set train.steps=100000000 --set output.log_every=100 \
      --out "$work/run" >"$work/first.log" 2>&1 &
    first=$!
    for _ in $(seq 600); do grep -q "step " "$work/first.log" && break; sleep 0.05; done
    timed second 2 --set train.steps=3 --out "$work/run"
    [[ $status -eq 2 ]] || fail "the second run: exit $status (expected 2)"
    grep -q "is in use by another run: PID [0-9]* on host" "$work/second.log" || fail "no holder named"
    pkill -TERM -f "$zeromini run $deck --set train.steps=100000000"
    wait $first
    echo "--- first run: exit $?"
    grep -q "SIGTERM received: stopped after step" "$work/first.log" || fail "the first run was disturbed"
    ;;
  used_dir)
    # A fresh run over another run's checkpoints is refused; with output.overwrite it replaces them.
    common=(--set train.steps=5 --set output.checkpoint_every=1)
    timed first 2 "${common[@]}" --out "$work/run"
    timed fresh 2 --set train.steps=3 --set output.checkpoint_every=1 --out "$work/run"
    [[ $status -eq 2 ]] || fail "the fresh run: exit $status (expected 2)"
    grep -q "holds the checkpoints of another run" "$work/fresh.log" || fail "no message"
    latest_is "$work/run" step_00000005.h5
    timed overwrite 2 --set train.steps=3 --set output.checkpoint_every=1 --set output.overwrite=true --out "$work/run"
    [[ $status -eq 0 ]] || fail "with output.overwrite: exit $status"
    latest_is "$work/run" step_00000003.h5
    [[ ! -e $work/run/checkpoints/step_00000005.h5 ]] || fail "the old checkpoints are still there"
    ;;
  sigterm_early)
    # SIGTERM to the ranks as soon as they exist (as Slurm signals every task): never exit 0
    # having done nothing. (Not to mpiexec: MPICH's Hydra exits 0 when it is signalled while it is
    # still starting the ranks, whatever they do; `mpiexec -n 2 sleep 10` shows it.)
    for trial in 1 2 3; do
      timeout 120 "$mpiexec" -n 2 "$zeromini" run "$deck" --set train.steps=100000 --out "$work/run$trial" \
        >"$work/early$trial.log" 2>&1 &
      launcher=$!
      for _ in $(seq 1000); do
        pkill -TERM -f "^$zeromini run $deck --set train.steps=100000 --out $work/run$trial" && break
        sleep 0.01
      done
      wait $launcher
      status=$?
      echo "--- trial $trial: exit $status"; grep -E "received|terminated" "$work/early$trial.log" | head -2
      [[ $status -ne 0 && $status -ne 124 ]] || fail "trial $trial: exit $status"
    done
    ;;
  fifo)
    # FIFOs as the deck, the data file and the checkpoint: refused at once, nothing blocks (a
    # build without a reader of data files refuses the data file for that).
    mkfifo "$work/deck.toml" "$work/shard.bin" "$work/step.h5"
    start=$(date +%s.%N)
    timeout 60 "$mpiexec" -n 2 "$zeromini" run "$work/deck.toml" >"$work/deck.log" 2>&1
    [[ $? -eq 2 ]] && grep -q "is a FIFO" "$work/deck.log" || fail "deck: $(cat "$work/deck.log")"
    timed shard 2 --set data.source="$work/shard.bin" --out "$work/a"
    [[ $status -eq 2 ]] && grep -Eq "is a FIFO|names a data file" "$work/shard.log" || fail "shard"
    timed checkpoint 2 --set train.resume="$work/step.h5" --out "$work/b"
    [[ $status -eq 2 ]] && grep -q "is a FIFO" "$work/checkpoint.log" || fail "checkpoint"
    ;;
  resume_history)
    # A resumed run appends to results.h5 with explicit step numbers and a segment per run.
    # The earlier file's step_times has a column this build does not know (another build's): its
    # rows are kept, by column name, without it.
    timed first 2 --set zero.stage=1 --set train.steps=6 --set output.checkpoint_every=3 --out "$work/run"
    "$python" - "$work/run/results.h5" <<'PY' || fail "could not add a column to step_times"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r+") as f:
    g = f["stage_1"]
    columns = [c.decode() for c in g["step_times"].attrs["columns"]]
    times = np.array(g["step_times"])
    np.save(sys.argv[1] + ".times.npy", times)
    wider = np.concatenate([np.full(times.shape[:2] + (1,), 7.0), times], axis=2)
    del g["step_times"]
    g.create_dataset("step_times", data=wider)
    g["step_times"].attrs["columns"] = np.array([c.encode() for c in ["elsewhere"] + columns],
                                                dtype="S16")
PY
    timed second 2 --set zero.stage=1 --set train.steps=10 --set output.checkpoint_every=3 \
      --set train.resume=latest --out "$work/run"
    [[ $status -eq 0 ]] || fail "the resumed run failed"
    "$python" - "$work/run/results.h5" <<'PY' || fail "results.h5 does not hold steps 1-10"
import sys, h5py, numpy as np
g = h5py.File(sys.argv[1])["stage_1"]
assert list(g["step"][:]) == list(range(1, 11)), list(g["step"][:])
assert list(g["segment_first_step"][:]) == [1, 7], list(g["segment_first_step"][:])
assert len(g["loss"]) == 10
earlier = np.load(sys.argv[1] + ".times.npy")
columns = [c.decode() for c in g["step_times"].attrs["columns"]]
assert "elsewhere" not in columns and g["step_times"].shape[2] == len(columns), columns
assert np.array_equal(np.array(g["step_times"])[:6], earlier)
segments = [s.decode() if isinstance(s, bytes) else s for s in g.attrs["segments"]]
assert len(segments) == 2 and all(s.startswith("from step ") for s in segments), segments
PY
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
