#!/usr/bin/env bash
# zeromini on two real network stacks: a cluster of 2 "nodes" made by scripts/netns-cluster.sh
# (network namespaces with their own host names, veths into a bridge), ranks started in them by
# MPICH's Hydra (shared memory within a node, TCP between). Needs root and network namespaces;
# exits 77 (skipped) with the reason otherwise. The cluster is named zmt on 10.78.0 (a user's own
# cluster keeps the default zm) and is removed on every exit.
#
#   multinode_tests.sh CASE ZEROMINI SOURCE_DIR WORKDIR [TEST_BINARY]
#   CASE: smoke | equivalence | link_down | crawl | node_kill | slurm
set -uo pipefail

case_name=${1:?usage: multinode_tests.sh CASE ZEROMINI SOURCE_DIR WORKDIR [TEST_BINARY]}
zeromini=${2:?}
src=${3:?}
work=${4:?}/$case_name
test_binary=${5:-}
deck=$src/inputs/tiny-test.toml
cluster=$src/scripts/netns-cluster.sh
export ZEROMINI_NETNS_PREFIX=zmt ZEROMINI_NETNS_SUBNET=10.78.0

skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAILED: $*"
  exit 1
}

[[ $(id -u) == 0 ]] || skip "needs root (network namespaces, veths)"
for tool in ip nsenter unshare tc mpiexec python3; do
  command -v "$tool" >/dev/null || skip "$tool not found"
done
probe=zmtprobe$$
ip netns add "$probe" 2>/dev/null || skip "network namespaces are not permitted here (ip netns add failed)"
ip netns delete "$probe"

rm -rf "$work"
mkdir -p "$work"
# Only this shell takes the cluster down: a subshell of it (a pipeline, a command substitution)
# that a signal ends must not (Hydra signals what it started when a node's ranks die).
main_shell=$BASHPID
cleanup() {
  [[ $BASHPID == "$main_shell" ]] || return 0
  [[ $case_name == slurm ]] && "$src/scripts/netns-slurm.sh" down
  "$cluster" down
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$cluster" up 2 || fail "the cluster did not come up"

# has_module NAME: whether the build has the module (its --version lists them).
has_module() {
  "$zeromini" --version | grep -E '^ *modules ' | grep -qw "$1"
}

# The run must see two nodes from the topology alone: no deck key says so.
# summary.json is the run_summary module's: checked where the build has it.
expect_two_nodes() {   # LOG SUMMARY_JSON
  grep -q "ranks on 2 nodes" "$1" || fail "the run did not report 2 nodes: $(grep -m1 '^zeromini' "$1")"
  if has_module run_summary; then
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["nodes"] != 2)' "$2" ||
      fail "summary.json does not say 2 nodes"
  fi
  echo "node count detected: 2 ($(grep -m1 'ranks on' "$1"))"
}

# A network fault on node 2 mid-run (FAULT: link_down, crawl, node_kill): the ranks must all end
# within comm.timeout_s (plus the abort) with an error that names the node and the operation
# (or, for killed ranks, the launcher's report), leaving the last checkpoint whole and resumable.
# The ranks' end is timed, not the launcher's: Hydra's mpiexec waits for the proxy behind a dead
# link until the link is back (then it ends too; printed).
# Whether a rank of the run in $work/run is alive (zeromini processes, not the launcher, whose
# command line holds the same words).
ranks_alive() {
  local pid
  for pid in $(pgrep -x zeromini); do
    tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | grep -q -- "--out $work/run" && return 0
  done
  return 1
}

