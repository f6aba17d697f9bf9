"""The markdown table of scripts/bench-vs-torch.sh: one training step of zeromini beside PyTorch,
from the rounds' JSON in WORK (zeromini-R.json of zeromini-bench, torch-R.json of
torch_train_step.py, R = 1, 2, 3).

    python3 -m zeromini_tools.bench_vs_torch WORK COMMAND REVISION
"""

import json
import statistics
import sys

from zeromini_tools.alternation import joined, per_round, table_head, table_row

ROUNDS = (1, 2, 3)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv):
    work, command, revision = argv
    zm_runs = [load(f"{work}/zeromini-{r}.json") for r in ROUNDS]
    torch_runs = [load(f"{work}/torch-{r}.json") for r in ROUNDS]
    zm_ms = statistics.median(run["benchmarks"][0]["real_time"] for run in zm_runs)  # milliseconds
    zm_tokens = statistics.median(run["benchmarks"][0]["tokens_per_second"] for run in zm_runs)
    torch_ms = statistics.median(r["step_seconds"] for r in torch_runs) * 1e3
    torch_tokens = statistics.median(r["tokens_per_second"] for r in torch_runs)
    ratios = per_round([run["benchmarks"][0]["tokens_per_second"] for run in zm_runs],
                       [run["tokens_per_second"] for run in torch_runs])
    ctx = zm_runs[0]["context"]
    print("# One training step, zeromini vs PyTorch (CPU, one thread each)")
    print()
    print(f"- command: `{command}` (zeromini {revision})")
    print(f"- date: {ctx.get('date', '')}; host: {ctx.get('host_name', '')}, "
          f"{ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz")
    print("- model: GPT-2 style, 4 layers, dim 256, 4 heads, sequence 128, batch 8, vocabulary "
          "512; forward, backward, gradient clipping and AdamW")
    print(f"- zeromini: Kokkos Serial + Kokkos Kernels (OpenBLAS), mean of 20 steps per round; "
          f"PyTorch {torch_runs[0]['torch']}, median of 20 steps per round; 3 alternating rounds, "
          "the table gives the medians; OPENBLAS/OMP/MKL threads = 1")
    print()
    print("\n".join(table_head([("program", "l"), ("step ms", "r"), ("tokens/s", "r")])))
    print(table_row(["zeromini", f"{zm_ms:.1f}", f"{zm_tokens:.0f}"]))
    print(table_row(["PyTorch", f"{torch_ms:.1f}", f"{torch_tokens:.0f}"]))
    print()
    print(f"**ratio zeromini / PyTorch (tokens/s): {zm_tokens / torch_tokens:.2f}x** "
          f"(per round: {joined(ratios, '{:.2f}x')})")


if __name__ == "__main__":
    main(sys.argv[1:])
