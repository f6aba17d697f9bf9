#!/usr/bin/env python3
"""Makes table.md of scripts/zeropp-plan.sh from the planner's CSVs listed in OUT_DIR/runs.tsv.

Per machine and tokens per rank: each combination's predicted step time and its speed-up over
plain stage 3 (overlapped and serial step time), the bytes per rank the planner prices on the
inter-node link, and, on the ZeRO++ cluster at 384 GPUs, the speed-ups the ZeRO++ blog reports.
Standard library only (Python 3.11+ for tomllib)."""
import argparse
import csv
import os
import tomllib

COMBOS = ["none", "qwZ", "hpZ", "qgZ", "all"]
SEQ = 1024  # inputs/zeropp-scale.toml's model.seq_len

# The ZeRO++ blog (microsoft.com/en-us/research/blog/deepspeed-zero-a-leap-in-speed-for-llm-and-
# chat-model-training-with-4x-less-communication/; the same figures in microsoft/DeepSpeed
# blogs/zeropp/, images eval1.png, eval2.png, eval3.png): TFLOPs per GPU of ZeRO-3 ("Baseline")
# and ZeRO++ (all three techniques), 18B model, 384 V100 GPUs, read off the bar labels (rounded to
# integers by the figures). Keyed by (machine label, micro_batch).
PAPER = {
    ("dgx2-v100-400g", 1): (25, 35, "Fig. 6 (eval1.png), IB: 4, 1K tokens"),
    ("dgx2-v100-400g", 2): (40, 53, "Fig. 6 (eval1.png), IB: 4, 2K tokens"),
    ("dgx2-v100-100g", 1): (14, 31, "Fig. 7 (eval2.png), IB: 1, 1K tokens; annotated 2.21x"),
    ("dgx2-v100-100g", 2): (26, 46, "Fig. 7 (eval2.png), IB: 1, 2K tokens; annotated 1.77x"),
    ("dgx2-v100-800g", 2): (47, 54, "Fig. 8 (eval3.png), 800 Gbps, 2K tokens"),
    ("dgx2-v100-200g", 2): (37, 50, "Fig. 8 (eval3.png), 200 Gbps, 2K tokens"),
}
PAPER_RANKS = 384