network_fault() {
  local fault=$1 timeout_s=10 start elapsed status launcher guard
  # A checkpoint across the two "nodes" takes about 3.5 s (60 steps with one every 5: 50 s; with
  # one at the end: 6 s): the faulted run writes one at step 25 and is faulted once step 26 is
  # logged, in the compute of the steps after it, far from the next one (50); the resume writes
  # only its last. (A fault inside a checkpoint write is the io fault tests' case; here Hydra
  # then took 80 s more to end after the ranks had.)
  local common=(--set zero.stage=3 --set train.steps=60 --set output.log_every=1)
  "$cluster" mpiexec 2 "$zeromini" run "$deck" "${common[@]}" --set output.checkpoint_every=25 \
    --set comm.timeout_s=$timeout_s --out "$work/run" >"$work/run.log" 2>&1 &
  launcher=$!
  for _ in $(seq 1200); do grep -q "step    26/" "$work/run.log" && break; sleep 0.05; done
  grep -q "step    26/" "$work/run.log" || { tail "$work/run.log"; fail "the run did not reach step 26"; }
  start=$(date +%s)
  case $fault in
    link_down) "$cluster" link 2 down ;;
    crawl) "$cluster" rate 2 8kbit ;;
    node_kill)   # the node's zeromini processes, not Hydra's proxy there
      kill -KILL $(comm -12 <(ip netns pids "$ZEROMINI_NETNS_PREFIX-node2" | sort) \
        <(pgrep -x zeromini | sort)) 2>/dev/null ;;
  esac
  for _ in $(seq 1200); do
    ranks_alive || break
    sleep 0.1
  done
  elapsed=$(($(date +%s) - start))
  case $fault in
    link_down) "$cluster" link 2 up ;;
    crawl) "$cluster" rate 2 off ;;
  esac
  # Its output away from ctest's pipe: ctest waits for every holder of that pipe to end, and the
  # guard's sleep outlives a `kill $guard` (it cost each of these tests 80 s after it passed).
  ( sleep 90; kill -KILL $launcher 2>/dev/null ) >/dev/null 2>&1 &
  guard=$!
  wait $launcher
  status=$?
  kill $guard 2>/dev/null
  echo "--- $fault: the ranks ended ${elapsed} s after the fault; the launcher exited with $status $(($(date +%s) - start)) s after it"
  grep -m2 -E "watchdog|BAD TERMINATION|killed" "$work/run.log"
  ! ranks_alive || fail "ranks still running"
  ((elapsed <= timeout_s + 30)) || fail "the ranks took ${elapsed} s to end (comm.timeout_s = $timeout_s)"
  [[ $status != 0 && $status != 137 ]] || fail "launcher exit status $status (137: killed after 90 s)"
  # Naming the ranks that did not arrive, and their node, is the module rank_progress's.
  if [[ $fault != node_kill ]] && has_module rank_progress; then
    grep "watchdog" "$work/run.log" | grep -q "$ZEROMINI_NETNS_PREFIX-node2" ||
      fail "the error does not name node $ZEROMINI_NETNS_PREFIX-node2"
  fi
  local latest
  latest=$(cat "$work/run/checkpoints/latest") || fail "no checkpoint"
  # The resume verifies the checkpoint's whole-file checksum before it loads it.
  timeout 300 "$cluster" mpiexec 2 "$zeromini" run "$deck" "${common[@]}" \
    --set output.checkpoint_every=60 --set comm.timeout_s=30 --set train.resume=latest \
    --out "$work/run" >"$work/resume.log" 2>&1 ||
    { tail "$work/resume.log"; fail "the resume failed"; }
  grep -q "resumed from .*$latest" "$work/resume.log" || fail "did not resume from $latest"
  echo "resumed from $latest and finished"
}

# sbatch -N 2 of the unchanged CPU job script, on a Slurm whose nodes are the namespaces.
slurm_job() {
  for tool in munged slurmctld slurmd sbatch scontrol; do
    command -v "$tool" >/dev/null || skip "$tool not found (Debian: slurm-wlm, munge)"
  done
  "$src/scripts/netns-slurm.sh" up || fail "Slurm did not start on the nodes"
  export SLURM_CONF
  SLURM_CONF=$("$src/scripts/netns-slurm.sh" conf)
  local job line state
  local preload=${ZEROMINI_UCX_FINALIZE_LIB:-none}
  [[ $preload != none ]] || preload=""
  job=$(cd "$work" && LD_PRELOAD=$preload UCX_TLS=tcp,self ZEROMINI_ROOT=$src ZEROMINI_BIN=$zeromini \
    ZEROMINI_OUT=$work/job ZEROMINI_SRUN_MPI=pmi2 sbatch --parsable -N 2 --ntasks-per-node=2 \
    --output="$work/job-%j.out" "$src/scripts/slurm/cpu-partition.sbatch" "$deck" \
    --set zero.stage=3 --set train.steps=3) || fail "sbatch refused the job"
  for _ in $(seq 1 300); do
    line=$(scontrol show job "$job" -o 2>/dev/null)
    state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    [[ $state == @(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) ]] && break
    sleep 1
  done
  echo "job $job: $(grep -o 'JobState=[A-Z_]* .*ExitCode=[0-9:]*' <<<"$line" | sed 's/ Reason.*ExitCode/ ExitCode/')"
  echo "nodes: $(grep -o ' NodeList=[^ ]*' <<<"$line")"
  tail -n 4 "$work/job-$job.out"
  [[ $state == COMPLETED ]] && grep -q 'ExitCode=0:0' <<<"$line" || fail "the job did not complete"
  expect_two_nodes "$work/job-$job.out" "$work/job/summary.json"
}

case $case_name in
  smoke)
    timeout 300 "$cluster" mpiexec 2 "$zeromini" run "$deck" --set zero.stage=3 \
      --set train.steps=3 --out "$work/run" >"$work/run.log" 2>&1
    status=$?
    tail -n 5 "$work/run.log"
    [[ $status == 0 ]] || fail "exit status $status"
    expect_two_nodes "$work/run.log" "$work/run/summary.json"
    ;;
  equivalence)
    [[ -x $test_binary ]] || fail "no test binary '$test_binary'"
    # Stage 3 at 2 nodes x 2 ranks against stage 0 at one rank (the test's own reference).
    timeout 600 "$cluster" mpiexec 2 "$test_binary" \
      --gtest_filter='Stages/Equivalence.MatchesStageZeroOnOneRank/3' >"$work/test.log" 2>&1
    status=$?
    grep -E "^\[  (PASSED|FAILED|  OK|SKIPPED) " "$work/test.log" | sort -u
    [[ $status == 0 ]] || { tail -n 30 "$work/test.log"; fail "exit status $status"; }
    grep -q "PASSED.*1 test" "$work/test.log" || fail "the test did not run"
    ;;
  link_down | crawl | node_kill) network_fault "$case_name" ;;
  slurm) slurm_job ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASSED: $case_name"
