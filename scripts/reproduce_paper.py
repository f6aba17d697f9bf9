#!/usr/bin/env python3
"""Prints, for the ZeRO paper's decks (inputs/paper/), the planner's figures in the paper's
layout beside the published ones (inputs/paper/published.toml) with the relative difference.

    scripts/reproduce_paper.py [ZEROMINI]      (default build/bin/zeromini)

Standard library only (Python >= 3.11 for tomllib).
"""
import csv
import io
import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER = os.path.join(ROOT, "inputs", "paper")
STAGE_NAMES = {0: "baseline DP", 1: "P_os", 2: "P_os+g", 3: "P_os+g+p"}


def plan(zeromini, deck, ranks, precision="mixed"):
    out = subprocess.run([zeromini, "plan", os.path.join(PAPER, deck), "--ranks",
                          ",".join(str(r) for r in ranks), "--stage", "all", "--precision",
                          precision, "--format", "csv"], check=True, capture_output=True, text=True)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    return {(int(r["stage"]), int(r["ranks"])): r for r in rows}


def rel(ours, theirs):
    return f"{(ours - theirs) / theirs * 100:+.2f} %"


def print_introduction(source):
    """The title, the paper and the memory model the figures assume."""
    print("# ZeRO paper reproduction with `zeromini plan`")
    print()
    print(f"Paper: {source['paper']}, {source['url']} ({source['version']}). Published figures and "
          "where each was read: `inputs/paper/published.toml` and `inputs/paper/README.md`.")
    print()
    print("Memory model: `--precision mixed` (bf16 parameters and gradients, fp32 master, "
          "momentum and variance: 2 + 2 + 12 bytes per parameter), the paper's K = 12. "
          "GB = 1e9 bytes. The planner's figures are per-device *model states* (parameters + "
          "gradients + optimizer state) of the decks' GPT-2-style models, whose shapes for "
          "Table 1 are ours (the paper gives only the parameter count Psi), with zeromini's "
          "vocabulary and partition padding included.")


def print_table1(zeromini, published):
    """Table 1: model states per device by DP degree and stage, planned against published."""
    memory = published["memory"]
    dps = sorted({m["dp"] for m in memory})
    for model in published["table1_model"]:
        deck = model["deck"]
        planned = plan(zeromini, deck, dps)
        psi = int(planned[(1, 1)]["padded_params"])
        print()
        print(f"## Table 1: {model['model']} model (deck `inputs/paper/{deck}`, "
              f"{model['deck_layers']} layers x {model['deck_dim']}; Psi' = {psi:,}, "
              f"paper: {model['model']})")
        print()
        print("| DP | " + " | ".join(f"{STAGE_NAMES[s]} planned | paper | diff" for s in (1, 2, 3))
              + " |")
        print("|---:|" + "---:|---:|---:|" * 3)
        for dp in dps:
            cells = []
            for stage in (1, 2, 3):
                ours = float(planned[(stage, dp)]["model_states_bytes"]) / 1e9
                paper = next(m for m in memory if m["deck"] == deck and m["dp"] == dp
                             and m["stage"] == stage)
                bold = "**" if paper.get("fits_32gb_v100") else ""
                cells.append(f"{ours:,.2f} | {bold}{paper['gb']:g}{bold} | {rel(ours, paper['gb'])}")
            print(f"| {dp} | " + " | ".join(cells) + " |")
        base = float(planned[(0, 1)]["model_states_bytes"]) / 1e9
        print()
        print(f"Stage 0 (no ZeRO) at any DP degree: planned {base:,.2f} GB, paper "
              f"{model['baseline_gb']:g} GB ({rel(base, model['baseline_gb'])}). Bold: the paper's "
              "combinations that fit a 32 GB V100.")


def print_table4(zeromini, published):
    """Table 4: the throughput study's model sizes, as zeromini counts their parameters."""
    print()
    print("## Table 4: configurations of the throughput study (Figures 2-4)")
    print()
    print("The paper prints layers and hidden sizes with a size label; zeromini computes the "
          "parameter count of each shape (vocabulary 50257 and sequence 1024 are our choices). "
          "The paper's runs also used Megatron model parallelism, at MP degrees in appendix "
          "tables that could not be read, so only the sizes are compared. Model states per device at stage 2 (P_os+g, the "
          "paper's ZeRO-100B) on the paper's 400 GPUs as pure data parallelism are shown for "
          "scale.")
    print()
    print("| deck | figure | paper label | layers | hidden | Psi (zeromini) | P_os+g at DP 400, GB |")
    print("|---|---|---|---:|---:|---:|---:|")
    for m in published["model"]:
        planned = plan(zeromini, m["deck"], [400])
        psi = int(planned[(2, 400)]["params"])
        states = float(planned[(2, 400)]["model_states_bytes"]) / 1e9
        print(f"| `{m['deck']}` | {m['figure']} | {m['label']} | {m['layers']} | {m['hidden']} | "
              f"{psi / 1e9:.2f}B | {states:.2f} |")


def main(argv):
    zeromini = argv[1] if len(argv) > 1 else os.path.join(ROOT, "build", "bin", "zeromini")
    published = tomllib.load(open(os.path.join(PAPER, "published.toml"), "rb"))
    print_introduction(published["source"])
    print_table1(zeromini, published)
    print_table4(zeromini, published)
    print()
    print("Table 2 (largest model per MP degree) is reproduced with tensor parallelism in "
          "results/paper-table2/ (scripts/reproduce-table2.sh). Not reproduced: Figures 2-8 need "
          "the appendix's per-run MP degrees and batch sizes, which could not be read (see "
          "inputs/paper/README.md).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
