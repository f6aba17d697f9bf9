#!/usr/bin/env bash
# The fault campaign: every fault class the fault tests know, each tried several times on real
# runs, plus stalls by SIGSTOP of a random rank at a random moment. Writes a table (cases tried,
# handled, time to exit, data lost) to results/fault-campaign.md, with the command that made it.
#   scripts/fault-campaign.sh [BUILD_DIR (default build)] [TRIALS (default 3)] [SIGSTOP_TRIALS (default 12)]
# FAULT_CAMPAIGN_ONLY=network runs only the network rows (2 netns nodes, root) and writes them to
# results/fault-campaign-network.md instead.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
# A fault case that fails is a row of the table, not the end of the campaign.
set +e
build=$(cd "${1:-$root/build}" && pwd)
trials=${2:-3}
stop_trials=${3:-12}
zeromini=$build/bin/zeromini
deck=$root/inputs/tiny-test.toml
work=$(mktemp -d /tmp/zeromini-fault-campaign.XXXXXX)
only=${FAULT_CAMPAIGN_ONLY:-}
[[ -z $only || $only == network ]] || { echo "fault-campaign: FAULT_CAMPAIGN_ONLY='$only': expected network" >&2; exit 2; }
out=$root/results/fault-campaign${only:+-$only}.md
export OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
rows=()

# Whether the build has the inspect module's subcommands (src/modules/inspect/).
inspect=$("$zeromini" --help | grep -Eq '^ +inspect ' && echo yes)
# Whether it has the module space_reservation, whose message ("needs about X MiB") the real-disk
# cases size their disk by (without it, a full disk is the injected case's: fault_injection).
reserves_space=$("$zeromini" --version | grep -E '^ +modules ' | grep -qw space_reservation && echo yes)
# The run's 'latest' names a checkpoint that passes its whole-file check (inspect; in a build
# without it, every dataset's Fletcher32 checksum, read with h5py), or nothing was published.
latest_sound() {
  if [[ -e $1/checkpoints/latest ]]; then
    local checkpoint=$1/checkpoints/$(cat "$1/checkpoints/latest")
    if [[ -n $inspect ]]; then
      "$zeromini" inspect "$checkpoint" >/dev/null 2>&1
    else
      /usr/bin/python3 -c 'import sys, h5py
f = h5py.File(sys.argv[1], "r")
f.visititems(lambda name, o: o[...] if isinstance(o, h5py.Dataset) else None)' "$checkpoint" \
        >/dev/null 2>&1
    fi
  else
    ! compgen -G "$1/checkpoints/step_*.h5" >/dev/null
  fi
}

# row CLASS TRIED HANDLED TIMES LOST
row() {
  local times=$4 min max
  min=$(tr ' ' '\n' <<<"$times" | grep . | sort -g | head -1)
  max=$(tr ' ' '\n' <<<"$times" | grep . | sort -g | tail -1)
  rows+=("| $1 | $2 | $3 | $(printf '%.1f' "$min")-$(printf '%.1f' "$max") s | $5 |")
  echo "${rows[-1]}"
}

# One fault class from the fault tests, TRIALS times: handled = the test's checks all held (the
# run ended as specified, and 'latest' and the checkpoints it checks are intact and load).
# SCRIPT: in tests/fault/, or a path from there.
from_tests() {
  local class=$1 script=$2 case_name=$3 handled=0 times="" start elapsed
  for trial in $(seq "$trials"); do
    start=$(date +%s.%N)
    if "$root/tests/fault/$script" "$case_name" "$zeromini" mpiexec /usr/bin/python3 "$deck" \
      "$work/$case_name-$trial" >"$work/$case_name-$trial.log" 2>&1; then
      handled=$((handled + 1))
    fi
    elapsed=$(echo "$(date +%s.%N) - $start" | bc)
    times="$times $elapsed"
  done
  row "$class" "$trials" "$handled" "$times" "$([[ $handled -eq $trials ]] && echo none || echo "see $work")"
}

