#!/usr/bin/env python3
"""check_throughput.py OUT_DIR [--peak TFLOPS] [--summary] [--manifest]: a run's throughput
figures, read back from results.h5 (h5py), are present and consistent with one another: TFLOP/s x
step time = FLOPs, MFU = TFLOP/s / peak (absent without a peak), and the manifest (the provenance
module's /manifest, where the file has one) names what ran. --summary: and summary.json (the
run_summary module's) holds the same figures and manifest. --manifest: the file must have one.
Exits non-zero naming the first figure that disagrees."""
import argparse
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
    close(a["tflops_per_device"] * 1e12 * a["step_seconds"] * ranks, a["model_flops_per_step"],
          f"{group.name} TFLOP/s per device x step time x ranks vs model FLOPs per step")
    close(a["tflops_total"], a["tflops_per_device"] * ranks, f"{group.name} total vs per device")
    if a["hardware_flops_per_step"] < a["model_flops_per_step"]:
        sys.exit(f"{group.name}: hardware FLOPs below model FLOPs")
    if peak is None:
        if "mfu" in a:
            sys.exit(f"{group.name}: MFU reported without a peak")
    else:
        close(a["peak_tflops_per_device"], peak, f"{group.name} peak")
        close(a["mfu"], a["tflops_per_device"] / peak, f"{group.name} MFU")
        if "--peak-tflops" not in text(a["peak_source"]) and "peak_tflops" not in text(a["peak_source"]):
            sys.exit(f"{group.name}: peak_source {text(a['peak_source'])!r} names no source")
    if stage_json is None:
        return
    t = stage_json["throughput"]
    for key in ("tokens_per_second", "step_seconds", "model_flops_per_step",
                "hardware_flops_per_step", "tflops_per_device", "tflops_total",
                "model_flops_per_token"):
        close(float(a[key]), t[key], f"{group.name} {key}: results.h5 vs summary.json")
    if peak is None:
        # (absent where the build has no mfu module, null without a peak)
        if t.get("mfu") is not None or t.get("peak_tflops_per_device") is not None:
            sys.exit(f"{group.name}: MFU reported without a peak in summary.json")
    else:
        close(t["mfu"], float(a["mfu"]), f"{group.name} MFU in summary.json")


def check_manifest(m, ranks, summary):
    if int(m["ranks"]) != ranks:
        sys.exit(f"manifest ranks: {int(m['ranks'])} vs world_size {ranks}")
    for key in ("git_revision", "kokkos_version", "kokkos_backends", "mpi_library",
                "nccl_version", "hdf5_version", "deck"):
        if not text(m[key]):
            sys.exit(f"manifest {key}: empty")
        if summary is not None and text(m[key]) != summary["manifest"][key]:
            sys.exit(f"manifest {key}: {m[key]!r} vs summary.json")
    if len(m["hostnames"]) != ranks or len(m["device_names"]) != ranks:
        sys.exit("manifest: one host and one device name per rank expected")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--peak", type=float)
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--manifest", action="store_true")
    args = parser.parse_args()
    out = args.out
    summary = json.load(open(f"{out}/summary.json")) if args.summary else None
    with h5py.File(f"{out}/results.h5", "r") as f:
        ranks = int(f.attrs["world_size"])
        if len(f.attrs["hostnames"]) != ranks:
            sys.exit("results.h5: one host name per rank expected")
        if args.manifest and "manifest" not in f:
            sys.exit("results.h5 has no /manifest")
        if "manifest" in f:
            check_manifest(f["manifest"].attrs, ranks, summary)
        if summary is not None:
            stages = [(s["stage"], s) for s in summary["stages"]]
        else:
            stages = sorted((int(name[len("stage_"):]), None) for name in f
                            if name.startswith("stage_"))
        for stage, stage_json in stages:
            check_stage(f[f"stage_{stage}"], stage_json, ranks, args.peak)
    print(f"{out}: throughput figures consistent over {len(stages)} stage(s)")


main()
