#!/usr/bin/env bash
# The whole training step of this build beside that of an earlier revision, built side by side
# against the same Kokkos, in alternating rounds within one invocation: one rank on the medium
# deck (6 layers, dim 384, GPT-2 vocabulary) at 1 and 2 OpenMP threads. Prints a markdown table
# of the median step times and the ratio new / old, then this build's per-kernel table from
# zeromini-bench (time, GB/s beside a copy's GB/s measured in the same run, GFLOP/s) at 1 and 2
# threads.
#
#   scripts/bench-step-vs.sh REV [OUT.md]
#   ZEROMINI_BIN=build-openmp/bin/zeromini ROUNDS=5 STEPS=6 scripts/bench-step-vs.sh 9a49c56
#
# REV is built (Release, without tests) in build-rev-<REV>/ from a git worktree, against the
# Kokkos that ZEROMINI_BIN's build was configured with.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:?usage: scripts/bench-step-vs.sh REV [OUT.md]}
out=${2:-/dev/stdout}
new_bin=${ZEROMINI_BIN:-$root/build-openmp/bin/zeromini}
rounds=${ROUNDS:-5}
steps=${STEPS:-6}
deck=inputs/medium-l6d384.toml
python=/usr/bin/python3
[ -x "$python" ] || python=python3

[ -x "$new_bin" ] || { echo "bench-step-vs: $new_bin: no such executable (ZEROMINI_BIN)" >&2; exit 2; }
new_build=$(dirname "$(dirname "$new_bin")")
kokkos_root=$(sed -n 's/^Kokkos_ROOT:[A-Z]*=//p' "$new_build/CMakeCache.txt")
[ -n "$kokkos_root" ] || { echo "bench-step-vs: $new_build was not configured with Kokkos_ROOT" >&2; exit 2; }
short=$(git -C "$root" rev-parse --short "$rev")
old_build=$root/build-rev-$short
old_bin=$old_build/bin/zeromini
if [ ! -x "$old_bin" ]; then
  # An interrupted earlier run may have left the worktree; it is reused.
  [ -e "$old_build/source/.git" ] ||
    git -C "$root" worktree add --detach -f "$old_build/source" "$short" >/dev/null
  BUILD_DIR=$old_build/build "$old_build/source/scripts/build.sh" -DKokkos_ROOT="$kokkos_root" \
    -DKokkosKernels_ROOT="$kokkos_root" -DZEROMINI_BUILD_TESTS=OFF >/dev/null
  mkdir -p "$old_build/bin"
  cp "$old_build/build/bin/zeromini" "$old_bin"
fi

work=$(mktemp -d /tmp/zeromini-bench-step.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_PROC_BIND=false
for round in $(seq "$rounds"); do
  for threads in 1 2; do
    for side in old new; do
      bin=$old_bin
      [ "$side" = new ] && bin=$new_bin
      OMP_NUM_THREADS=$threads mpiexec -n 1 "$bin" run "$root/$deck" --set train.steps="$steps" \
        --out "$work/$side-$threads-$round" >"$work/$side-$threads-$round.log" 2>&1
    done
  done
done
bench_bin=$(dirname "$new_bin")/zeromini-bench
for threads in 1 2; do
  OMP_NUM_THREADS=$threads "$bench_bin" --benchmark_filter='^Kernel_' --benchmark_format=json \
    >"$work/kernels-$threads.json" 2>"$work/kernels-$threads.log"
done

settings="ZEROMINI_BIN=${ZEROMINI_BIN:-build-openmp/bin/zeromini} ROUNDS=$rounds STEPS=$steps"
new_rev=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
"$python" - "$work" "$rounds" "$settings scripts/bench-step-vs.sh $*" "$short" "$new_rev" "$deck" \
  >"$out" <<'PY'
import json, os, statistics, sys

work, rounds, command, old_rev, new_rev, deck = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]


def step_ms(side, threads, r):
    summary = json.load(open(os.path.join(work, f"{side}-{threads}-{r}", "summary.json")))
    return summary["stages"][0]["time_seconds"]["step"] * 1e3


print(f"# Training step: zeromini {new_rev} against {old_rev}, built side by side")
print()
print(f"- command: `{command}`")
print(f"- {deck}, one rank, mean step time over the steps after the first; {rounds} alternating "
      "rounds (old then new, at 1 then 2 threads); the table gives the medians")
print()
print("| OpenMP threads | old step ms | new step ms | new / old | per round |")
print("|---:|---:|---:|---:|---|")
for threads in (1, 2):
    old = [step_ms("old", threads, r) for r in range(1, rounds + 1)]
    new = [step_ms("new", threads, r) for r in range(1, rounds + 1)]
    ratio = statistics.median(new) / statistics.median(old)
    per_round = ", ".join(f"{n / o:.3f}" for n, o in zip(new, old))
    print(f"| {threads} | {statistics.median(old):.1f} | {statistics.median(new):.1f} | "
          f"**{ratio:.3f}** | {per_round} |")
print()
print("Goal: new / old <= 1.02 at 1 and 2 threads.")
print()
print("## Kernels of the new build (zeromini-bench --benchmark_filter='^Kernel_')")
print()
print("GB/s counts each operand read or written once; `of copy` is that over the GB/s of a "
      "copy kernel measured in the same run (4 MiB, the operands' size).")
print()
tables = {}
for threads in (1, 2):
    runs = json.load(open(os.path.join(work, f"kernels-{threads}.json")))["benchmarks"]
    tables[threads] = {run["name"].split("/")[0]: run for run in runs}
print("| kernel | " + " | ".join(f"{t} thr: us | GB/s | of copy | GFLOP/s" for t in (1, 2)) + " |")
print("|---" + "|---:" * 8 + "|")
for name in tables[1]:
    cells = []
    for threads in (1, 2):
        run = tables[threads][name]
        gflops = run.get("GFLOPs")
        cells += [f"{run['real_time']:.1f}", f"{run['bytes_per_second'] / 1e9:.1f}",
                  f"{run['of_copy']:.2f}", f"{gflops:.1f}" if gflops else ""]
    print(f"| {name.removeprefix('Kernel_')} | " + " | ".join(cells) + " |")
print()
print("copy GB/s measured in the run: " +
      ", ".join(f"{tables[t]['Kernel_copy']['copy_GBps']:.1f} at {t} thread(s)" for t in (1, 2)))
PY
