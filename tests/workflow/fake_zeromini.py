#!/usr/bin/env python3
"""A stand-in for zeromini in the workflow unit tests: `run` writes a summary.json in zeromini's
format (src/io/summary.cpp) without training anything; `plan --format csv` prints the planner's
columns; `sweep ...` (sweep.py reading its sweep file) is handed to the real zeromini. Under
mpiexec only rank 0 writes. Environment knobs for the tests:
  FAKE_ZEROMINI_REAL       the real zeromini executable, for `sweep` (required for it)
  FAKE_ZEROMINI_STEPS_RUN  steps recorded (default: train.steps), to mimic a run cut short
  FAKE_ZEROMINI_EXIT       exit status (default 0)
  FAKE_ZEROMINI_LOG        a file to append each command line to
"""

import json
import os
import sys


def parse(argv):
    command, deck, sets, out, extra = argv[0], None, {}, None, {}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--set":
            key, _, value = argv[i + 1].partition("=")
            sets[key] = value
            i += 2
        elif a == "--out":
            out = argv[i + 1]
            i += 2
        elif a.startswith("--"):
            extra[a[2:]] = argv[i + 1]
            i += 2
        else:
            deck = a
            i += 1
    return command, deck, sets, out, extra


def main(argv):
    if os.environ.get("FAKE_ZEROMINI_LOG"):
        with open(os.environ["FAKE_ZEROMINI_LOG"], "a", encoding="utf-8") as f:
            f.write(" ".join(argv) + "\n")
    if argv[:1] == ["sweep"]:
        real = os.environ.get("FAKE_ZEROMINI_REAL")
        if not real:
            print("fake zeromini: sweep: set FAKE_ZEROMINI_REAL to the real zeromini",
                  file=sys.stderr)
            return 2
        os.execv(real, [real] + argv)
    command, deck, sets, out, extra = parse(argv)
    layers = int(sets.get("model.layers", 2))
    dim = int(sets.get("model.dim", 32))
    params = layers * 12 * dim * dim + 97 * dim
    if command == "plan":
        print("deck,precision,stage,ranks,params,padded_params,params_bytes,grads_bytes,"
              "optimizer_bytes,model_states_bytes")
        for ranks in map(int, extra["ranks"].split(",")):
            for stage in range(4):
                p = 4 * params / (ranks if stage >= 3 else 1)
                g = 4 * params / (ranks if stage >= 2 else 1)
                o = 8 * params / (ranks if stage >= 1 else 1)
                print(f"{deck},fp32,{stage},{ranks},{params},{params},{p:.0f},{g:.0f},{o:.0f},"
                      f"{p + g + o:.0f}")
        return 0
    if command != "run":
        print(f"fake zeromini: unknown command {command}", file=sys.stderr)
        return 2
    rank = int(os.environ.get("PMI_RANK", os.environ.get("SLURM_PROCID", "0")))
    ranks = int(os.environ.get("PMI_SIZE", os.environ.get("SLURM_NTASKS", "1")))
    steps = int(sets.get("train.steps", 5))
    steps_run = int(os.environ.get("FAKE_ZEROMINI_STEPS_RUN", steps))
    stage = sets.get("zero.stage", "0").strip('"')
    stages = [0, 1, 2, 3] if stage == "all" else [int(stage)]
    micro_batch = int(sets.get("train.micro_batch", 2))
    out = out or "zeromini-out/fake"
    if rank == 0:
        os.makedirs(out, exist_ok=True)
        summary = {
            "deck": deck,
            "zeromini_revision": "fake",
            "model": {"layers": layers, "heads": 4, "dim": dim, "vocab": 97, "seq_len": 16},
            "micro_batch": micro_batch,
            "grad_accum": 1,
            "stages": [],
        }
        for s in stages:
            shard = lambda first: ranks if s >= first else 1  # noqa: E731
            summary["stages"].append({
                "stage": s, "ranks": ranks, "params": params, "padded_params": params,
                "steps": steps_run, "stopped_non_finite": False,
                "tokens_per_rank_per_step": 16 * micro_batch,
                "tokens_per_second_per_rank": 1000.0 + 10 * s - 50 * ranks,
                "final_loss": 4.5,
                "time_seconds": {"step": 0.03, "forward": 0.01, "backward": 0.015,
                                 "comm_wait": 0.004 * (ranks > 1), "optimizer": 0.005},
                "memory_peak_bytes_max_over_ranks": {
                    "parameters": 4 * params // shard(3), "gradients": 4 * params // shard(2),
                    "optimizer": 8 * params // shard(1), "activations": 1000,
                    "comm_buffers": 8, "workspace": 100, "total": 16 * params + 1108},
                "bytes_per_rank_per_step": {"all_reduce": 4.0 * params * (s == 0) * (ranks > 1),
                                            "reduce_scatter": 0, "all_gather": 0,
                                            "broadcast": 0, "barrier": 0},
            })
        summary["figure_of_merit"] = {"name": "tokens per second per rank",
                                      "value": summary["stages"][-1]["tokens_per_second_per_rank"]}
        with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
    return int(os.environ.get("FAKE_ZEROMINI_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
