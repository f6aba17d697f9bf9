#!/usr/bin/env bash
# check_sigterm.sh KIT_DIR WORK: a device call killed at its limit still returns what ran. Starts
# the kit's check.sh (steps env and unit), sends it SIGTERM while unit runs its tests, and
# expects, within seconds: summary.md with env passed and unit "killed", the log archive with
# the unit step's logs so far, and none of the check's processes left.
set -u
kit=$1 work=$2
# No kit where kit_bare_check skipped (not root, no debootstrap); where it failed, it fails.
[[ -x $kit/check.sh ]] || { echo "check_sigterm: skipped: no kit in $kit (kit_bare_check packs it)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "check_sigterm: FAILED: $*"
  [[ -f $work/out/summary.md ]] && cat "$work/out/summary.md"
  tail -n 20 "$work/check.log"
  exit 1
}

OUT=$work/out TMPDIR=$work bash "$kit/check.sh" env unit >"$work/check.log" 2>&1 &
check=$!
# Wait until unit has started a test (its row says running and a test log exists).
for _ in $(seq 600); do
  grep -q '^| unit | running |' "$work/out/summary.md" 2>/dev/null &&
    compgen -G "$work/zeromini-check.*/logs/unit/*.log" >/dev/null && break
  kill -0 $check 2>/dev/null || fail "check.sh ended before the unit step ran a test"
  sleep 0.2
done
grep -q '^| unit | running |' "$work/out/summary.md" 2>/dev/null || fail "the unit step did not start in 120 s"
sleep 1
start=$SECONDS
kill -TERM $check
wait $check
status=$?
echo "check.sh exited with $status $((SECONDS - start)) s after SIGTERM"
((status == 143)) || fail "exit status $status, expected 143 (SIGTERM)"
((SECONDS - start <= 20)) || fail "it took $((SECONDS - start)) s to end"
grep -q '^| env | pass |' "$work/out/summary.md" || fail "summary.md lost the env row"
grep -q '^| unit | killed |' "$work/out/summary.md" || fail "summary.md does not mark unit killed"
tar -tzf "$work/out/check-logs.tar.gz" | grep -q '^logs/unit/.*\.log$' ||
  fail "check-logs.tar.gz holds no log of the unit step"
sleep 1
# Nothing the check started is left: test programs run from the kit's bin/.
if pgrep -f "$kit/kit/bin/" >/dev/null; then
  pgrep -af "$kit/kit/bin/"
  fail "processes of the check are still running"
fi
echo "check_sigterm: passed: unit marked killed, env kept, logs archived"
