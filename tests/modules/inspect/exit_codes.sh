#!/usr/bin/env bash
# The exit statuses of inspect and export (README, the exit-status table): 0 done, 2 bad input (a
# file that is missing, a directory, a FIFO, not what it should be; a missing argument), on the
# files of a real run. One case per subcommand (one ctest entry each).
#   exit_codes.sh CASE ZEROMINI MPIEXEC PYTHON DECK WORKDIR (CASE: inspect or export; the
#   arguments of tests/fault's scripts, PYTHON unused)
set -uo pipefail
case_name=$1 zeromini=$2 mpiexec=$3 deck=$5 work=$6/$1
rm -rf "$work"
mkdir -p "$work"
export OPENBLAS_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
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
# Inputs of every wrong kind: a missing file, a directory, a FIFO, a text file.
mkdir -p "$work/a_directory"
mkfifo "$work/a_fifo"
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$work/a_text_file"
# The files to read: a run's results and its checkpoint.
timeout -s KILL 120 "$mpiexec" -n 1 "$zeromini" run "$deck" --set train.steps=2 \
  --set output.checkpoint_every=2 --out "$work/run" >"$work/run.log" 2>&1 ||
  fail "the run that makes the files to read failed: $(tail -3 "$work/run.log")"
checkpoint=$(ls "$work"/run/checkpoints/step_*.h5 | head -n 1)

case $case_name in
  inspect)
    expect_cli 0 "status" results inspect "$work/run/results.h5"
    expect_cli 0 "step" checkpoint inspect "$checkpoint"
    expect_cli 2 "does not exist" missing inspect "$work/none.h5"
    expect_cli 2 "is a directory" directory inspect "$work/a_directory"
    expect_cli 2 "is a FIFO" fifo inspect "$work/a_fifo"
    expect_cli 2 "HDF5" not_hdf5 inspect "$work/a_text_file"
    expect_cli 2 "required" no_arguments inspect
    ;;
  export)
    expect_cli 0 "" good export "$checkpoint" "$work/exported.h5"
    expect_cli 2 "does not exist" missing export "$work/none.h5" "$work/out1.h5"
    expect_cli 2 "is a directory" directory export "$work/a_directory" "$work/out2.h5"
    expect_cli 2 "is a FIFO" fifo export "$work/a_fifo" "$work/out3.h5"
    # Refused by the checkpoint guard's check where a module sets one (checkpoint_seal), else by HDF5.
    expect_cli 2 "not a zeromini checkpoint|not an HDF5 file" not_checkpoint export "$work/a_text_file" "$work/out4.h5"
    expect_cli 2 "results file|not a zeromini checkpoint|checkpoint" results_not_checkpoint \
      export "$work/run/results.h5" "$work/out5.h5"
    expect_cli 2 "FIFO" output_fifo export "$checkpoint" "$work/a_fifo"
    expect_cli 2 "required" no_arguments export "$checkpoint"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS: $case_name"
