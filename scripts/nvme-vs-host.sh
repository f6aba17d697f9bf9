#!/usr/bin/env bash
# A training step with the optimizer state on NVMe beside the same step with it in host memory
# (ZeRO-Offload), and with the gradient shard on NVMe too (zero.nvme_gradients), in alternated
# rounds: the quickstart deck at stage 3 on 2 ranks, its swap files in DIR. Prints the median step
# time of each and the ratios to host (over the medians, and in each round), as markdown tables.
#
#   scripts/nvme-vs-host.sh [DIR] [ROUNDS] [OUT.md]   # DIR: default /var/tmp; ROUNDS: default 5
#   ZEROMINI_BIN=build/bin/zeromini STEPS=40 scripts/nvme-vs-host.sh /scratch/$USER 8
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
dir=${1:-/var/tmp}
rounds=${2:-5}
out=${3:-/dev/stdout}
bin=${ZEROMINI_BIN:-$root/build/bin/zeromini}
steps=${STEPS:-40}
deck=inputs/quickstart.toml
require_executable "$bin"
if [[ ! -d $dir || ! -w $dir ]]; then
  echo "nvme-vs-host: $dir: not a writable directory" >&2
  exit 2
fi
work=$(mktemp -d /tmp/zeromini-nvme-vs-host.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
runs=()
for arm in host nvme nvme-grads; do
  grads=false
  [[ $arm == nvme-grads ]] && grads=true
  runs+=(--label "$arm" -- mpiexec -n 2 "$bin" run "$root/$deck" --set zero.stage=3
    --set zero.offload_optimizer="${arm%-grads}" --set zero.nvme_gradients="$grads"
    --set zero.nvme_dir="$dir" --set train.steps="$steps" --set output.log_every=1 --out '{run}')
done
tool alternation --rounds "$rounds" --dir "$work" "${runs[@]}"

"$python" - "$work" "$rounds" "$dir" "$steps" "$(revision)" "$*" <<'PY' >"$out"
import re, statistics, sys
work, rounds, where, steps, revision, args = sys.argv[1:7]
rounds, steps = int(rounds), int(steps)
line = re.compile(r"step +(\d+)/\d+ .* step +([0-9.]+) ms")
def median_step(home, r):  # ms, the steps after the first 5 (warm-up)
    times = [float(m.group(2)) for m in map(line.search, open(f"{work}/{home}-{r}.log")) if m and int(m.group(1)) > 5]
    return statistics.median(times)
arms = ("host", "nvme", "nvme-grads")
ms = {arm: [median_step(arm, r) for r in range(1, rounds + 1)] for arm in arms}
print(f"`scripts/nvme-vs-host.sh {args}`: inputs/quickstart.toml, stage 3, 2 ranks, {steps} steps "
      f"per run (the median of steps 6-{steps}), {rounds} alternated rounds, swap files in {where}, "
      f"zeromini {revision}\n")
what = {"host": "optimizer state and gradient shard in host memory",
        "nvme": "optimizer state on NVMe, gradient shard in host memory",
        "nvme-grads": "both on NVMe (zero.nvme_gradients)"}
print("| run | where | median step (ms) |\n|---|---|---|")
for arm in arms:
    print(f"| {arm} | {what[arm]} | {statistics.median(ms[arm]):.2f} |")
for arm in arms[1:]:
    ratios = [n / h for n, h in zip(ms[arm], ms["host"])]
    print(f"\n{arm} / host: {statistics.median(ms[arm]) / statistics.median(ms['host']):.2f} over the medians, "
          f"{statistics.median(ratios):.2f} the median of the rounds' ratios; per round: "
          f"{', '.join(f'{x:.2f}' for x in ratios)}")
# What the NVMe tier moved and waited for (the closing table's line of the first round's runs).
for arm in arms[1:]:
    for text in open(f"{work}/{arm}-1.log"):
        if "NVMe:" in text and "per rank per step" in text:
            print(f"\nThe {arm} runs' own figures (round 1): {text.strip()}")
PY
