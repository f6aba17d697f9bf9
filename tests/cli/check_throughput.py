#!/usr/bin/env python3
"""check_throughput.py OUT_DIR [--peak TFLOPS]: a run's throughput figures, read back from
results.h5 (h5py) and summary.json, are present and consistent with one another:
TFLOP/s x step time = FLOPs, MFU = TFLOP/s / peak (absent without a peak), and the manifest
names what ran. Exits non-zero naming the first figure that disagrees."""
import json
import math
import sys

import h5py


def close(a, b, what):
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0):
        sys.exit(f"{what}: {a} != {b}")


def text(value):
    """An HDF5 string attribute as str (h5py gives fixed-length strings as bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def check_stage(group, stage_json, ranks, peak):
    a = group.attrs
    t = stage_json["throughput"]
    for key in ("tokens_per_second", "step_seconds", "model_flops_per_step",
                "hardware_flops_per_step", "tflops_per_device", "tflops_total",
                "model_flops_per_token"):
        close(float(a[key]), t[key], f"{group.name} {key}: results.h5 vs summary.json")
    close(a["tflops_per_device"] * 1e12 * a["step_seconds"] * ranks, a["model_flops_per_step"],
          f"{group.name} TFLOP/s per device x step time x ranks vs model FLOPs per step")
    close(a["tflops_total"], a["tflops_per_device"] * ranks, f"{group.name} total vs per device")
    if a["hardware_flops_per_step"] < a["model_flops_per_step"]:
        sys.exit(f"{group.name}: hardware FLOPs below model FLOPs")
    if peak is None:
        if "mfu" in a or t["mfu"] is not None or t["peak_tflops_per_device"] is not None:
            sys.exit(f"{group.name}: MFU reported without a peak")
    else:
        close(a["peak_tflops_per_device"], peak, f"{group.name} peak")
        close(a["mfu"], a["tflops_per_device"] / peak, f"{group.name} MFU")
        close(t["mfu"], float(a["mfu"]), f"{group.name} MFU in summary.json")
        if "--peak-tflops" not in text(a["peak_source"]) and "peak_tflops" not in text(a["peak_source"]):
            sys.exit(f"{group.name}: peak_source {text(a['peak_source'])!r} names no source")


def main():
    out = sys.argv[1]
    peak = float(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--peak" else None
    summary = json.load(open(f"{out}/summary.json"))
    with h5py.File(f"{out}/results.h5", "r") as f:
        m = f["manifest"].attrs
        ranks = int(m["ranks"])
        for key in ("git_revision", "kokkos_version", "kokkos_backends", "mpi_library",
                    "nccl_version", "hdf5_version", "deck"):
            if not text(m[key]) or text(m[key]) != summary["manifest"][key]:
                sys.exit(f"manifest {key}: {m[key]!r} vs summary.json")
        if len(m["hostnames"]) != ranks or len(m["device_names"]) != ranks:
            sys.exit("manifest: one host and one device name per rank expected")
        for s in summary["stages"]:
            check_stage(f[f"stage_{s['stage']}"], s, ranks, peak)
    print(f"{out}: throughput figures consistent over {len(summary['stages'])} stage(s)")


main()
