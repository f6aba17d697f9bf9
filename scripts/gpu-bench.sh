#!/usr/bin/env bash
# GPU benchmark: GPT-2 124M (batch 8 x 1024 tokens), one rank, beside the same training step in
# PyTorch in the same invocation. PyTorch runs first (eager fp32, TF32 and bf16, each with SDPA
# attention, and torch.compile bf16: scripts/torch_gpu_sdpa.py around the shared reference), so
# a call cut short keeps the baseline; then zeromini at stages 0 and 3 in fp32, tf32 and bf16, a
# bf16 run with the reference (GEMM) attention beside the fused one, a bf16 stage 3 run with
# ZeRO-Offload (optimizer state, AdamW and the parameter shard on the host: its step time beside
# bf16 stage 3's, and the host-device copies it made), a traced bf16 stage 3 run, and last a bf16
# stage 3 run with the optimizer state on NVMe (swap files in the script's temporary directory).
# Both programs: GPU_BENCH_STEPS (default 10) timed steps after warm-up (zeromini
# GPU_BENCH_WARMUP, default 3; PyTorch 5), the median step (the upper middle of an even count, as
# the reference takes it). The table is rewritten after every run.
#
#   scripts/gpu-bench.sh [ZEROMINI] [TORCH_REF]
#     ZEROMINI   default build-cuda/bin/zeromini (cmake --preset cuda)
#     TORCH_REF  default ../shared/bench/torch_gpt_ref.py; skipped when PyTorch is not importable
#   GPU_BENCH_OUT keeps every log, table.md and the traced run's trace.json there (the device kit's
#   check.sh perf step runs this).
# Goals: bf16 >= 1.1x torch.compile bf16 (first milestone: llm.c's 0.8x); tf32 >= 1.2x PyTorch TF32
# with SDPA; stage 3 at most 1.15x stage 0's step time at one rank.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
# A failed run leaves n/a in the table; the next run still goes.
set +e
zeromini=${1:-$root/build-cuda/bin/zeromini}
torch_ref=${2:-$root/../shared/bench/torch_gpt_ref.py}
steps=${GPU_BENCH_STEPS:-10}
warmup=${GPU_BENCH_WARMUP:-3}
work=$(mktemp -d /tmp/zeromini-gpu-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
keep=${GPU_BENCH_OUT:-$work/keep}
mkdir -p "$keep"
[ -x "$zeromini" ] || { echo "gpu-bench: no zeromini at $zeromini (build with cmake --preset cuda)"; exit 1; }
"$zeromini" --version | head -3
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true

declare -A zm_tokens torch_tokens
ratio() {  # ratio A B -> "x.yz" or "n/a"
  [[ -n ${1:-} && -n ${2:-} ]] && python3 -c "print(f'{float($1) / float($2):.2f}')" || echo "n/a"
}
write_table() {
  {
    echo "| zeromini | stage | tokens/s | vs PyTorch | PyTorch tokens/s | ratio | goal |"
    echo "|---|---:|---:|---|---:|---:|---|"
    local stage
    for stage in 0 3; do
      echo "| fp32 | $stage | ${zm_tokens[fp32-$stage]:-n/a} | eager fp32, SDPA | ${torch_tokens[fp32]:-n/a} | $(ratio "${zm_tokens[fp32-$stage]:-}" "${torch_tokens[fp32]:-}") | |"
      echo "| tf32 | $stage | ${zm_tokens[tf32-$stage]:-n/a} | eager TF32, SDPA | ${torch_tokens[tf32]:-n/a} | $(ratio "${zm_tokens[tf32-$stage]:-}" "${torch_tokens[tf32]:-}") | >= 1.2 |"
      echo "| bf16 | $stage | ${zm_tokens[bf16-$stage]:-n/a} | torch.compile bf16 | ${torch_tokens[bf16_compile]:-n/a} | $(ratio "${zm_tokens[bf16-$stage]:-}" "${torch_tokens[bf16_compile]:-}") | >= 1.1 (milestone 0.8) |"
    done
    echo "| bf16, reference attention | 0 | ${zm_tokens[bf16ref-0]:-n/a} | eager bf16, SDPA | ${torch_tokens[bf16_sdpa]:-n/a} | $(ratio "${zm_tokens[bf16ref-0]:-}" "${torch_tokens[bf16_sdpa]:-}") | |"
    echo
    echo "Stage 3 over stage 0 at one rank (tokens/s ratio; goal >= 0.87, i.e. step time <= 1.15x):" \
      "fp32 $(ratio "${zm_tokens[fp32-3]:-}" "${zm_tokens[fp32-0]:-}")," \
      "tf32 $(ratio "${zm_tokens[tf32-3]:-}" "${zm_tokens[tf32-0]:-}")," \
      "bf16 $(ratio "${zm_tokens[bf16-3]:-}" "${zm_tokens[bf16-0]:-}")"
    echo "ZeRO-Offload, bf16 stage 3 with zero.offload_optimizer and zero.offload_params = \"host\"" \
      "over bf16 stage 3 (tokens/s ratio): $(ratio "${zm_tokens[bf16offload-3]:-}" "${zm_tokens[bf16-3]:-}");" \
      "copies per step: ${offload_copies:-n/a}"
    echo "ZeRO-Infinity, bf16 stage 3 with zero.offload_optimizer = \"nvme\" over bf16 stage 3" \
      "(tokens/s ratio): $(ratio "${zm_tokens[bf16nvme-3]:-}" "${zm_tokens[bf16-3]:-}");" \
      "${nvme_line:-NVMe: n/a} (${nvme_engine:-engine n/a})"
  } >"$keep/table.md"
}

# median_tokens LOG: tokens/s of the median step among the timed ones (after the warm-up).
median_tokens() {
  tool step_log "$1" "$warmup"
}

if [[ -f $torch_ref ]] && python3 -c "import torch" 2>/dev/null; then
  python3 "$root/scripts/torch_gpu_sdpa.py" "$torch_ref" --layers 12 --heads 12 --dim 768 \
    --seq 1024 --batch 8 --vocab 50304 --steps "$steps" \
    --modes fp32,tf32,bf16_sdpa,bf16_compile >"$keep/torch.jsonl" 2>"$keep/torch.err"
  while read -r line; do
    mode=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r.get("mode",""), r.get("tokens_per_s",""))' "$line" 2>/dev/null) || continue
    set -- $mode
    [[ -n ${2:-} ]] && torch_tokens[$1]=${2%.*} && echo "pytorch $1: ${2%.*} tokens/s"
  done <"$keep/torch.jsonl"
