#!/usr/bin/env bash
# The timeline of a run with the optimizer state on NVMe: each traced step's reads and writes of
# the swap files on the storage track (tid 3, category "storage"), one of each per unit and rank,
# each within its step.
#   nvme_trace_test.sh ZEROMINI MPIEXEC PYTHON DECK WORKDIR
set -uo pipefail
zeromini=$1 mpiexec=$2 python=$3 deck=$4 work=$5/nvme_trace
rm -rf "$work"
mkdir -p "$work/swap"
export OPENBLAS_NUM_THREADS=1
timeout 120 "$mpiexec" -n 2 "$zeromini" run "$deck" --set zero.stage=2 \
  --set zero.offload_optimizer=nvme --set zero.nvme_dir="$work/swap" --set train.steps=4 \
  --set output.trace=true --set output.trace_steps=2-3 --out "$work/run" >"$work/run.log" 2>&1 ||
  { tail -5 "$work/run.log"; echo "FAIL: the traced run failed"; exit 1; }
"$python" - "$work/run/trace.json" <<'PY'
import json, sys
from collections import Counter
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
assert names.get((0, 3)) == "storage transfers", names
storage = [e for e in events if e.get("cat") == "storage"]
steps = [e for e in events if e.get("cat") == "step"]
units = {e["args"]["unit"] for e in storage}
count = Counter((e["pid"], e["name"].split()[1]) for e in storage)
print(f"{len(storage)} storage spans over {len(units)} units and {len(steps)} step spans")
for e in storage:
    assert e["tid"] == 3 and e["name"].startswith(("nvme read ", "nvme write ")), e
    assert e["dur"] >= 0, e
# Two traced steps, two ranks: each unit read and written once per step on each rank. A step's
# last writes are waited in the next step, so the traced window holds between one and two
# steps' worth of writes.
for rank in (0, 1):
    assert count[(rank, "read")] == 2 * len(units), count
    assert len(units) <= count[(rank, "write")] <= 2 * len(units), count
print("PASS")
PY
