#!/usr/bin/env bash
# One case per row of the README's exit-status table: a real run made to end that way, and the
# status it exits with (each case is one ctest entry); and one case per other subcommand of the
# core (plan, schema, sweep), which use the same statuses: 0 done, 2 bad input, 4 an output that
# could not be written. The rows for a CUDA build without a usable
# GPU and for NCCL on ranks that share a GPU need a CUDA or NCCL build: they are not run here.
#   exit_code_tests.sh CASE ZEROMINI MPIEXEC PYTHON DECK WORKDIR (the arguments of the other fault
#   scripts; PYTHON, with h5py, reads results.h5)
set -uo pipefail
case_name=$1 zeromini=$2 mpiexec=$3 python=$4 deck=$5 work=$6/$1
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
  grep -E "zeromini: |watchdog|received" "$work/$name.log" | head -3
  [[ $status -eq $want ]] || fail "$name: exit status $status, expected $want"
  grep -Eq "$pattern" "$work/$name.log" || fail "$name: the log does not match: $pattern"
}
# expect_cli STATUS PATTERN NAME ARGS...: zeromini ARGS (no launcher) exits STATUS and says PATTERN.
expect_cli() {
  local want=$1 pattern=$2 name=$3
  shift 3
  timeout -s KILL 60 "$zeromini" "$@" >"$work/$name.log" 2>&1
  local status=$?
  echo "--- $name: exit $status: $(head -c 200 "$work/$name.log" | head -n 2 | tr '\n' ' ')"
  [[ $status -eq $want ]] || fail "$name: exit status $status, expected $want"
  grep -Eq "$pattern" "$work/$name.log" || fail "$name: the output does not match: $pattern"
}
# results_status RESULTS: the status attribute of a results file (h5py).
results_status() {
  "$python" -c 'import sys, h5py
s = h5py.File(sys.argv[1], "r").attrs["status"]
print(s.decode() if isinstance(s, bytes) else s)' "$1"
}
# abort_recorded RESULTS PATTERN: the run that wrote RESULTS ended without closing it (status
# "running") and left its abort record beside it (core/abort_record.hpp) matching PATTERN, one
# line of the record (grep -E).
abort_recorded() {
  local status
  status=$(results_status "$1") || fail "$1 cannot be read"
  [[ $status == running ]] || fail "$1: status $status, expected running (the run did not close it)"
  [[ -f $1.abort ]] || fail "no abort record beside $1"
  grep -Eq "$2" "$1.abort" || fail "the abort record does not match $2: $(cat "$1.abort")"
}
# Inputs of every wrong kind, made once per case: a missing file, a directory, a FIFO, a text file.
make_wrong_inputs() {
  mkdir -p "$work/a_directory"
  mkfifo "$work/a_fifo"
  printf 'root:x:0:0:root:/root:/bin/bash\n' >"$work/a_text_file"
}
# The PID of the rank running with --out $1, once it has logged a step.
rank_pid() {
  for _ in $(seq 1200); do
    grep -q "step " "$work/$2.log" 2>/dev/null && pgrep -f "^$zeromini run $deck .*--out $1\$" && return
    sleep 0.05
  done
}