# A rank stopped with SIGSTOP at a random moment of a 4-rank stage-3 run that checkpoints and
# flushes its results every step (comm.timeout_s = 10): the job must end within 15 s of the
# timeout, the message must name ranks, and 'latest' must name an intact checkpoint (or, when the
# stop came before the first checkpoint was published, no checkpoint may be there at all).
sigstop_trials() {
  local handled=0 times="" dir launcher victim start elapsed status
  for trial in $(seq "$stop_trials"); do
    dir=$work/sigstop-$trial
    mpiexec -n 4 "$zeromini" run "$deck" --set zero.stage=3 --set train.steps=100000000 \
      --set output.checkpoint_every=1 --set output.results_every=1 --set output.log_every=1000 \
      --set comm.timeout_s=10 --out "$dir" >"$dir.log" 2>&1 &
    launcher=$!
    sleep "$(echo "2 + $RANDOM / 8192" | bc -l)"
    victim=$(pgrep -f "^$zeromini run $deck .*--out $dir" | shuf -n 1)
    start=$(date +%s.%N)
    kill -STOP "$victim"
    ( sleep 60; kill -KILL $launcher 2>/dev/null ) &
    wait $launcher
    status=$?
    elapsed=$(echo "$(date +%s.%N) - $start" | bc)
    times="$times $elapsed"
    if [[ $status -ne 0 ]] && (($(echo "$elapsed <= 25" | bc))) &&
      grep -q "watchdog: .*ranks still missing: [0-9]" "$dir.log" && latest_sound "$dir"; then
      handled=$((handled + 1))
    else
      echo "sigstop trial $trial: exit $status after $elapsed s (see $dir.log)"
    fi
  done
  row "rank stopped (SIGSTOP) at a random moment, 4 ranks, timeout 10 s" "$stop_trials" "$handled" \
    "$times" "$([[ $handled -eq $stop_trials ]] && echo none || echo "see $work")"
}

# A disk that another writer fills while the run checkpoints every step (a real 16 MiB tmpfs; needs
# root): the job must end non-zero within 60 s with 'latest' naming an intact checkpoint.
# Counted apart: how many ended by the agreed I/O error (exit 4) rather than by the watchdog.
hostile_writer_trials() {
  local handled=0 agreed=0 times="" disk=$work/disk dir start elapsed status ranks
  mkdir -p "$disk"
  if ! mount -t tmpfs -o size=16m tmpfs "$disk" 2>/dev/null; then
    rows+=("| disk filled by another writer during the run | 0 | - | - | not run: no tmpfs can be mounted (needs root) |")
    return
  fi
  for trial in $(seq "$trials"); do
    for ranks in 2 4; do
      rm -rf "${disk:?}"/*
      dir=$disk/run
      (while [[ ! -e $dir/checkpoints/latest ]]; do sleep 0.01; done
       mountpoint -q "$disk" && dd if=/dev/zero of="$disk/filler" bs=64k count=512 2>/dev/null) &
      start=$(date +%s.%N)
      timeout 120 mpiexec -n "$ranks" "$zeromini" run "$deck" --set zero.stage=2 \
        --set train.steps=100000000 --set output.checkpoint_every=1 --set output.log_every=1000 \
        --set comm.timeout_s=20 --out "$dir" >"$work/hostile-$trial-$ranks.log" 2>&1
      status=$?
      elapsed=$(echo "$(date +%s.%N) - $start" | bc)
      times="$times $elapsed"
      rm -f "$disk/filler"
      [[ $status -eq 4 ]] && agreed=$((agreed + 1))
      if [[ $status -ne 0 && $status -ne 124 ]] && (($(echo "$elapsed <= 60" | bc))) &&
        latest_sound "$dir"; then
        handled=$((handled + 1))
      fi
    done
  done
  umount -l "$disk"
  row "disk filled by another writer during the run, 2 and 4 ranks, timeout 20 s ($agreed ended by the agreed I/O error, the rest by the watchdog)" \
    "$((2 * trials))" "$handled" "$times" "$([[ $handled -eq $((2 * trials)) ]] && echo none || echo "see $work")"
}

# A network fault on one of two netns nodes (tests/multinode), TRIALS times: handled = the test's
# checks held (every rank ended within the timeout with the node named, the last checkpoint
# passes its checksums and resumes). The time is from the fault to the last rank's end, as the test prints it.
from_multinode() {
  local class=$1 case_name=$2 handled=0 times="" log status
  for trial in $(seq "$trials"); do
    log=$work/multinode-$case_name-$trial.log
    "$root/tests/multinode/multinode_tests.sh" "$case_name" "$zeromini" "$root" \
      "$work/multinode-$trial" >"$log" 2>&1
    status=$?
    if [[ $status == 77 ]]; then
      rows+=("| $class | 0 | - | - | not tried: $(grep -m1 SKIPPED "$log" | cut -d' ' -f2-) |")
      echo "${rows[-1]}"
      return
    fi
    [[ $status == 0 ]] && handled=$((handled + 1))
    times="$times $(sed -n 's/.*the ranks ended \([0-9]*\) s after the fault.*/\1/p' "$log")"
  done
  row "$class" "$trials" "$handled" "$times" "$([[ $handled -eq $trials ]] && echo none || echo "see $work")"
}

