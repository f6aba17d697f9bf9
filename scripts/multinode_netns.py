#!/usr/bin/env python3
"""The fit and the report of scripts/multinode-netns.sh (see there).

    multinode_netns.py fit DIR RATE HOST_MACHINE          machine file on stdout
    multinode_netns.py report WORK OUT --command C --revision R --rates RATE... --points NAME...

fit reads DIR/bench-intra.json, DIR/bench-inter.json (zeromini-bench all_gather, JSON),
DIR/compute/summary.json and DIR/compute-plan.csv. report reads WORK/RATE/NAME-{5,25}/summary.json,
NAME-{5,25}.link (bytes each node's link carried) and NAME-plan.csv, and writes OUT/table.md and
OUT/predicted-vs-measured.png.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import re
import sys

from zeromini_tools.plotting import pyplot, save

RANKS, PER_NODE = 4, 2
KINDS = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast"]


def bench_points(path):
    """(bytes S, seconds t) of the median of each all_gather size."""
    data = json.load(open(path))
    out = []
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        scale = {"us": 1e-6, "ms": 1e-3, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        out.append((float(b["bytes"]), b["real_time"] * scale, int(b["ranks"])))
    return sorted(out)


def fit_ring(points):
    """alpha (per hop) and the ring's bandwidth B from t = (N-1) alpha + (N-1)/N S / B, by least
    squares on the relative error: small messages fix alpha, large ones B (unweighted, the
    largest sizes would set both)."""
    n = points[0][2]
    rows = [(1.0 / t, (n - 1) / n * s / t) for s, t, _ in points]  # [c, x] / t . [c0, 1/B] = 1
    a11 = sum(u * u for u, _ in rows)
    a12 = sum(u * v for u, v in rows)
    a22 = sum(v * v for _, v in rows)
    b1, b2 = sum(u for u, _ in rows), sum(v for _, v in rows)
    det = a11 * a22 - a12 * a12
    intercept = (b1 * a22 - b2 * a12) / det
    inverse_bw = (a11 * b2 - a12 * b1) / det
    # The planner needs a positive latency: a fit below a microsecond is given one.
    return max(intercept / (n - 1), 1e-6), 1.0 / inverse_bw


def read_plan(path):
    return next(csv.DictReader(open(path)))


def host_value(path, key):
    m = re.search(rf"^{key}\s*=\s*([0-9.eE+-]+)", open(path).read(), re.M)
    return float(m.group(1))


def fit(args):
    d = args.dir
    intra_alpha, intra_bw = fit_ring(bench_points(os.path.join(d, "bench-intra.json")))
    inter_alpha, inter_ring_bw = fit_ring(bench_points(os.path.join(d, "bench-inter.json")))
    stage = json.load(open(os.path.join(d, "compute", "summary.json")))["stages"][0]
    t = stage["time_seconds"]
    busy = t["step"] - t.get("comm_wait", 0.0)
    plan = read_plan(os.path.join(d, "compute-plan.csv"))
    host_rate = host_value(args.host, "sustained_tflops_fp32") * 1e12
    flops = float(plan["compute_s"]) * host_rate  # hardware FLOPs per rank and step
    sustained = flops / busy
    mem_bw = host_value(args.host, "memory_bandwidth_gbs")
    per_device = inter_ring_bw / PER_NODE
    print(f"""# Fitted by scripts/multinode-netns.sh --rate {args.rate} (scripts/multinode_netns.py fit):
# two network-namespace "nodes" of 2 ranks on one {platform.node()} host, {os.cpu_count()} CPUs, the
# link of each node shaped to {args.rate} (tbf, both ways). Not a machine to plan for: the cluster
# the measurements of results/multinode-netns/ ran on, for comparing them with the planner.
[machine]
name = "netns-{args.rate}"
description = "2 netns nodes x 2 ranks on one {os.cpu_count()}-CPU host, links shaped to {args.rate}"
devices_per_node = 2
device_memory_gib = 5.0             # a quarter of this host's memory, rounded down (our choice)

[compute]
# The hardware FLOPs per rank and step of the deck at stage 0, 4 ranks ({flops:.4g}, plan), over
# the measured step time less its exposed waits ({busy * 1e3:.2f} ms) of a 4-rank run on one node.
sustained_tflops_fp32 = {sustained / 1e12:.5f}
sustained_tflops_mixed = {sustained / 1e12:.5f}  # ASSUMED equal to fp32 (no bf16 run)
memory_bandwidth_gbs = {mem_bw}  # this host's (inputs/machines/this-host.toml)