case $case_name in
  completed)  # 0
    expect 0 "Figure of merit" completed 1 --set train.steps=2 --out "$work/run"
    ;;
  rank_failed)  # 1: an internal error on one rank aborts the job
    ZEROMINI_TEST_FAULT=error ZEROMINI_TEST_FAULT_STEP=2 ZEROMINI_TEST_FAULT_RANK=1 \
      expect 1 "rank 1: error: fault injection: an internal error" failed 2 --set train.steps=4 \
      --out "$work/run"
    ;;
  bad_input)  # 2: a deck error, and every refusal of a checkpoint to resume from
    expect 2 "unknown key 'model\.layer'" deck 1 --set model.layer=2 --out "$work/deck"
    make_wrong_inputs
    # A data file: refused by its reader (tests/modules/token_shards/), or where the build reads
    # none, for that.
    expect 2 "\(data\.source\): not a |data\.source = .* names a data file" not_a_shard 2 \
      --set data.source="$work/a_text_file" --out "$work/shard"
    expect 2 "\(data\.source\) is a FIFO|data\.source = .* names a data file" shard_fifo 2 \
      --set data.source="$work/a_fifo" --out "$work/shard_fifo"
    expect_cli 2 "required" no_deck run
    expect_cli 2 "Unrecognized|The following argument" bad_option run "$deck" --no-such-option
    mkdir -p "$work/fifo/checkpoints" && mkfifo "$work/fifo/checkpoints/latest"
    expect 2 "'latest' checkpoint pointer .*is a FIFO" latest_fifo 2 --set train.resume=latest \
      --out "$work/fifo"
    expect 2 "checkpoint not found" missing_checkpoint 2 --set train.resume="$work/none.h5" \
      --out "$work/missing"
    expect 2 "resuming needs a single zero\.stage" all_stages 2 --set zero.stage=all \
      --set train.resume="$deck" --out "$work/all"
    ;;
  cannot_fit)  # 2: a run that cannot fit, refused before it allocates (module memory_preflight)
    expect 2 "needs [0-9.]+ GiB per rank" cannot_fit 1 --set model.layers=200 --set model.dim=2048 \
      --set model.heads=16 --set train.micro_batch=64 --set model.seq_len=1024 --out "$work/fit"
    ;;
  non_finite)  # 3
    ZEROMINI_TEST_FAULT=nan ZEROMINI_TEST_FAULT_STEP=2 \
      expect 3 "step 2: the loss or gradient norm is not finite" nan 1 --set train.steps=4 \
      --out "$work/run"
    ;;
  io_error)  # 4
    ZEROMINI_TEST_FAULT=enospc_checkpoint ZEROMINI_TEST_FAULT_STEP=2 \
      expect 4 "I/O error: the checkpoint after step 2 was not written" io 1 --set train.steps=4 \
      --set output.checkpoint_every=1 --out "$work/run"
    ;;
  watchdog)  # 5
    ZEROMINI_TEST_FAULT=stall ZEROMINI_TEST_FAULT_STEP=2 ZEROMINI_TEST_FAULT_RANK=1 \
      expect 5 "watchdog: step 2 .* more than comm\\.timeout_s = 3; .*Aborting the job" stall 2 --set train.steps=4 \
      --set comm.timeout_s=3 --out "$work/run"
    # results.h5 left "running", the abort record beside it: the rank, its exit status, the reason.
    abort_recorded "$work/run/results.h5" "^rank 0$"
    abort_recorded "$work/run/results.h5" "^exit_status 5$"
    abort_recorded "$work/run/results.h5" "^reason .*watchdog: step 2"
    ;;
  terminated | second_signal)  # 6, and 128 + 15
    # SIGTERM to the rank mid-run without checkpoints: flushed, exit 6. For the second row the
    # rank is stalled (it cannot reach the end of a step), and a second SIGTERM 3 s after the
    # first ends it at once.
    if [[ $case_name == terminated ]]; then want=6 pattern="SIGTERM received"; else want=143
      pattern="zeromini"; export ZEROMINI_TEST_FAULT=stall ZEROMINI_TEST_FAULT_STEP=3; fi
    timeout -s KILL 120 "$mpiexec" -n 1 "$zeromini" run "$deck" --set train.steps=100000000 \
      --set output.log_every=1 --set comm.timeout_s=600 --out "$work/run" >"$work/run.log" 2>&1 &
    launcher=$!
    pid=$(rank_pid "$work/run" run)
    [[ -n $pid ]] || fail "the run did not start"
    [[ $case_name == second_signal ]] && sleep 1
    kill -TERM "$pid"
    [[ $case_name == second_signal ]] && { sleep 3; kill -TERM "$pid"; }
    wait $launcher
    status=$?
    echo "--- exit $status"; tail -3 "$work/run.log"
    [[ $status -eq $want ]] || fail "exit status $status, expected $want"
    grep -Eq "$pattern" "$work/run.log" || fail "the log does not match: $pattern"
    # After a second signal: results.h5 left "running", the abort record giving the reason.
    if [[ $case_name == second_signal ]]; then
      abort_recorded "$work/run/results.h5" "^reason .*second stop signal"
    fi
    ;;
  reference_miss)  # 7: the committed reference with stage 0's first loss changed far beyond it
    reference=$(dirname "$deck")/references/$(basename "$deck")
    sed -E 's/^stage0 = \[[^,]*/stage0 = [9.0/' "$reference" >"$work/wrong.toml"
    cmp -s "$reference" "$work/wrong.toml" && fail "no stage0 losses changed in $reference"
    expect 7 "MISS at stage 0, step 1: expected loss 9, got " miss 2 --set zero.stage=0 \
      --check-reference "$work/wrong.toml" --out "$work/run"
    ;;
  plan)  # the planner: a deck (file, syntax, keys), a machine file, options
    make_wrong_inputs
    expect_cli 0 "zeromini plan: .*tiny-test.toml" good plan "$deck"
    expect_cli 2 "does not exist" missing plan "$work/none.toml"
    expect_cli 2 "is a directory" directory plan "$work/a_directory"
    expect_cli 2 "is a FIFO" fifo plan "$work/a_fifo"
    expect_cli 2 "TOML syntax error" not_toml plan "$work/a_text_file"
    expect_cli 2 "unknown key" bad_key plan "$deck" --set model.layer=2
    expect_cli 2 "TOML syntax error|machine" bad_machine plan "$deck" --machine "$work/a_text_file"
    expect_cli 2 "Unrecognized|The following argument" bad_option plan "$deck" --no-such-option
    expect_cli 2 "required" no_arguments plan
    ;;
  schema | sweep)  # the schema takes no input; a sweep file is checked like a deck
    make_wrong_inputs
    if [[ $case_name == schema ]]; then
      expect_cli 0 "^\[model\]" good schema
      expect_cli 2 "Unrecognized|The following argument" bad_option schema --no-such-option
    else
      # The example sweep files name their decks relative to the repository root.
      cd "$(dirname "$deck")/.." || fail "no repository root above $deck"
      expect_cli 0 '"name": "quickstart-local"' good sweep expand inputs/sweeps/quickstart-local.toml
      expect_cli 2 "does not exist" missing sweep expand "$work/none.toml"
      expect_cli 2 "is a FIFO" fifo sweep expand "$work/a_fifo"
      expect_cli 2 "TOML syntax error" not_toml sweep expand "$work/a_text_file"
      expect_cli 2 "required|A subcommand" no_arguments sweep
    fi
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
