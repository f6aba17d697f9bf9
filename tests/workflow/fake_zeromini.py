#!/usr/bin/env python3
"""A stand-in for zeromini in the workflow unit tests: `run` writes a summary.json in zeromini's
format (src/modules/run_summary/summary_json.cpp) without training anything; `plan --format csv` prints the planner's
columns (memory per category, traffic by collective and within/across shard groups, from the same
model of the figures as `run`, so that measured equals planned); `sweep ...` (sweep.py reading
its sweep file) is handed to the real zeromini. Under mpiexec only rank 0 writes. Environment knobs for the tests:
  FAKE_ZEROMINI_REAL       the real zeromini executable, for `sweep` (required for it)
  FAKE_ZEROMINI_STEPS_RUN  steps recorded (default: train.steps), to mimic a run cut short
  FAKE_ZEROMINI_EXIT       exit status (default 0)
  FAKE_ZEROMINI_LOG        a file to append each command line to
  FAKE_ZEROMINI_PLAN_SKEW  bytes `plan` adds to its activations (a planner that disagrees)
  FAKE_ZEROMINI_TRAFFIC_NOISE  bytes `run` adds to its nonzero traffic figures (the rounding of a
                           mean in floating point)
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


def shard_group(sets, stage, ranks):
    """Ranks per shard group, as zeromini resolves zero.shard_size (src/core/shard_layout.cpp)."""
    size = sets.get("zero.shard_size", "0").strip('"')
    if stage == 0 or size == "0":
        return ranks
    if size == "node":
        return min(int(sets.get("zero.ranks_per_node", "0")) or ranks, ranks)
    return int(size)


def zeropp(sets):
    """zero.quantize_weights, zero.quantize_grads and zero.error_feedback as the overrides give
    them (the deck's: none, none, false)."""
    return tuple(sets.get(f"zero.{key}", default).strip('"') for key, default in
                 (("quantize_weights", "none"), ("quantize_grads", "none"),
                  ("error_feedback", "false")))


def figures(params, stage, ranks, group, recompute, quantized=("none", "none", "false")):
    """Memory per category and bytes per rank per step by collective (total, across groups) of
    a made-up but hybrid-shaped model: sharded states divided by the group, replicas all-reduced
    across groups, recomputation keeping fewer activations; ZeRO++ (zeropp()) quantizing the
    stage 3 gathers to a quarter and turning the reduce-scatter into an all-to-all of a quarter
    (int8) or an eighth (int4), error feedback adding a buffer."""
    shard = lambda first: group if stage >= first else 1  # noqa: E731
    memory = {"parameters": 4 * params // shard(3), "gradients": 4 * params // shard(2),
              "optimizer": 8 * params // shard(1),
              "activations": 400 if recompute == "blocks" else 1000,
              "comm_buffers": 8, "workspace": 100}
    memory["total"] = sum(memory.values())
    groups = ranks // group
    total = {"all_reduce": 0, "reduce_scatter": 0, "all_gather": 0, "broadcast": 0, "barrier": 0}
    inter = dict(total)
    if stage == 0:
        total["all_reduce"] = 4 * params * (ranks > 1)
    else:
        total["reduce_scatter"] = 4 * params * (group > 1)
        total["all_gather"] = 4 * params * (group > 1) * (2 if stage == 3 else 1)
        total["all_reduce"] = inter["all_reduce"] = 4 * params // group * (groups > 1)
    weights, grads, feedback = quantized
    if stage == 3 and weights == "int8":
        total["all_gather"] //= 4
    if stage > 0 and grads != "none":
        inter["all_to_all"] = 0
        total["all_to_all"] = total["reduce_scatter"] // (8 if grads == "int4" else 4)
        total["reduce_scatter"] = 0
        memory["comm_buffers"] += 16 + 16 * (feedback == "true")
        memory["total"] += 16 + 16 * (feedback == "true")
    return memory, total, inter


def plan(deck, sets, extra, params):
    """`plan --format csv`: the real planner's columns that the scripts read."""
    recompute = sets.get("model.recompute", "none").strip('"')
    skew = int(os.environ.get("FAKE_ZEROMINI_PLAN_SKEW", "0"))
    quantized = zeropp(sets)
    zeropp_columns = quantized != ("none", "none", "false")  # as the real planner: when set
    print("deck,precision,stage,ranks,params,padded_params,params_bytes,grads_bytes,"
          "optimizer_bytes,model_states_bytes,activations_bytes,comm_buffers_bytes,"
          "workspace_bytes,total_bytes,all_reduce_bytes,reduce_scatter_bytes,all_gather_bytes,"
          "shard_size,recompute,intra_group_bytes,inter_group_bytes" +
          (",all_to_all_bytes,quantize_weights,quantize_grads,error_feedback"
           if zeropp_columns else ""))
    for ranks in map(int, extra["ranks"].split(",")):
        for stage in range(4):
            group = shard_group(sets, stage, ranks)
            m, total, inter = figures(params, stage, ranks, group, recompute, quantized)
            m["activations"] += skew
            last = f",{total.get('all_to_all', 0)}," + ",".join(quantized) if zeropp_columns \
                else ""
            states = m["parameters"] + m["gradients"] + m["optimizer"]
            print(f"{deck},fp32,{stage},{ranks},{params},{params},{m['parameters']},"
                  f"{m['gradients']},{m['optimizer']},{states},{m['activations']},"
                  f"{m['comm_buffers']},{m['workspace']},{m['total'] + skew},"
                  f"{total['all_reduce']},{total['reduce_scatter']},{total['all_gather']},"
                  f"{group},{recompute},{sum(total.values()) - sum(inter.values())},"
                  f"{sum(inter.values())}{last}")
    return 0


def forward_sweep(argv):
    """`sweep ...`: replaced by the real zeromini, which reads sweep files for sweep.py."""
    real = os.environ.get("FAKE_ZEROMINI_REAL")
    if not real:
        print("fake zeromini: sweep: set FAKE_ZEROMINI_REAL to the real zeromini", file=sys.stderr)
        return 2
    os.execv(real, [real] + argv)


def stage_summary(stage, ranks, params, steps_run, micro_batch, sets):
    """One entry of summary.json's "stages", with figures() as what the stage measured."""
    group = shard_group(sets, stage, ranks)
    recompute = sets.get("model.recompute", "none").strip('"')
    memory, total, inter = figures(params, stage, ranks, group, recompute, zeropp(sets))
    noise = float(os.environ.get("FAKE_ZEROMINI_TRAFFIC_NOISE", "0"))
    for traffic in (total, inter):
        traffic.update({op: v + noise for op, v in traffic.items() if v})
    return {
        "stage": stage, "ranks": ranks, "params": params, "padded_params": params,
        "steps": steps_run, "stopped_non_finite": False,
        "tokens_per_rank_per_step": 16 * micro_batch,
        "tokens_per_second_per_rank": 1000.0 + 10 * stage - 50 * ranks,
        "final_loss": 4.5,
        "time_seconds": {"step": 0.03, "forward": 0.01, "backward": 0.015,
                         "comm_wait": 0.004 * (ranks > 1), "optimizer": 0.005},
        "memory_peak_bytes_max_over_ranks": memory,
        "bytes_per_rank_per_step": total,
        "shard_size": group,
        "bytes_per_rank_per_step_inter_group": inter,
        # As zeromini writes it without a peak (src/modules/run_summary/summary_json.cpp): MFU null, 1 GB/s per kind.
        "throughput": {"tflops_per_device": 1e-4, "tflops_total": 1e-4 * ranks,
                       "model_flops_per_step": 3e9 * ranks, "peak_tflops_per_device": None,
                       "mfu": None, "hfu": None,
                       "busbw_bytes_per_second": {op: (1e9 if v else None)
                                                  for op, v in total.items()}},
    }


def run(deck, sets, out, layers, dim, params):
    """`run`: rank 0 writes the summary.json of the stages asked for; nothing is trained."""
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
            "stages": [stage_summary(s, ranks, params, steps_run, micro_batch, sets)
                       for s in stages],
        }
        summary["figure_of_merit"] = {"name": "tokens per second per rank",
                                      "value": summary["stages"][-1]["tokens_per_second_per_rank"]}
        with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
    return int(os.environ.get("FAKE_ZEROMINI_EXIT", "0"))


def main(argv):
    if os.environ.get("FAKE_ZEROMINI_LOG"):
        with open(os.environ["FAKE_ZEROMINI_LOG"], "a", encoding="utf-8") as f:
            f.write(" ".join(argv) + "\n")
    if argv[:1] == ["sweep"]:
        return forward_sweep(argv)
    command, deck, sets, out, extra = parse(argv)
    layers = int(sets.get("model.layers", 2))
    dim = int(sets.get("model.dim", 32))
    params = layers * 12 * dim * dim + 97 * dim
    if command == "plan":
        return plan(deck, sets, extra, params)
    if command != "run":
        print(f"fake zeromini: unknown command {command}", file=sys.stderr)
        return 2
    return run(deck, sets, out, layers, dim, params)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
