#!/usr/bin/env bash
# GPU benchmark: GPT-2 124M (batch 8 x 1024 tokens), one rank, stages 0 and 3, for fp32, tf32 and
# bf16, beside the same training step in PyTorch (eager fp32, TF32, bf16 SDPA, torch.compile bf16)
# in the same invocation; prints tokens/s and the ratios the goals are stated in.
#
#   scripts/gpu-bench.sh [ZEROMINI] [TORCH_REF]
#     ZEROMINI   default build-cuda/bin/zeromini (cmake --preset cuda)
#     TORCH_REF  default ../shared/bench/torch_gpt_ref.py; skipped when PyTorch is not importable
#   GPU_BENCH_STEPS (default 20) steps per run; GPU_BENCH_OUT keeps every log and the trace.json
#   of a short traced bf16 stage 3 run there (the device kit's check.sh perf step runs this).
# Goals: bf16 >= 1.1x PyTorch torch.compile bf16; tf32 >= 1.2x PyTorch TF32 eager.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zeromini=${1:-$root/build-cuda/bin/zeromini}
torch_ref=${2:-$root/../shared/bench/torch_gpt_ref.py}
steps=${GPU_BENCH_STEPS:-20}
work=$(mktemp -d /tmp/zeromini-gpu-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
keep=${GPU_BENCH_OUT:-}
[ -x "$zeromini" ] || { echo "gpu-bench: no zeromini at $zeromini (build with cmake --preset cuda)"; exit 1; }
"$zeromini" --version | head -3
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true

declare -A zm_tokens
for precision in fp32 tf32 bf16; do
  for stage in 0 3; do
    log=$work/zeromini-$precision-s$stage.log
    "$zeromini" run "$root/inputs/gpt2-124m.toml" --set train.precision=$precision \
      --set zero.stage=$stage --set train.steps=$steps --set train.micro_batch=8 \
      --set output.log_every=5 --out "$work/run-$precision-$stage" >"$log" 2>&1
    status=$?
    if [[ $status -eq 0 ]]; then
      tokens=$(sed -n 's/^Figure of merit: \([0-9,]*\) tokens\/s per rank.*/\1/p' "$log" | tr -d ,)
      zm_tokens[$precision-$stage]=$tokens
      echo "zeromini $precision stage $stage: $tokens tokens/s"
    else
      zm_tokens[$precision-$stage]=
      echo "zeromini $precision stage $stage: not run (exit $status): $(grep -m1 -i error "$log")"
    fi
  done
done

# The timeline of a few bf16 stage 3 steps, apart from the timed runs.
if [[ -n $keep ]]; then
  "$zeromini" run "$root/inputs/gpt2-124m.toml" --set train.precision=bf16 --set zero.stage=3 \
    --set train.steps=4 --set train.micro_batch=8 --set output.trace=true \
    --out "$work/traced" >"$work/zeromini-traced.log" 2>&1 &&
    echo "zeromini bf16 stage 3: trace.json of steps 2-3 written" ||
    echo "zeromini bf16 stage 3 traced run: failed (exit $?)"
  mkdir -p "$keep"
  cp "$work"/*.log "$keep/" 2>/dev/null
  [[ -f $work/traced/trace.json ]] && cp "$work/traced/trace.json" "$keep/trace.json"
fi

declare -A torch_tokens
if [[ -f $torch_ref ]] && python3 -c "import torch" 2>/dev/null; then
  python3 "$torch_ref" --layers 12 --heads 12 --dim 768 --seq 1024 --batch 8 --vocab 50304 \
    --steps "$steps" --modes fp32,tf32,bf16_sdpa,bf16_compile >"$work/torch.jsonl" 2>"$work/torch.err"
  [[ -n $keep ]] && cp "$work/torch.jsonl" "$work/torch.err" "$keep/"
  while read -r line; do
    mode=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r.get("mode",""), r.get("tokens_per_s",""))' "$line" 2>/dev/null) || continue
    set -- $mode
    [[ -n ${2:-} ]] && torch_tokens[$1]=$2 && echo "pytorch $1: $2 tokens/s"
  done <"$work/torch.jsonl"
else
  echo "gpu-bench: PyTorch or $torch_ref not available; no side-by-side figures"
fi

ratio() {  # ratio A B -> "x.yz" or "n/a"
  [[ -n ${1:-} && -n ${2:-} ]] && python3 -c "print(f'{float($1) / float($2):.2f}')" || echo "n/a"
}
echo
echo "| zeromini | stage | tokens/s | vs PyTorch | ratio | goal |"
echo "|---|---:|---:|---|---:|---|"
for stage in 0 3; do
  echo "| fp32 | $stage | ${zm_tokens[fp32-$stage]:-n/a} | eager fp32 | $(ratio "${zm_tokens[fp32-$stage]:-}" "${torch_tokens[fp32]:-}") | |"
  echo "| tf32 | $stage | ${zm_tokens[tf32-$stage]:-n/a} | eager TF32 | $(ratio "${zm_tokens[tf32-$stage]:-}" "${torch_tokens[tf32]:-}") | >= 1.2 |"
  echo "| bf16 | $stage | ${zm_tokens[bf16-$stage]:-n/a} | torch.compile bf16 | $(ratio "${zm_tokens[bf16-$stage]:-}" "${torch_tokens[bf16_compile]:-}") | >= 1.1 |"
done
