#!/usr/bin/env python3
"""The PyTorch GPU training-step reference with SDPA attention in every precision.

    torch_gpu_sdpa.py TORCH_GPT_REF [--steps N] [--warmup N] [--modes fp32,tf32,...] [...]

TORCH_GPT_REF is shared/bench/torch_gpt_ref.py (the device kit carries it as
bench/torch_gpt_ref.py). Its fp32 and TF32 modes build the T x T attention matrix by hand and only
its bf16 modes call torch's scaled_dot_product_attention; zeromini's fused attention is compared
with PyTorch at its best in each precision, so this runs the same reference, model, optimizer and
timing (median of the timed steps after warm-up), with SDPA in every mode. Prints what the
reference prints: a header line, then one JSON line per mode.
"""
import argparse
import importlib.util
import json
import sys


def load_reference(path):
    spec = importlib.util.spec_from_file_location("torch_gpt_ref", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    ref = load_reference(argv[1])
    base = ref.GPT

    class GPTWithSDPA(base):  # the reference's model, its attention always through SDPA
        def __init__(self, vocab, seq, layers, heads, dim, flash):
            super().__init__(vocab, seq, layers, heads, dim, True)

    ref.GPT = GPTWithSDPA  # run() looks the class up in its module when it builds the model
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=50304)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--modes", default="fp32,tf32,bf16_sdpa,bf16_compile")
    args = p.parse_args(argv[2:])
    torch = ref.torch
    print(torch.__version__, torch.cuda.get_device_name(0), "(SDPA in every mode)", flush=True)
    for mode in args.modes.split(","):
        try:
            result = ref.run(mode, args)
            result["attention"] = "sdpa"
        except Exception as error:  # one mode failing (torch.compile, say) keeps the others
            result = dict(mode=mode, error=repr(error)[:300])
        print(json.dumps(result), flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
