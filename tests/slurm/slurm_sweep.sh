#!/usr/bin/env bash
# End-to-end test of the Slurm workflow on a private one-node Slurm cluster on this machine:
# munged, slurmctld and slurmd started here with a generated configuration (own munge key and
# socket, free ports, spool and state directories in a temporary directory). Sweep points of the
# real zeromini (tiny deck, 2 ranks) are submitted with scripts/sweep.py (sbatch), launched by
# srun --mpi=pmi2 and by MPICH's mpiexec inside the allocation; sweep.py must see them queued,
# then finished; scripts/collect.py must give the expected CSV row. Then SIGTERM to the batch
# shell (what --signal=B:TERM@120 sends before the time limit) must reach the ranks through both
# launchers: checkpoint, exit 0. Finally everything is stopped and removed. Needs root (slurmd
# runs jobs as their user), Debian's slurm-wlm and munge; exits 77 (skipped) otherwise.
#
#   tests/slurm/slurm_sweep.sh ZEROMINI_BIN SOURCE_DIR [PYTHON]
set -uo pipefail

SKIP=77
bin=${1:?usage: slurm_sweep.sh ZEROMINI_BIN SOURCE_DIR [PYTHON]}
src=${2:?usage: slurm_sweep.sh ZEROMINI_BIN SOURCE_DIR [PYTHON]}
python=${3:-python3}

skip() {
  echo "SKIPPED: $*"
  exit $SKIP
}
fail() {
  echo "FAILED: $*"
  exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root (slurmd starts the job steps as the submitting user)"
for tool in munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel srun \
  mpiexec; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool not found (Debian: apt-get install slurm-wlm munge mpich)"
done
[ -x "$bin" ] || fail "$bin: no zeromini executable"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || fail "$python: Python >= 3.9 needed"

# Where it can, the test runs in a PID namespace of its own (and a /proc to match, for Slurm's
# process tracking): when the test ends in any way, even killed by ctest's timeout, the kernel
# ends everything in it, daemons, job steps and ranks alike.
if [ -z "${ZEROMINI_SLURM_TEST_NS:-}" ] && command -v unshare >/dev/null 2>&1 &&
  unshare --pid --fork --kill-child --mount-proc true 2>/dev/null; then
  export ZEROMINI_SLURM_TEST_NS=1
  exec unshare --pid --fork --kill-child --mount-proc "$0" "$@"
fi
[ -n "${ZEROMINI_SLURM_TEST_NS:-}" ] && echo "running in a PID namespace of its own"

# A Slurm job around this test (a CI runner under Slurm) must not leak into the private cluster.
for name in $(compgen -e); do
  case $name in SLURM_* | SBATCH_* | SRUN_* | SALLOC_*) unset "$name" ;; esac
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zeromini-slurm.XXXXXX") || fail "mktemp"
chmod 711 "$tmp"   # munged wants its socket's directory searchable by everyone
pids=()
passed=0

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    # Jobs first, so that no job step outlives the daemons.
    timeout 20 scancel --full --quiet --user=root >/dev/null 2>&1 || true
    for _ in $(seq 1 20); do
      [ -z "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && break
      sleep 1
    done
  fi
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 1 30); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.5
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  if [ $passed = 0 ]; then
    for log in "$tmp"/munged.log "$tmp"/slurmctld.log "$tmp"/slurmd.log; do
      [ -f "$log" ] && { echo "---- tail of $log"; tail -n 30 "$log"; }
    done
  fi
  rm -rf "$tmp"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
trap '' PIPE   # output piped to a pager that quits must not cut the clean-up short

# The daemons run in the foreground as children of this script; where setpriv can, they also get
# SIGKILL when it dies, even of SIGKILL (ctest's timeout), so that nothing outlives the test.
pdeathsig=()
setpriv --help 2>&1 | grep -q -- --pdeathsig && pdeathsig=(setpriv --pdeathsig KILL)
start_daemon() {   # LOG COMMAND...
  local log=$1
  shift
  "${pdeathsig[@]}" "$@" >"$log" 2>&1 &
  pids+=($!)
}

# ---- munge: a private daemon with its own key and socket
key=$tmp/munge.key
if command -v mungekey >/dev/null 2>&1; then
  mungekey --create --keyfile="$key" >/dev/null 2>&1 || fail "mungekey could not write $key"
else
  dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
fi
chmod 600 "$key"
socket=$tmp/munge.socket
start_daemon "$tmp/munged.out" munged --foreground --force --key-file="$key" --socket="$socket" \
  --pid-file="$tmp/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munged.seed" \
  --num-threads=2
