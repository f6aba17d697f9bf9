#!/usr/bin/env python3
"""check_figures.py OUT_DIR: a run's exposure and bus-bandwidth figures, read back from
results.h5 (h5py) and summary.json, are present and agree: step_times' comm_exposed and
comm_in_flight columns (exposed never above in flight) are summary.json's per-rank lists,
overlap_efficiency is the same in both, and busbw = bus bytes / seconds in flight, rank 0's in
summary.json. Exits non-zero naming the first figure that disagrees."""
import json
import math
import sys

import h5py
import numpy as np


def close(a, b, what):
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0):
        sys.exit(f"{what}: {a} != {b}")


def names(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def check_stage(group, stage_json, ranks):
    times = group["step_times"]
    columns = names(times.attrs["columns"])
    if columns[-2:] != ["comm_exposed", "comm_in_flight"]:
        sys.exit(f"{group.name}: step_times columns {columns}")
    exposed = np.array(times)[:, :, columns.index("comm_exposed")]
    in_flight = np.array(times)[:, :, columns.index("comm_in_flight")]
    if not np.all(exposed <= in_flight * (1 + 1e-9)):
        sys.exit(f"{group.name}: exposed communication above the communication in flight")
    exposure = stage_json["comm_exposure"]
    for r in range(ranks):
        for figure, values in (("exposed_seconds_by_rank", exposed),
                               ("in_flight_seconds_by_rank", in_flight)):
            if [float(v) for v in values[:, r]] != exposure[figure][r]:
                sys.exit(f"{group.name}: rank {r}'s {figure} in summary.json differ from "
                         "step_times")
    efficiency = float(group.attrs["overlap_efficiency"])
    if exposure["overlap_efficiency"] is None:
        if not math.isnan(efficiency):
            sys.exit(f"{group.name}: overlap_efficiency {efficiency}, null in summary.json")
    else:
        close(efficiency, exposure["overlap_efficiency"], f"{group.name} overlap_efficiency")
        if not 0 <= efficiency <= 1:
            sys.exit(f"{group.name}: overlap_efficiency {efficiency}")
    busbw, sent, seconds = (group[n][()] for n in
                            ("comm_busbw", "comm_bus_bytes_per_step", "comm_in_flight_seconds"))
    ops = names(group["comm_busbw"].attrs["columns"])
    if busbw.shape != (ranks, len(ops)):
        sys.exit(f"{group.name}: comm_busbw {busbw.shape}")
    for r in range(ranks):
        for op in range(len(ops)):
            if sent[r, op] > 0 and seconds[r, op] > 0:
                close(busbw[r, op], sent[r, op] / seconds[r, op], f"{group.name} busbw[{r},{op}]")
    t = stage_json["throughput"]
    for op, name in enumerate(ops):
        mine = t["busbw_bytes_per_second"][name]
        if (mine is None) != (not math.isfinite(busbw[0, op])):
            sys.exit(f"{group.name}: {name}'s busbw {mine} in summary.json, {busbw[0, op]} in "
                     "results.h5")
        if mine is not None:
            close(mine, busbw[0, op], f"{group.name} {name} busbw in summary.json")
        close(t["bus_bytes_per_step"][name], sent[0, op], f"{group.name} {name} bus bytes")
    if ranks > 1 and not any(math.isfinite(x) for x in busbw[0]):
        sys.exit(f"{group.name}: no bus bandwidth at {ranks} ranks")


def main():
    out = sys.argv[1]
    summary = json.load(open(f"{out}/summary.json"))
    with h5py.File(f"{out}/results.h5", "r") as f:
        ranks = int(f.attrs["world_size"])
        for s in summary["stages"]:
            check_stage(f[f"stage_{s['stage']}"], s, ranks)
    print(f"{out}: exposure figures consistent over {len(summary['stages'])} stage(s)")


main()