[network]
# all_gather of 1 KiB..16 MiB, t = (N-1) alpha + (N-1)/N S / B fitted by least squares of the
# relative error:
# within a node 2 ranks of one node; between nodes 2 nodes x 2 ranks, whose ring B the planner
# takes as k = 2 ranks per node x the per-device rate.
intra_node_bandwidth_gbs = {intra_bw / 1e9:.5f}
intra_node_latency_us = {intra_alpha * 1e6:.2f}
inter_node_bandwidth_gbs = {per_device / 1e9:.5f}  # ring B {inter_ring_bw / 1e9:.5f} GB/s / 2
inter_node_latency_us = {inter_alpha * 1e6:.2f}""")


def read_point(work, rate, name):
    out = {}
    for steps in (5, 25):
        s = json.load(open(os.path.join(work, rate, f"{name}-{steps}", "summary.json")))
        out[steps] = s
        out[f"link{steps}"] = [int(v) for v in open(os.path.join(work, rate, f"{name}-{steps}.link")).read().split()]
    stage = out[25]["stages"][0]
    measured = {
        "step_s": stage["time_seconds"]["step"],
        "nodes": out[25]["nodes"],
        "bytes": sum(stage["bytes_per_rank_per_step"].get(k, 0) for k in KINDS),
        "cross": sum(stage["bytes_per_rank_per_step_cross_node"].get(k, 0) for k in KINDS),
        # The link's bytes of 20 steps (25 less 5: start-up and the end cancel), per rank.
        "wire": [(b - a) / 20 / PER_NODE for a, b in zip(out["link5"], out["link25"])],
    }
    plan = read_plan(os.path.join(work, rate, f"{name}-plan.csv"))
    planned = {
        "bytes": sum(float(plan.get(f"{k}_bytes") or 0) for k in KINDS),
        "cross": float(plan["cross_node_bytes"]),
        "serial_s": float(plan["step_serial_s"]),
        "overlapped_s": float(plan["step_overlapped_s"]),
        "compute_s": float(plan["compute_s"]),
        "comm_s": float(plan["comm_s"]),
    }
    return measured, planned


def report(args):
    rows = []
    for rate in args.rates:
        for name in args.points:
            m, p = read_point(args.work, rate, name)
            rows.append((rate, name, m, p))
    lines = [
        "# Two nodes in network namespaces, shaped links: measured against the planner",
        "",
        f"- command: `{args.command}` (zeromini {args.revision}, "
        f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC)",
        "- deck: `inputs/multinode-netns.toml`; 2 nodes x 2 ranks (scripts/netns-cluster.sh), "
        "MPICH over TCP between the nodes, shared memory within",
        f"- host: {platform.node()}, {os.cpu_count()} CPUs; every rank 1 thread",
        "- machine files: `netns-RATE.toml` here, fitted by the same command (how: in each file)",
        "- measured step: the run's mean step time over 25 steps (summary.json); bytes: the run's "
        "counters per rank and step; wire: the bytes each node's link carried in steps 6-25 (the "
        "25-step run less the 5-step one), per rank and step, TCP/IP headers included",
        "- predicted: `zeromini plan` with the fitted machine file; serial = compute + "
        "communication, overlapped = the larger of the two",
        "",
        "| rate | point | nodes | bytes measured | planned | cross-node measured | planned | "
        "wire node 1 / node 2 | step ms measured | serial | overlapped | serial / measured |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rate, name, m, p in rows:
        ratio = p["serial_s"] / m["step_s"]
        lines.append(
            f"| {rate} | {name} | {m['nodes']} | {m['bytes']:,.0f} | {p['bytes']:,.0f} | "
            f"{m['cross']:,.0f} | {p['cross']:,.0f} | {m['wire'][0]:,.0f} / {m['wire'][1]:,.0f} | "
            f"{m['step_s'] * 1e3:.1f} | {p['serial_s'] * 1e3:.1f} | {p['overlapped_s'] * 1e3:.1f} | "
            f"**{ratio:.2f}** |")
    equal = all(abs(m["bytes"] - p["bytes"]) < 0.5 and abs(m["cross"] - p["cross"]) < 0.5
                for _, _, m, p in rows)
    within = [abs(p["serial_s"] / m["step_s"] - 1) <= 0.25 for _, _, m, p in rows]
    lines += [
        "",
        f"- bytes measured == planned (total and cross-node, every point): **{'yes' if equal else 'NO'}**",
        f"- serial prediction within 25 % of measured: **{sum(within)} of {len(within)}** points",
    ]
    os.makedirs(args.out, exist_ok=True)
    open(os.path.join(args.out, "table.md"), "w").write("\n".join(lines) + "\n")
    plot(rows, os.path.join(args.out, "predicted-vs-measured.png"))
    print("\n".join(lines))


def plot(rows, path):
    plt = pyplot("multinode_netns")
    fig, ax = plt.subplots(figsize=(6, 5))
    top = max(max(m["step_s"], p["serial_s"]) for _, _, m, p in rows) * 1e3 * 1.15
    ax.plot([0, top], [0, top], "k-", lw=0.8, label="predicted = measured")
    ax.fill_between([0, top], [0, top * 0.75], [0, top * 1.25], color="0.9", label="±25 %")
    for rate in sorted({r for r, _, _, _ in rows}):
        pts = [(m["step_s"] * 1e3, p["serial_s"] * 1e3, n) for r, n, m, p in rows if r == rate]
        ax.scatter([x for x, _, _ in pts], [y for _, y, _ in pts], label=f"{rate} (serial)")
        for x, y, n in pts:
            ax.annotate(n, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("measured step time, ms")
    ax.set_ylabel("predicted step time, ms")
    ax.set_title("2 netns nodes x 2 ranks, shaped links")
    ax.legend(loc="upper left", fontsize=8)
    save(plt, fig, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit")
    f.add_argument("dir")
    f.add_argument("rate")
    f.add_argument("host")
    r = sub.add_parser("report")
    r.add_argument("work")
    r.add_argument("out")
    r.add_argument("--command", required=True)
    r.add_argument("--revision", required=True)
    r.add_argument("--rates", nargs="+", required=True)
    r.add_argument("--points", nargs="+", required=True)
    args = parser.parse_args()
    fit(args) if args.cmd == "fit" else report(args)


if __name__ == "__main__":
    sys.exit(main())
