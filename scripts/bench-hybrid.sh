#!/usr/bin/env bash
# Hybrid MPI + OpenMP against MPI alone on one node: tokens/s of 1 rank x T threads beside
# T ranks x 1 thread (T = the cores of this machine), at the same global batch, for the
# quickstart deck and a larger one, in alternating rounds within one invocation. Prints a
# markdown table with the medians, the ratio hybrid / MPI-only and the ratio of every round.
#
#   scripts/bench-hybrid.sh [OUT.md]
#   ZEROMINI_BIN=build-openmp/bin/zeromini THREADS=2 ROUNDS=5 scripts/bench-hybrid.sh
#
# Needs a build whose Kokkos has the OpenMP backend (scripts/test.sh builds one in
# build-openmp/). The threads are not bound and the ranks not pinned, as with a plain mpiexec on
# a workstation; on a cluster use the binding of the README's recipe for both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/dev/stdout}
bin=${ZEROMINI_BIN:-$root/build-openmp/bin/zeromini}
threads=${THREADS:-$(nproc)}
rounds=${ROUNDS:-5}
python=/usr/bin/python3
[ -x "$python" ] || python=python3

[ -x "$bin" ] || { echo "bench-hybrid: $bin: no such executable (ZEROMINI_BIN)" >&2; exit 2; }
"$bin" --version | grep -q "OpenMP" ||
  { echo "bench-hybrid: $bin has no Kokkos OpenMP backend: one rank cannot run threads" >&2; exit 2; }

# deck, steps, the deck's micro-batch per rank (the MPI-only runs keep it; the hybrid run takes
# T times as many sequences on its one rank)
decks=(
  "inputs/quickstart.toml 150 4"
  "inputs/medium-l6d384.toml 8 4"
)
work=$(mktemp -d /tmp/zeromini-bench-hybrid.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_PROC_BIND=false

for round in $(seq "$rounds"); do
  for entry in "${decks[@]}"; do
    read -r deck steps micro <<<"$entry"
    name=$(basename "$deck" .toml)
    OMP_NUM_THREADS=$threads mpiexec -n 1 "$bin" run "$root/$deck" --set train.steps="$steps" \
      --set train.micro_batch=$((micro * threads)) --out "$work/$name-hybrid-$round" \
      >"$work/$name-hybrid-$round.log" 2>&1
    OMP_NUM_THREADS=1 mpiexec -n "$threads" "$bin" run "$root/$deck" --set train.steps="$steps" \
      --set train.micro_batch="$micro" --out "$work/$name-mpi-$round" \
      >"$work/$name-mpi-$round.log" 2>&1
  done
done

revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
"$python" - "$work" "$threads" "$rounds" "scripts/bench-hybrid.sh $*" "$revision" \
  "${decks[@]}" >"$out" <<'PY'
import json, os, platform, statistics, sys

work, threads, rounds, command, revision = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    sys.argv[4], sys.argv[5]
decks = [entry.split() for entry in sys.argv[6:]]


def per_node(run_dir):
    summary = json.load(open(os.path.join(run_dir, "summary.json")))
    stage = summary["stages"][0]
    return stage["tokens_per_second_per_rank"] * stage["ranks"], summary


def threads_line(log):
    return next((l.strip() for l in open(log) if l.startswith("threads:")), "?")


print(f"# Hybrid MPI + OpenMP on one node: 1 rank x {threads} threads against {threads} ranks x 1 thread")
print()
print(f"- command: `{command}` (zeromini {revision})")
print(f"- host: {platform.node()}, {os.cpu_count()} CPUs; {rounds} alternating rounds of both "
      "configurations for both decks; the table gives the medians of tokens/s per node (tokens/s "
      "per rank x ranks, mean over the steps after the first)")
print(f"- same global batch: the hybrid rank takes {threads} x the deck's micro-batch; threads "
      "unbound, ranks not pinned, OPENBLAS_NUM_THREADS=1")
first = decks[0][0].split("/")[-1].replace(".toml", "")
print(f"- hybrid run reports: `{threads_line(os.path.join(work, f'{first}-hybrid-1.log'))}`")
print(f"- MPI-only run reports: `{threads_line(os.path.join(work, f'{first}-mpi-1.log'))}`")
print()
print(f"| deck | model | global batch | 1 x {threads} tok/s | {threads} x 1 tok/s | ratio | per round |")
print("|---|---|---:|---:|---:|---:|---|")
for deck, steps, micro in decks:
    name = deck.split("/")[-1].replace(".toml", "")
    hybrid, mpi = [], []
    for r in range(1, rounds + 1):
        h, summary = per_node(os.path.join(work, f"{name}-hybrid-{r}"))
        m, _ = per_node(os.path.join(work, f"{name}-mpi-{r}"))
        hybrid.append(h)
        mpi.append(m)
    model = summary["model"]
    shape = f"{model['layers']} layers, dim {model['dim']}, vocab {model['vocab']}, seq {model['seq_len']}"
    ratio = statistics.median(hybrid) / statistics.median(mpi)
    rounds_text = ", ".join(f"{h / m:.2f}" for h, m in zip(hybrid, mpi))
    print(f"| {deck} | {shape} | {int(micro) * threads} x {model['seq_len']} | "
          f"{statistics.median(hybrid):,.0f} | {statistics.median(mpi):,.0f} | **{ratio:.2f}** | "
          f"{rounds_text} |")
print()
print("Goal: ratio >= 0.9 on both decks (one rank's threads use the cores as well as ranks do).")
PY
