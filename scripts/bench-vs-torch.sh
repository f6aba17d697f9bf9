#!/usr/bin/env bash
# One training step of zeromini beside the same step in PyTorch (CPU), one thread each, in one
# invocation; prints tokens/s of both and the ratio.
#   scripts/bench-vs-torch.sh [OUT.md]
# Configuration (both sides): GPT-2 style, L=4, C=256, NH=4, T=128, B=8, vocabulary 512, AdamW.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
out=${1:-/dev/stdout}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# Three rounds, each zeromini then PyTorch, so that both sample the same stretches of a machine
# whose speed drifts; the table gives the medians.
work=$(mktemp -d /tmp/zeromini-bench-step.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The rounds' JSON: zeromini-R.json and torch-R.json (R = 1, 2, 3) in $work.
tool alternation --rounds 3 --dir "$work" --suffix .json --keep-stderr \
  --label zeromini -- "$root/build/bin/zeromini-bench" --benchmark_filter='^TrainStep/stage/0/' \
    --benchmark_format=json \
  --label torch -- "$python" "$root/scripts/torch_train_step.py" --layers 4 --dim 256 --heads 4 \
    --seq 128 --batch 8 --vocab 512 --steps 20 --threads 1
tool bench_vs_torch "$work" "scripts/bench-vs-torch.sh $*" "$(revision)" >"$out"
