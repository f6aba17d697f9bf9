#!/usr/bin/env bash
# check_leaves_nothing.sh KIT_DIR WORK: a check whose steps end at once (on a host without a GPU:
# nccl, perf and sanitize say "skipped: no GPU") ends at once, and nothing it started holds its
# output open afterwards: a device call returns when the check ends, not at a step's budget.
# (Each step's guard, which stops the step at its budget, once outlived a step that ended before
# the guard had started its sleep: ctest then waited 150 s on kit_bare_check's output.)
set -u
kit=$1 work=$2
[[ -x $kit/check.sh ]] || { echo "check_leaves_nothing: skipped: no kit in $kit (kit_bare_check packs it)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
start=$SECONDS
# Through a pipe, as ctest and a device call read it: `cat` ends only when every writer is gone.
# The steps ten times over: the guard's race was lost about one time in three.
steps=()
for _ in $(seq 10); do steps+=(nccl perf sanitize); done
# shellcheck disable=SC2016  # the inner script's own arguments
OUT=$work/out TMPDIR=$work timeout 100 bash -c \
  'bash "$1/check.sh" "${@:3}" 2>&1 | cat >"$2/check.log"' _ "$kit" "$work" "${steps[@]}"
status=$?
echo "check.sh and its output's readers ended after $((SECONDS - start)) s (status $status)"
if ((status != 0 || SECONDS - start > 60)); then
  echo "check_leaves_nothing: FAILED: the check's output stayed open $((SECONDS - start)) s"
  tail -n 20 "$work/check.log"
  exit 1
fi
grep -q '^| perf | skipped: no GPU |' "$work/out/summary.md" ||
  { echo "check_leaves_nothing: FAILED: no perf row"; cat "$work/out/summary.md"; exit 1; }
echo "check_leaves_nothing: passed"