else
  echo "gpu-bench: PyTorch or $torch_ref not available; no side-by-side figures"
fi
write_table

# zm_bench NAME ARGS...: one timed zeromini run of the deck; its median tokens/s in zm_tokens.
zm_bench() {
  local name=$1 log=$keep/zeromini-$1.log status
  shift
  "$zeromini" run "$root/inputs/gpt2-124m.toml" --set train.micro_batch=8 \
    --set train.steps=$((warmup + steps)) --set output.log_every=1 --set comm.timeout_s=60 \
    "$@" --out "$work/run-$name" >"$log" 2>&1
  status=$?
  zm_tokens[$name]=
  if ((status == 0)); then
    zm_tokens[$name]=$(median_tokens "$log")
    echo "zeromini $name: ${zm_tokens[$name]} tokens/s (median of $steps steps)"
  else
    echo "zeromini $name: not run (exit $status): $(grep -m1 -i error "$log")"
  fi
  write_table
}
for precision in bf16 tf32 fp32; do
  for stage in 0 3; do
    zm_bench "$precision-$stage" --set train.precision=$precision --set zero.stage=$stage
  done
done
zm_bench bf16ref-0 --set train.precision=bf16 --set zero.stage=0 --set model.attention=reference
# ZeRO-Offload: the closing table's line of host-device copies per step goes into the table.
zm_bench bf16offload-3 --set train.precision=bf16 --set zero.stage=3 \
  --set zero.offload_optimizer=host --set zero.offload_params=host
offload_copies=$(grep -m1 -o 'offload: .* per rank per step' "$keep/zeromini-bf16offload-3.log" 2>/dev/null)
write_table

# The timeline of a few bf16 stage 3 steps, apart from the timed runs.
"$zeromini" run "$root/inputs/gpt2-124m.toml" --set train.precision=bf16 --set zero.stage=3 \
  --set train.steps=4 --set train.micro_batch=8 --set output.trace=true --set comm.timeout_s=60 \
  --out "$work/traced" >"$keep/zeromini-traced.log" 2>&1 &&
  echo "zeromini bf16 stage 3: trace.json of steps 2-3 written" ||
  echo "zeromini bf16 stage 3 traced run: failed (exit $?)"
[[ -f $work/traced/trace.json ]] && cp "$work/traced/trace.json" "$keep/trace.json"

# ZeRO-Infinity, last (its step moves the whole optimizer state through the disk; a call cut short
# keeps the rest): the optimizer state in swap files under $work, beside bf16 stage 3; the closing
# table's NVMe line goes into the table.
zm_bench bf16nvme-3 --set train.precision=bf16 --set zero.stage=3 \
  --set zero.offload_optimizer=nvme --set zero.nvme_dir="$work"
nvme_line=$(grep -m1 -o 'NVMe: .* per rank per step' "$keep/zeromini-bf16nvme-3.log" 2>/dev/null)
nvme_engine=$(grep -m1 -o 'per rank, through .*' "$keep/zeromini-bf16nvme-3.log" 2>/dev/null)
write_table
echo
cat "$keep/table.md"