echo "fault campaign: $zeromini, $trials trials per class, $stop_trials SIGSTOP trials; work in $work"
if [[ -z $only ]]; then
  sigstop_trials
  from_tests "rank stopped inside a checkpoint write (timeout 5 s)" io_fault_tests.sh stall_checkpoint
  from_tests "rank stopped inside the results gather (timeout 5 s)" io_fault_tests.sh stall_gather
  from_tests "rank hung in a step (timeout 5 s)" fault_tests.sh stall
  from_tests "rank killed (SIGKILL), then resumed" fault_tests.sh kill
  if [[ -n $reserves_space ]]; then
    from_tests "disk full, 1 rank" io_fault_tests.sh disk_full_np1
    from_tests "disk full, 2 ranks" io_fault_tests.sh disk_full_np2
    from_tests "disk full, 4 ranks" io_fault_tests.sh disk_full_np4
  else
    from_tests "disk full (ENOSPC injected), 2 ranks" io_fault_tests.sh disk_full_injected_np2
  fi
  hostile_writer_trials
  from_tests "second run in a directory in use" io_fault_tests.sh two_runs
  from_tests "fresh run over another run's checkpoints" io_fault_tests.sh used_dir
  from_tests "SIGTERM as soon as the ranks exist" io_fault_tests.sh sigterm_early
  from_tests "SIGTERM mid-run, then resumed" fault_tests.sh sigterm
  from_tests "FIFO as deck, token shard, checkpoint" io_fault_tests.sh fifo
  if [[ -n $inspect ]]; then  # the core's cases, then what inspect says of the results they left
    from_tests "inspect of a FIFO, a directory, a missing or non-HDF5 file (exit 2)" \
      ../modules/inspect/exit_codes.sh inspect
    from_tests "export of or into a FIFO, a directory, a non-checkpoint (exit 2)" \
      ../modules/inspect/exit_codes.sh export
    from_tests "status after a watchdog abort (inspect: aborted, rank, reason)" \
      ../modules/inspect/after_fault.sh watchdog
    from_tests "status after a second signal, and of a run that died (not closed cleanly)" \
      ../modules/inspect/after_fault.sh second_signal
  else
    from_tests "status after a watchdog abort (the abort record: rank, exit status, reason)" \
      exit_code_tests.sh watchdog
    from_tests "status after a second signal (the abort record: its reason)" \
      exit_code_tests.sh second_signal
  fi
  from_tests "MPI_Init that does not return: the deadline, and a SIGTERM during it" \
    ../modules/fault_injection/mpi_init_deadline.sh mpi_init
  from_tests "resume into the same directory (history)" io_fault_tests.sh resume_history
  from_tests "non-finite gradient" fault_tests.sh nan
fi
from_multinode "a node's link taken down mid-step (2 nodes x 2 ranks, timeout 10 s), then resumed" link_down
from_multinode "a node's link shaped to 8 kbit/s mid-step (2 nodes x 2 ranks, timeout 10 s), then resumed" crawl
from_multinode "a whole node's ranks killed (SIGKILL; 2 nodes x 2 ranks), then resumed" node_kill

{
  echo "# Fault campaign"
  echo
  echo "Made by \`${only:+FAULT_CAMPAIGN_ONLY=$only }scripts/fault-campaign.sh ${1:-build} $trials $stop_trials\` on $(hostname) ($(nproc --all) cores),"
  echo "$(date -u +%Y-%m-%d), zeromini $("$zeromini" --version 2>/dev/null | head -1)."
  echo "Each class is tried on real runs (tests/fault); *handled* counts the trials that ended as"
  echo "specified (non-zero exit with the phase and ranks named, or the refusal or stop asked for)"
  echo "with 'latest' and the checkpoints checked intact and loadable. Times are wall seconds of a"
  echo "whole trial (launch to exit; for SIGSTOP: from the stop to the end of the job)."
  echo "*Data lost* is none when every trial's checks held: the checkpoints left are intact, and"
  echo "'latest' names one that loads."
  echo
  echo "| fault class | cases tried | handled | time to exit | data lost |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$out"
echo "wrote $out"
