#!/usr/bin/env bash
# The kit's side of check.sh (scripts/device-kit/check.sh unpacks the kit and runs this).
#   kit-check.sh [STEP...]    steps: env nccl bf16 perf unit mpi sanitize (default: all, in this
#                             order, the most decisive first); racecheck runs only when named
#
# The whole check fits one call of the device: CHECK_DEADLINE_S (default 480) bounds it. Each step
# runs in the background under the smaller of its cap and the time left (less
# CHECK_MARGIN_S, default 10, for the summary and the archive); a step stopped there is
# INCOMPLETE, and the steps after it that get no time say so. Every zeromini run sets
# comm.timeout_s=60, so a hang ends inside its step.
#
# CHECK_ONE_PER_PROGRAM=1: the unit and mpi steps run one test per program and rank count (the
# decisive ones first), the rest counted as not run. For a host that has just run the same tests
# in its build tree (CI's kit_bare_check): what the bare root adds is that every program of the
# kit starts and works there, not the tests a second time.
#
# $OUT/summary.md (the table, printed last) and $OUT/check-logs.tar.gz are written before each
# step (its row says "running") and after it, and by the TERM/INT trap, which marks the step it
# interrupts "killed": a call cut short at its limit still returns both.
set -uo pipefail
KIT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/check-out}
CHECK_DEADLINE_S=${CHECK_DEADLINE_S:-480}
CHECK_MARGIN_S=${CHECK_MARGIN_S:-10}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export KIT OUT
export PATH=$KIT/bin:$PATH  # mpiexec and hydra_pmi_proxy; the programs find lib/ by RUNPATH
# Several ranks share the device's one GPU over MPI; GPU-aware MPI is not assumed unless asked.
export ZEROMINI_MPI_GPU_AWARE=${ZEROMINI_MPI_GPU_AWARE:-0}
FLAVOR=$(sed -n 's/^flavor=//p' "$KIT/KIT-INFO")
check_start=$SECONDS
# The runs' files and the logs, outside $OUT: only the summary and one archive of the logs go
# there (a device returns few files).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zeromini-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
LOGS=$WORK/logs
mkdir -p "$LOGS"
# The CUDA runtime, cuBLAS and NCCL a cuda kit leaves to the device, where the device keeps them
# outside the loader's default paths: a GPU image may hold NCCL only in PyTorch's Python packages
# (nvidia/nccl/lib, nvidia/cu13/lib) and the toolkit in /usr/local/cuda. PyTorch's own packages
# are searched first, so that PyTorch, which the perf step runs beside zeromini, loads the same
# libraries it would load alone. Only missing ones are looked for; DEVICE_LIBRARIES_FOUND says
# where each was found (the env step logs it).
device_library_dirs() {
  local purelib
  purelib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  [[ -n $purelib && -d $purelib/nvidia ]] && find "$purelib/nvidia" -mindepth 2 -maxdepth 2 -type d -name lib | sort
  printf '%s\n' /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
    /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu
}
device_libraries_found=
if [[ $FLAVOR == cuda ]]; then
  mapfile -t device_dirs < <(device_library_dirs)
  while read -r name; do
    for dir in "${device_dirs[@]}"; do
      [[ -e $dir/$name ]] || continue
      [[ :${LD_LIBRARY_PATH:-}: == *:$dir:* ]] ||
        export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$dir
      device_libraries_found+="$name: $dir; "
      break
    done
  done < <(ldd "$KIT/bin/zeromini" 2>/dev/null | awk '/not found/ {print $1}')
fi
export DEVICE_LIBRARIES_FOUND=${device_libraries_found%; }

source "$KIT/scripts/kit-run-tests.sh"
source "$KIT/scripts/kit-steps.sh"

# Seconds a step may take at most (the time left may give it less). On an H100: env and the
# launch probes ~20 s, nccl ~30, bf16 ~40, perf 220-270 (PyTorch's four modes with
# torch.compile, then the zeromini runs), memcheck of one step ~60.
declare -A step_cap=([env]=60 [nccl]=90 [bf16]=120 [perf]=300 [unit]=300 [mpi]=300
  [sanitize]=150 [racecheck]=300)