for _ in $(seq 1 50); do
  [ -S "$socket" ] && munge -S "$socket" -n </dev/null 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || break
  sleep 0.2
done
munge -S "$socket" -n </dev/null 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1 ||
  skip "munged did not start: $(tail -n 3 "$tmp/munged.out" 2>/dev/null)"
echo "munged: running (socket $socket)"

# ---- slurm.conf for one node: this host, at least 2 CPUs, 90% of its memory
host=$(hostname -s)
cpus=$(nproc)
[ "$cpus" -lt 2 ] && cpus=2   # SlurmdParameters=config_overrides lets 2 tasks run on 1 core
mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
read -r ctld_port slurmd_port < <("$python" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
EOF
)
[ -n "$slurmd_port" ] || fail "could not find free ports"
mkdir -p "$tmp/state" "$tmp/spool"
export SLURM_CONF=$tmp/slurm.conf
cat >"$SLURM_CONF" <<EOF
# Generated by tests/slurm/slurm_sweep.sh: a private one-node cluster for the workflow test.
ClusterName=zeromini-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
KillWait=10
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=60 State=UP
EOF

# ---- the Slurm daemons
start_daemon "$tmp/slurmctld.out" slurmctld -D -c -f "$SLURM_CONF"
start_daemon "$tmp/slurmd.out" slurmd -D -f "$SLURM_CONF" -N "$host"
state=
for _ in $(seq 1 60); do
  state=$(timeout 10 sinfo -h -n "$host" -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null ||
      skip "a Slurm daemon exited at start: $(tail -n 3 "$tmp"/slurmctld.out "$tmp"/slurmd.out 2>/dev/null)"
  done
  sleep 1
done
[ "$state" = idle ] ||
  skip "the node did not become idle (state '$state'): $(timeout 10 sinfo -h -R 2>/dev/null)"
echo "slurm: node $host idle, ports $ctld_port/$slurmd_port, $(sinfo --version)"

# ---- a sweep point per launcher: tiny deck, 3 steps, 2 ranks on 1 node
sweep_dir=$tmp/sweeps
run_sweep() {   # NAME STAGE LAUNCHER [STEPS [SET [TIME]]] -> submits; prints sweep.py's output
  local name=$1 stage=$2 launcher=$3 steps=${4:-3} set=${5:-} time=${6:-00:02:00}
  cat >"$tmp/$name.toml" <<EOF
name = "$name"
deck = "$src/inputs/tiny-test.toml"
stages = [$stage]
nodes = [1]
ranks_per_node = [2]
steps = $steps
set = [$set]
models = [{ name = "tiny", set = [] }]

[slurm]
template = "$src/scripts/slurm/cpu-partition.sbatch"
partition = "debug"
time = "$time"
launcher = "$launcher"
# Debian's MPICH speaks PMI-1/PMI-2 to srun through Slurm's pmi2 plugin (pmix: not installed).
srun_mpi = "pmi2"
EOF
  "$python" "$src/scripts/sweep.py" "$tmp/$name.toml" --dir "$sweep_dir/$name" --bin "$bin"
}

wait_job() {   # JOB -> 0 when it completed with exit code 0
  local job=$1 line state
  for _ in $(seq 1 100); do
    line=$(timeout 10 scontrol show job "$job" -o 2>/dev/null)
    state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    case $state in
      COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
        break ;;
    esac
    sleep 1
  done
  echo "job $job: JobState=$state $(grep -o 'ExitCode=[0-9:]*' <<<"$line")"
  [ "$state" = COMPLETED ] && grep -q 'ExitCode=0:0' <<<"$line"
}

check_point() {   # NAME STAGE LAUNCHER
  local name=$1 stage=$2 launcher=$3 out job point
  out=$(run_sweep "$name" "$stage" "$launcher") || { echo "$out"; fail "sweep.py $name"; }
  echo "$out"
  job=$(sed -n 's/.*: submitted job \([0-9][0-9]*\)$/\1/p' <<<"$out")
  [ -n "$job" ] || fail "$name: sweep.py submitted no job"
  point=$sweep_dir/$name/$name-s$stage-n1x2-tiny-r0
  # Submitting again while the job is queued or after it finished submits nothing.
  again=$(run_sweep "$name" "$stage" "$launcher") || fail "sweep.py $name (again)"
  echo "$again" | grep "$name-s"
  grep -q "submitted" <<<"$again" && { echo "$again"; fail "$name: submitted twice"; }
  wait_job "$job" || { cat "$point"/slurm-*.out; fail "$name: job $job did not complete"; }
  echo "---- $point/slurm-$job.out"
  cat "$point/slurm-$job.out"
  grep -q "^launcher=$launcher$" "$point/job.env" || fail "$name: not launched by $launcher"
  [ -f "$point/summary.json" ] || fail "$name: no summary.json"
  again=$(run_sweep "$name" "$stage" "$launcher") || fail "sweep.py $name (after)"
  grep -q ": finished$" <<<"$again" || { echo "$again"; fail "$name: not seen as finished"; }
  "$python" "$src/scripts/collect.py" "$sweep_dir/$name" -o "$tmp/$name.csv" ||
    fail "collect.py $name"
  "$python" - "$tmp/$name.csv" "$name" "$stage" "$job" <<'EOF' || fail "$name: CSV check"
import csv, sys
path, name, stage, job = sys.argv[1:]
rows = list(csv.DictReader(open(path)))
assert len(rows) == 1, f"{len(rows)} rows, expected 1"
row = rows[0]
want = {"sweep": name, "stage": stage, "ranks": "2", "nodes": "1", "ranks_per_node": "2",
        "model": "tiny", "repeat": "0", "job_id": job, "status": "completed", "steps": "3"}
bad = {k: (row[k], v) for k, v in want.items() if row[k] != v}
assert not bad, f"columns (found, expected): {bad}"
assert float(row["tokens_per_second_per_rank"]) > 0
assert int(row["mem_model_states_bytes"]) > 0
print(f"collect.py: {name}: stage {row['stage']}, {row['ranks']} ranks, job {row['job_id']}, "
      f"{float(row['tokens_per_second_per_rank']):.0f} tokens/s per rank")
EOF
}

# What --signal=B:TERM@120 does before the time limit: SIGTERM to the batch shell only
# (scancel --batch), which passes it on to the launcher and so to the ranks; they stop after
# the step, write a checkpoint and exit 0. The point then counts as stopped early.
check_sigterm() {   # NAME LAUNCHER
  local name=$1 launcher=$2 out job point log
  # Long enough to be still running when signalled (the tiny model's steps take well under a
  # millisecond: 3000 steps could end before scancel came), bounded by the time limit.
  local steps=1000000 set='"output.checkpoint_every=100000", "output.log_every=10"'
  out=$(run_sweep "$name" 1 "$launcher" $steps "$set" 00:03:00) || { echo "$out"; fail "sweep.py $name"; }
  job=$(sed -n 's/.*: submitted job \([0-9][0-9]*\)$/\1/p' <<<"$out")
  [ -n "$job" ] || { echo "$out"; fail "$name: sweep.py submitted no job"; }
  point=$sweep_dir/$name/$name-s1-n1x2-tiny-r0
  log=$point/slurm-$job.out
  for _ in $(seq 1 60); do
    grep -q "step  *10/$steps" "$log" 2>/dev/null && break
    sleep 1
  done
  grep -q "step  *10/$steps" "$log" 2>/dev/null || { cat "$log"; fail "$name: training did not start"; }
  timeout 20 scancel --batch --signal=TERM "$job" || fail "$name: scancel --batch --signal=TERM"
  wait_job "$job" || { cat "$log"; fail "$name: job $job did not end cleanly after SIGTERM"; }
  grep -E "SIGTERM|checkpoint" "$log"
  grep -q "SIGTERM received: stopped after step" "$log" || fail "$name: the ranks did not get SIGTERM"
  [ -f "$point/checkpoints/latest" ] || fail "$name: no checkpoint written on SIGTERM"
  out=$(run_sweep "$name" 1 "$launcher" $steps "$set" 00:03:00 | grep "$name-s") || true
  echo "$out"
  # Not finished, so sweep.py submits it again; cancel that one.
  grep -q "submitted job" <<<"$out" || fail "$name: a stopped point should run again"
  timeout 20 scancel "$(sed -n 's/.*submitted job \([0-9]*\)$/\1/p' <<<"$out")"
}

check_point slurm-srun 3 srun
check_point slurm-mpiexec 2 mpiexec
check_sigterm slurm-sigterm-srun srun
check_sigterm slurm-sigterm-mpiexec mpiexec
passed=1
echo "PASSED: sweep points run under Slurm with srun --mpi=pmi2 and with mpiexec; SIGTERM to the"
echo "batch shell reaches the ranks through both, which write a checkpoint and exit 0"
