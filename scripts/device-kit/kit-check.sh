#!/usr/bin/env bash
# The kit's side of check.sh (scripts/device-kit/check.sh unpacks the kit and runs this).
#   kit-check.sh [STEP...]    steps: env unit mpi nccl bf16 sanitize perf (default: all)
# Writes $OUT/summary.md (the table, printed last) and $OUT/check-logs.tar.gz, rewritten after
# every step, so that a call cut short still returns what ran. STEP_BUDGET_S (default 540)
# bounds a test step: tests not started by then are reported, and the step is INCOMPLETE.
set -uo pipefail
KIT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/check-out}
STEP_BUDGET_S=${STEP_BUDGET_S:-540}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export KIT OUT
export PATH=$KIT/bin:$PATH  # mpiexec and hydra_pmi_proxy; the programs find lib/ by RUNPATH
FLAVOR=$(sed -n 's/^flavor=//p' "$KIT/KIT-INFO")
# The runs' files and the logs, outside $OUT: only the summary and one archive of the logs go
# there (a device returns few files).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zeromini-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
LOGS=$WORK/logs
mkdir -p "$LOGS"
rm -f "$OUT/summary.md" "$OUT/check-logs.tar.gz"
# The CUDA toolkit's libraries, where the device keeps them outside the loader's default paths
# (only then: other programs, PyTorch among them, keep their own).
if [[ $FLAVOR == cuda && -d /usr/local/cuda/lib64 ]] &&
  ldd "$KIT/bin/zeromini" | grep -Eq 'lib(cudart|cublas).*not found'; then
  export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
fi

source "$KIT/scripts/kit-run-tests.sh"
source "$KIT/scripts/kit-steps.sh"

all_steps=(env unit mpi nccl bf16 sanitize perf)
steps=("$@")
((${#steps[@]})) || steps=("${all_steps[@]}")
for step in "${steps[@]}"; do
  [[ " ${all_steps[*]} " == *" $step "* ]] || { echo "check.sh: unknown step $step (${all_steps[*]})" >&2; exit 2; }
done

GPU=$(gpu_name)
summary_rows=()
write_summary() {
  {
    echo "# zeromini device check"
    echo
    echo "kit: $FLAVOR, $(sed -n 's/^revision=/revision /p; s/^packed=/packed /p; s/^torch_ref=/PyTorch reference script: /p' "$KIT/KIT-INFO" | paste -sd, | sed 's/,/, /g')"
    echo "$(sed -n 's/^version: *//p' "$KIT/KIT-INFO" | head -2 | paste -sd';' | tr -s ' ')"
    echo "machine: $(uname -n), GPU: ${GPU:-none}, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "| step | result | seconds | detail |"
    echo "|---|---|---:|---|"
    printf '%s\n' "${summary_rows[@]}"
    echo
    unselected_tests
    [[ -f $LOGS/perf/table.md ]] && { echo; cat "$LOGS/perf/table.md"; }
  } >"$OUT/summary.md"
  tar -C "$WORK" -czf "$OUT/check-logs.tar.gz" logs
}

overall=0
for step in "${steps[@]}"; do
  echo "=== check.sh: $step"
  start=$SECONDS result= detail=
  mkdir -p "$LOGS/$step"
  "step_$step"
  [[ -n $result ]] || { result=FAIL; detail="the step set no result (a bug in the check)"; }
  [[ -n $detail ]] || detail=-
  [[ $result == pass || $result == skipped* ]] || overall=1
  echo "=== check.sh: $step: $result: $detail"
  summary_rows+=("| $step | $result | $((SECONDS - start)) | ${detail//|/\\|} |")
  write_summary
done
echo
cat "$OUT/summary.md"
exit $overall
