#!/usr/bin/env python3
"""The ZeRO paper's Table 2 (the largest model per model-parallel degree, 64-way data
parallelism, 32 GB V100s, mixed-precision Adam K = 12) from `zeromini plan`, beside the
published figures (inputs/paper/published.toml, [[max_model_size]]).

    scripts/reproduce_table2.py ZEROMINI OUT_DIR

Writes OUT_DIR/theory.csv (the theoretical columns: model states only), OUT_DIR/largest-mp<N>.csv
(`plan --largest` at each MP degree: the measured columns' counterpart) and OUT_DIR/table2.md.
Standard library only (Python >= 3.11 for tomllib).
"""
import csv
import io
import math
import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER = os.path.join(ROOT, "inputs", "paper")
# Relative to the repository, where zeromini runs: the CSVs name them so.
DECK = os.path.join("inputs", "paper", "zero-table2-d4096.toml")
MACHINE = os.path.join("inputs", "machines", "dgx2-v100-32gb.toml")
DATA_PARALLEL = 64
THEORY = [(0, "theory_baseline", "baseline (DP)"), (1, "theory_p_os", "P_os"),
          (2, "theory_p_os_g", "P_os+g"), (3, "theory_p_os_g_p", "P_os+g+p")]


def run(zeromini, *args):
    out = subprocess.run([os.path.abspath(zeromini), "plan", *args], check=True,
                         capture_output=True, text=True, cwd=ROOT)
    return out.stdout


def parse_size(text):
    """'7.6B' -> (7.6e9, 1e8): the value and the unit of its last printed digit."""
    scale = {"B": 1e9, "T": 1e12}[text[-1]]
    digits = text[:-1]
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits) * scale, scale * 10.0 ** -decimals


def agrees(ours, printed):
    """Whether `ours`, rounded to the printed figure's last digit, is the printed figure."""
    value, unit = parse_size(printed)
    return math.isclose(round(ours / unit) * unit, value, rel_tol=1e-9)


def theory_rows(zeromini, device_bytes, mps):
    """Per MP and stage: the planner's model-state bytes per rank and the largest Psi they allow."""
    rows = []
    for mp in mps:
        ranks = DATA_PARALLEL * mp
        text = run(zeromini, DECK, "--ranks", str(ranks), "--tp", str(mp), "--stage", "all",
                   "--format", "csv")
        for r in csv.DictReader(io.StringIO(text)):
            psi, states = int(r["params"]), float(r["model_states_bytes"])
            rows.append({"mp": mp, "gpus": ranks, "stage": int(r["stage"]), "deck_params": psi,
                         "model_states_bytes": f"{states:.0f}",
                         "bytes_per_param": f"{states / psi:.6f}",
                         "max_params": f"{device_bytes * psi / states:.0f}"})
    return rows


def largest(zeromini, out_dir, mp):
    """`plan --largest` at 64 x MP devices, tp = MP; the raw CSV is kept beside the table."""
    text = run(zeromini, DECK, "--largest", "--machine", MACHINE, "--ranks",
               str(DATA_PARALLEL * mp), "--tp", str(mp), "--stage", "all", "--format", "csv")
    with open(os.path.join(out_dir, f"largest-mp{mp}.csv"), "w") as f:
        f.write(text)
    return {(int(r["stage"]), r["recompute"]): r for r in csv.DictReader(io.StringIO(text))
            if r["shard"] == "all"}


def billions(params):
    return f"{float(params) / 1e9:.1f}B"


def print_theory(published, theory):
    print("## Theoretical columns: model states only (parameters, gradients, optimizer state)")
    print()
    print("Planned = the device memory x Psi / (the planner's model-state bytes per GPU) for the "
          "deck's shape at tp = MP and 64 x MP GPUs (`theory.csv`). 'ok': the planned figure, "
          "rounded to the paper's last printed digit, is the paper's.")
    print()
    print("| MP | GPUs | " + " | ".join(f"{name} paper | planned | diff" for _, _, name in THEORY)
          + " |")
    print("|---:|---:|" + "---:|---:|---:|" * len(THEORY))
    for row in published["max_model_size"]:
        cells = []
        for stage, key, _ in THEORY:
            ours = float(next(t["max_params"] for t in theory
                              if t["mp"] == row["mp"] and t["stage"] == stage))
            paper, _ = parse_size(row[key])
            mark = "ok" if agrees(ours, row[key]) else f"{(ours / paper - 1) * 100:+.2f} %"
            cells.append(f"{row[key]} | {ours / 1e9:.2f}B | {mark}")
        print(f"| {row['mp']} | {row['gpus']} | " + " | ".join(cells) + " |")


def print_measured(published, cells):
    print()
    print("## Measured columns: the planner's whole memory per GPU")
    print()
    print("The paper's measured largest model (baseline = no ZeRO, ZeRO-OS = P_os, stage 1) beside "
          "`plan --largest`: the deepest model of the deck's width (hidden 4096, 32 heads, "
          "sequence 1024, one sequence per GPU) whose per-GPU memory (model states, activations, "
          "communication buffers, workspace) fits 32e9 bytes, with activations recomputed "
          "(`blocks`: activation checkpointing, which the paper's Sec. 6.1 discusses for these "
          "models) and without (`none`). Shard all; layers in brackets (one layer = 0.2B "
          "parameters).")
    print()
    print("| MP | GPUs | baseline paper | planned blocks | planned none | "
          "ZeRO-OS paper | planned blocks | planned none |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in published["max_model_size"]:
        at = cells[row["mp"]]
        text = []
        for stage in (0, 1):
            text.append(row["measured_baseline" if stage == 0 else "measured_p_os"])
            for recompute in ("blocks", "none"):
                c = at[(stage, recompute)]
                text.append(f"{billions(c['params'])} ({c['layers']})")
        print(f"| {row['mp']} | {row['gpus']} | " + " | ".join(text) + " |")


def main(argv):
    zeromini, out_dir = argv[1], argv[2]
    published = tomllib.load(open(os.path.join(PAPER, "published.toml"), "rb"))
    machine = tomllib.load(open(os.path.join(ROOT, MACHINE), "rb"))
    device_bytes = machine["machine"]["device_memory_gib"] * 2.0 ** 30
    mps = [row["mp"] for row in published["max_model_size"]]
    theory = theory_rows(zeromini, device_bytes, mps)
    with open(os.path.join(out_dir, "theory.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(theory[0]))
        writer.writeheader()
        writer.writerows(theory)
    cells = {mp: largest(zeromini, out_dir, mp) for mp in mps}
    with open(os.path.join(out_dir, "table2.md"), "w") as f:
        sys.stdout = f
        print("# ZeRO paper, Table 2, beside `zeromini plan`")
        print()
        print(f"Deck `inputs/paper/zero-table2-d4096.toml`, machine "
              f"`inputs/machines/dgx2-v100-32gb.toml` ({device_bytes:.4g} bytes per GPU), "
              "`--precision` from the deck (bf16: 2 + 2 + 12 bytes per parameter, K = 12), "
              f"{DATA_PARALLEL}-way data parallelism x MP-way tensor parallelism (`--tp`). "
              "Paper figures: `inputs/paper/published.toml`. Differences: src/modules/tensor_parallel/README.md and results/paper-table2/README.md.")
        print()
        print_theory(published, theory)
        print_measured(published, cells)
        sys.stdout = sys.__stdout__
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
