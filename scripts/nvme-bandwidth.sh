#!/usr/bin/env bash
# The NVMe tier's I/O engines against the disk as dd sees it, side by side in alternated rounds
# on one directory: a 256 MiB file written and read in 4 MiB transfers by zeromini-bench's NvmeIo
# (8 in flight, O_DIRECT where the file system allows it) and by `dd oflag=direct` /
# `dd iflag=direct` (one transfer at a time). Prints each one's median MB/s and the ratios
# engine / dd, as a markdown table.
#
#   scripts/nvme-bandwidth.sh [DIR] [ROUNDS]      # DIR: default /var/tmp; ROUNDS: default 5
#   ZEROMINI_BENCH=build/bin/zeromini-bench scripts/nvme-bandwidth.sh /scratch/$USER 7
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
dir=${1:-/var/tmp}
rounds=${2:-5}
bench=${ZEROMINI_BENCH:-$root/build/bin/zeromini-bench}
require_executable "$bench"
[ -d "$dir" ] && [ -w "$dir" ] || { echo "nvme-bandwidth: $dir: not a writable directory" >&2; exit 2; }
work=$(mktemp -d /tmp/zeromini-nvme-bw.XXXXXX)
ddfile=$(mktemp "$dir/zeromini-dd.XXXXXX")
trap 'rm -rf "$work" "$ddfile"' EXIT

# dd's rate in MB/s from its bytes and seconds (its own rate is rounded to two digits).
dd_rate() {
  "$python" -c '
import re, sys
m = re.search(r"^(\d+) bytes .* copied, ([0-9.e-]+) s", sys.stdin.read(), re.M)
print(int(m.group(1)) / float(m.group(2)) / 1e6)'
}

for r in $(seq "$rounds"); do
  # Alternate which goes first, so that neither always finds the disk just warmed or busy.
  order="engine dd"; [ $((r % 2)) = 0 ] && order="dd engine"
  for side in $order; do
    if [ "$side" = engine ]; then
      ZEROMINI_NVME_DIR=$dir "$bench" --benchmark_filter='^NvmeIo/' --benchmark_repetitions=1 \
        --benchmark_format=json >"$work/engine-$r.json" 2>/dev/null
    else
      dd if=/dev/zero of="$ddfile" bs=4M count=64 oflag=direct conv=fsync 2>&1 | dd_rate >"$work/dd-write-$r"
      dd if="$ddfile" of=/dev/null bs=4M iflag=direct 2>&1 | dd_rate >"$work/dd-read-$r"
    fi
  done
done

"$python" - "$work" "$rounds" "$dir" "$(revision)" <<'PY'
import json, statistics, sys
work, rounds, where, revision = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
dd = {op: statistics.median(float(open(f"{work}/dd-{op}-{r}").read()) for r in range(1, rounds + 1))
      for op in ("write", "read")}
engines = {}
for r in range(1, rounds + 1):
    for b in json.load(open(f"{work}/engine-{r}.json"))["benchmarks"]:
        if b.get("error_occurred"):
            continue
        _, engine, op = b["name"].split("/")[:3]
        engines.setdefault((engine, op), []).append((b["bytes_per_second"] / 1e6, b.get("label", "")))
print(f"{where}, {rounds} alternated rounds, zeromini {revision}\n")
print("| engine | operation | engine MB/s (median) | dd MB/s (median) | engine / dd |")
print("|---|---|---|---|---|")
for (engine, op), runs in sorted(engines.items()):
    rate = statistics.median(v for v, _ in runs)
    print(f"| {runs[0][1]} | {op} | {rate:.0f} | {dd[op]:.0f} | {rate / dd[op]:.2f} |")
PY
