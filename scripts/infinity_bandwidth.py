#!/usr/bin/env python3
"""ZeRO-Infinity's bandwidth analysis (the paper's section 4) from zeromini's own planner.

How much bandwidth a memory tier needs before the GPUs starve: for one model on one node, the
planner's step time with a tier at bandwidth B per device, against the same step with that tier
free (B = 1e6 GB/s), as an efficiency, for several micro-batch sizes (the arithmetic intensity a
transfer is hidden behind grows with the tokens a step computes). Three tiers, each priced by the
module that owns it:

  params+grads  zero.offload_optimizer and zero.offload_params = "host" at stage 3: each
                gather's parameter shard staged host -> device, each reduced gradient shard
                device -> host, over the machine's [host] link_bandwidth_gbs per device;
  optimizer     zero.offload_optimizer = "nvme": the fp32 master, Adam m and v read and written
                back every step, at the [nvme] read and write bandwidth per node / its devices;
  activations   model.checkpoints = "host" (with model.recompute = "blocks"): each block's output
                to the host after its forward and back before its recomputation, over the
                [host] link, each copy beside a block's compute; the model state on the device.

The host's AdamW rate is set far above any (1e6 G parameters/s), so that only the bandwidth
under study moves the step.

  scripts/infinity_bandwidth.py ZEROMINI DECK MACHINE OUT.md [--plot OUT.png] [--set KEY=VALUE]...
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import tempfile

BANDWIDTHS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]  # GB/s per device
FREE = 1e6
MICRO_BATCHES = [1, 4, 16]
TIERS = {
    "params+grads": ["zero.offload_optimizer=host", "zero.offload_params=host"],
    "optimizer": ["zero.offload_optimizer=nvme", "zero.offload_params=none"],
    "activations": ["model.recompute=blocks", "model.checkpoints=host",
                    "zero.offload_optimizer=none", "zero.offload_params=none"],
}


def set_key(text, table, key, value):
    """The machine file's text with `key` of [table] set to `value` (the key must be there)."""
    start = re.search(rf"^\[{re.escape(table)}\]\s*$", text, re.M)
    end = re.compile(r"^\[[A-Za-z_]+\]\s*$", re.M).search(text, start.end()) if start else None
    end = end.start() if end else len(text)
    line = re.compile(rf"^({re.escape(key)}\s*=\s*)([^\s#]+)", re.M)
    if not start or not line.search(text, start.end(), end):
        sys.exit(f"infinity_bandwidth: no {key} in [{table}] of the machine file")
    body = line.sub(lambda m: m.group(1) + repr(float(value)), text[start.end():end], count=1)
    return text[:start.end()] + body + text[end:]


def devices_per_node(text):
    return int(re.search(r"^devices_per_node\s*=\s*(\d+)", text, re.M).group(1))


def machine_with(text, tier, bandwidth, folder):
    """A copy of the machine with the tier at `bandwidth` GB/s per device, AdamW free."""
    text = set_key(text, "host", "adamw_gparams_per_s", FREE)
    if tier in ("params+grads", "activations"):
        text = set_key(text, "host", "link_bandwidth_gbs", bandwidth)
    else:
        node = bandwidth * devices_per_node(text)
        text = set_key(text, "nvme", "read_bandwidth_gbs", node)
        text = set_key(text, "nvme", "write_bandwidth_gbs", node)
    path = os.path.join(folder, f"{tier}-{bandwidth:g}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def step_seconds(zeromini, deck, machine, ranks, overrides):
    command = [zeromini, "plan", deck, "--machine", machine, "--ranks", str(ranks), "--stage", "3",
               "--format", "csv"]
    for value in overrides:
        command += ["--set", value]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    row = next(csv.DictReader(io.StringIO(out)))
    return float(row["step_overlapped_s"]), float(row["compute_s"]), row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("zeromini")
    parser.add_argument("deck")
    parser.add_argument("machine")
    parser.add_argument("out")
    parser.add_argument("--plot")
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args()
    with open(args.machine) as f:
        text = f.read()
    efficiency = {}  # (tier, micro_batch) -> [per bandwidth]
    params = None
    with tempfile.TemporaryDirectory() as folder:
        for tier, keys in TIERS.items():
            free_machine = machine_with(text, tier, FREE, folder)
            for mb in MICRO_BATCHES:
                overrides = args.overrides + keys + [f"train.micro_batch={mb}"]
                free, _, row = step_seconds(args.zeromini, args.deck, free_machine, args.ranks,
                                            overrides)
                params = params or int(row["params"])
                efficiency[tier, mb] = []
                for bandwidth in BANDWIDTHS:
                    machine = machine_with(text, tier, bandwidth, folder)
                    step, _, _ = step_seconds(args.zeromini, args.deck, machine, args.ranks,
                                              overrides)
                    efficiency[tier, mb].append(free / step)
    columns = [(tier, mb) for tier in TIERS for mb in MICRO_BATCHES]
    lines = ["| GB/s per device | " + " | ".join(f"{t}, mb {mb}" for t, mb in columns) + " |",
             "|---:|" + "---:|" * len(columns)]
    for i, bandwidth in enumerate(BANDWIDTHS):
        lines.append(f"| {bandwidth:g} | " +
                     " | ".join(f"{efficiency[c][i]:.3f}" for c in columns) + " |")
    table = "\n".join(lines)
    with open(args.out, "w") as f:
        f.write(f"Model: {params / 1e9:.2f} B parameters ({args.deck} "
                f"{' '.join(args.overrides)}), {args.ranks} ranks, stage 3, on "
                f"{os.path.basename(args.machine)}; efficiency = the step with the tier free / "
                "the step at that bandwidth (the planner's overlapped step).\n\n" + table + "\n")
    print(table)
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(TIERS), figsize=(14, 4), sharey=True)
        for ax, tier in zip(axes, TIERS):
            for mb in MICRO_BATCHES:
                ax.plot(BANDWIDTHS, efficiency[tier, mb], marker="o", label=f"micro-batch {mb}")
            ax.set_xscale("log")
            ax.set_title(tier)
            ax.set_xlabel("bandwidth per device (GB/s)")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("efficiency (step with the tier free / step)")
        axes[0].legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)


if __name__ == "__main__":
    main()