def read_runs(out):
    runs = {}
    with open(os.path.join(out, "runs.tsv"), newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            with open(os.path.join(out, r["csv"]), newline="") as g:
                rows = {int(p["ranks"]): p for p in csv.DictReader(g)}
            runs[(r["machine"], int(r["micro_batch"]), r["combo"])] = (r, rows)
    return runs


def machine_info(path):
    with open(path, "rb") as f:
        m = tomllib.load(f)
    return m["machine"], m["network"]


def cross_node_bytes(row, per_node):
    """Bytes per rank that the planner prices on the inter-node link: every collective across the
    groups, and the groups' own when a group's ring leaves a node (planner.cpp, crosses_nodes),
    but for qgZ's hop within the node where its exchange in a group over whole nodes takes two
    (zero/quantized_gradients.hpp): of the group's all-to-all bytes, (k-1)/k S stay in the node
    and (N-1)/G S cross (S the contribution, G = N k the group's ranks, k per node)."""
    if int(row["ranks"]) <= per_node:
        return 0.0
    group = int(row["shard_size"])
    inside = group <= per_node and per_node % group == 0
    if inside:
        return float(row["inter_group_bytes"])
    intra = float(row["intra_group_bytes"])
    if row.get("quantize_grads", "none") != "none" and per_node > 1 and group % per_node == 0:
        nodes, k = group // per_node, per_node
        within, across = (k - 1) / k, (nodes - 1) / group
        # Every all-to-all of these decks is the group's (no hpZ beside a group over nodes).
        intra -= float(row["all_to_all_bytes"]) * within / (within + across)
    return float(row["inter_group_bytes"]) + intra


def fmt_cell(row, base):
    ovl, ser = float(row["step_overlapped_s"]), float(row["step_serial_s"])
    cell = f"{ovl:.3f}"
    if base is not None:
        cell += f" ({float(base['step_overlapped_s']) / ovl:.2f}x / "
        cell += f"{float(base['step_serial_s']) / ser:.2f}x)"
    return cell + ("" if row["fits"] == "yes" else " **no fit**")


def machine_section(runs, label, mb, lines):
    first = runs[(label, mb, "none")][0]
    mach, net = machine_info(first["machine_file"])
    per_node = int(mach["devices_per_node"])
    lines += [f"### {mach['name']}, {mb * SEQ} tokens per rank", "",
              f"`{first['machine_file']}`: {per_node} devices per node, "
              f"{net['intra_node_bandwidth_gbs']} GB/s in a node, "
              f"{net['inter_node_bandwidth_gbs']} GB/s across nodes per device.", "",
              "Step time, s (overlapped), and speed-up over none: overlapped / serial step time.",
              "", "| ranks | " + " | ".join(COMBOS) + " |",
              "|---:|" + "---:|" * len(COMBOS)]
    ranks = sorted(runs[(label, mb, "none")][1])
    for n in ranks:
        base = runs[(label, mb, "none")][1][n]
        cells = [fmt_cell(runs[(label, mb, c)][1][n], None if c == "none" else base)
                 for c in COMBOS]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", "GB per rank and step priced on the inter-node link (all / within the hpZ group"
              " when the group's ring leaves a node), and compute vs. communication of `all`:", "",
              "| ranks | " + " | ".join(COMBOS) + " | all: compute s | all: quant s | all: comm s |",
              "|---:|" + "---:|" * (len(COMBOS) + 3)]
    for n in ranks:
        cells = [f"{cross_node_bytes(runs[(label, mb, c)][1][n], per_node) / 1e9:.2f}"
                 for c in COMBOS]
        a = runs[(label, mb, "all")][1][n]
        q = f"{float(a['step_serial_s']) - float(a['compute_s']) - float(a['comm_s']):.3f}"
        lines.append(f"| {n} | " + " | ".join(cells) +
                     f" | {float(a['compute_s']):.3f} | {q} | {float(a['comm_s']):.3f} |")
    lines.append("")


def paper_section(runs, lines):
    lines += ["## Beside the ZeRO++ blog's figures (18B, 384 V100 GPUs)", "",
              "TFLOPs per GPU: the blog's bar labels (integers); the planner's predicted model"
              " TFLOP/s per device at the overlapped step time (CSV `tflops_per_device`). Speed-up"
              " = ZeRO++ (all three) over ZeRO-3.", "",
              "| cross-node bandwidth per node | tokens per GPU | source | paper ZeRO-3 | paper"
              " ZeRO++ | paper speed-up | planner ZeRO-3 | planner all three | planner speed-up"
              " ovl / ser |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for (label, mb), (zero3, zeropp, source) in PAPER.items():
        if (label, mb, "none") not in runs:
            continue
        base = runs[(label, mb, "none")][1].get(PAPER_RANKS)
        allc = runs[(label, mb, "all")][1].get(PAPER_RANKS)
        if base is None or allc is None:
            continue
        ovl = float(base["step_overlapped_s"]) / float(allc["step_overlapped_s"])
        ser = float(base["step_serial_s"]) / float(allc["step_serial_s"])
        gbps = label.split("-")[-1].rstrip("g")
        lines.append(f"| {gbps} Gb/s | {mb * SEQ} | {source} | {zero3} | {zeropp} | "
                     f"{zeropp / zero3:.2f}x | {float(base['tflops_per_device']):.1f} | "
                     f"{float(allc['tflops_per_device']):.1f} | {ovl:.2f}x / {ser:.2f}x |")
    lines.append("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--version", default="")
    args = ap.parse_args()
    runs = read_runs(args.out)
    lines = ["# ZeRO++ at scale: the planner's predictions", "",
             f"zeromini commit {args.commit} ({args.version}); made by `scripts/zeropp-plan.sh`"
             " (each run's command in `runs.tsv`). Deck `inputs/zeropp-scale.toml` (18.4B"
             " parameters, bf16, stage 3). Combinations: none; qwZ = `zero.quantize_weights=int8`;"
             " hpZ = `zero.secondary_shard_size=node`; qgZ = `zero.quantize_grads=int4`; all ="
             " the three together.", ""]
    paper_section(runs, lines)
    labels = list(dict.fromkeys(k[0] for k in runs))
    mbs = sorted({k[1] for k in runs})
    lines += ["## Per machine", ""]
    for label in labels:
        for mb in mbs:
            if (label, mb, "none") in runs:
                machine_section(runs, label, mb, lines)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