all_steps=(env nccl bf16 perf unit mpi sanitize)
steps=("$@")
((${#steps[@]})) || steps=("${all_steps[@]}")
for step in "${steps[@]}"; do
  [[ -n ${step_cap[$step]:-} ]] ||
    { echo "check.sh: unknown step $step (${all_steps[*]} racecheck)" >&2; exit 2; }
done

time_left() { echo $((CHECK_DEADLINE_S - (SECONDS - check_start) - CHECK_MARGIN_S)); }

GPU=$(gpu_name)
summary_rows=()
write_summary() {
  {
    echo "# zeromini device check"
    echo
    echo "kit: $FLAVOR, $(sed -n 's/^revision=/revision /p; s/^packed=/packed /p; s/^torch_ref=/PyTorch reference script: /p' "$KIT/KIT-INFO" | paste -sd, | sed 's/,/, /g')"
    echo "$(sed -n 's/^version: *//p' "$KIT/KIT-INFO" | head -2 | paste -sd';' | tr -s ' ')"
    echo "machine: $(uname -n), GPU: ${GPU:-none}, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "deadline: ${CHECK_DEADLINE_S} s, $((SECONDS - check_start)) s used"
    echo
    echo "| step | result | seconds | detail |"
    echo "|---|---|---:|---|"
    printf '%s\n' "${summary_rows[@]}"
    echo
    unselected_tests
    [[ -f $LOGS/perf/table.md ]] && { echo; cat "$LOGS/perf/table.md"; }
  } >"$OUT/summary.md"
  tar -C "$WORK" -czf "$OUT/check-logs.tar.gz" logs 2>/dev/null
}
row() { echo "| $1 | $2 | $3 | ${4//|/\\|} |"; }  # row STEP RESULT SECONDS DETAIL

# kill_tree PID SIGNAL: PID and everything it started. By parent links in /proc rather than by
# process group: timeout(1), which bounds every command in a step, makes a group of its own.
kill_tree() {
  local signal=$2 stat line pid todo=("$1") found=()
  local -A children
  for stat in /proc/[0-9]*/stat; do
    { read -r line <"$stat"; } 2>/dev/null || continue
    pid=${line%% *}
    line=${line##*) }  # after the command name, which may hold spaces: state, parent, ...
    line=${line#* }
    children[${line%% *}]+=" $pid"
  done
  while ((${#todo[@]})); do
    pid=${todo[0]}
    todo=("${todo[@]:1}")
    found+=("$pid")
    for stat in ${children[$pid]:-}; do todo+=("$stat"); done
  done
  kill -"$signal" "${found[@]}" 2>/dev/null
}

# run_step STEP BUDGET: the step in the background, stopped (TERM, then KILL, with all it
# started) at BUDGET seconds; sets result and detail. The step writes its outcome to a file, since
# it runs in a subshell. `wait` returns at once on a signal, so the trap below acts mid-step.
run_step() {
  local step=$1 budget=$2 guard
  rm -f "$LOGS/$step/.outcome"
  (
    result= detail=
    STEP_BUDGET_S=$((budget - 5)) STEP_START=$SECONDS
    "step_$step"
    printf '%s\n%s\n' "$result" "$detail" >"$LOGS/$step/.outcome"
  ) &
  step_pid=$!
  # The guard ends by itself, within 0.2 s of the step: nothing stops it from outside. A step
  # that ends at once stopped a guard (its shell) while it forked its sleep, and that sleep,
  # escaping the signal, held the check's output (a device call) open until the budget's end.
  # Its output is not the check's in any case.
  (
    step_ends_within() {  # step_ends_within SECONDS: whether the step is gone by then
      local until=$((SECONDS + $1))
      while ((SECONDS < until)); do
        kill -0 "$step_pid" 2>/dev/null || return 0
        sleep 0.2
      done
      return 1
    }
    step_ends_within "$budget" && exit 0
    kill_tree "$step_pid" TERM
    step_ends_within 5 && exit 0
    kill_tree "$step_pid" KILL
  ) >/dev/null 2>&1 &
  guard=$!
  wait "$step_pid"
  wait "$guard"
  step_pid=
  if [[ -s $LOGS/$step/.outcome ]]; then
    { read -r result; read -r detail; } <"$LOGS/$step/.outcome"
  else
    result=INCOMPLETE detail="stopped at its budget of $budget s (logs/$step)"
  fi
}

current_step= step_pid= step_start=0
on_signal() {  # on_signal NAME NUMBER
  trap - TERM INT
  [[ -n $step_pid ]] && kill_tree "$step_pid" TERM
  if [[ -n $current_step ]]; then
    summary_rows[-1]=$(row "$current_step" killed $((SECONDS - step_start)) \
      "the check received SIG$1 during this step; its logs so far are in check-logs.tar.gz")
  fi
  write_summary
  echo "check.sh: SIG$1 during ${current_step:-no step}; summary and logs written to $OUT" >&2
  exit $((128 + $2))
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT

write_summary
overall=0
for step in "${steps[@]}"; do
  echo "=== check.sh: $step"
  step_start=$SECONDS result= detail=
  mkdir -p "$LOGS/$step"
  budget=$(time_left)
  ((budget > step_cap[$step])) && budget=${step_cap[$step]}
  if ((budget < 10)); then
    result=INCOMPLETE detail="not run: the check's deadline of $CHECK_DEADLINE_S s was spent"
    summary_rows+=("$(row "$step" "$result" 0 "$detail")")
    overall=1
    echo "=== check.sh: $step: $result: $detail"
    write_summary
    continue
  fi
  current_step=$step
  summary_rows+=("$(row "$step" running - "started at $((SECONDS - check_start)) s, budget $budget s")")
  write_summary
  run_step "$step" "$budget"
  current_step=
  [[ -n $result ]] || { result=FAIL; detail="the step set no result (a bug in the check)"; }
  [[ -n $detail ]] || detail=-
  [[ $result == pass || $result == skipped* ]] || overall=1
  echo "=== check.sh: $step: $result: $detail"
  summary_rows[-1]=$(row "$step" "$result" $((SECONDS - step_start)) "$detail")
  write_summary
done
echo
cat "$OUT/summary.md"
exit $overall
