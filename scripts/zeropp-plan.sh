#!/usr/bin/env bash
# ZeRO++ at scale from the planner: inputs/zeropp-scale.toml (the 18B GPT of DeepSpeed's ZeRO++
# tutorial, stage 3, bf16) planned at 64-1,024 ranks with each of ZeRO++'s techniques alone and
# all three together, on the DGX-H100 and Frontier machine files, and on the ZeRO++ evaluation's
# cluster (DGX-2 V100 nodes, inputs/machines/dgx2-v100-32gb.toml) at the cross-node bandwidths of
# the ZeRO++ blog's figures (800, 400, 200 and 100 Gb/s per node: copies of that file with only
# network.inter_node_bandwidth_gbs changed, written to OUT_DIR/machines/). Each setting is planned
# at 1,024 and 2,048 tokens per rank (train.micro_batch = 1 and 2: the blog's "1K" and "2K").
# Writes to OUT_DIR (default results/zeropp/planner-scale/):
#   csv/MACHINE-mbB-COMBO.csv  the planner's own CSV (zeromini plan --format csv), one per run
#   runs.tsv                   machine label, machine file, micro_batch, combination, CSV, command
#   table.md                   step times, speed-ups over plain stage 3 and the bytes priced on
#                              the inter-node link, beside the ZeRO++ figures (zeropp_plan_table.py)
#
#   scripts/zeropp-plan.sh [OUT_DIR]
#   ZEROMINI_BIN=build/bin/zeromini RANKS=64,1024 MICRO_BATCHES="1" scripts/zeropp-plan.sh /tmp/zp
#
# The planner needs no MPI and takes well under a second per run. Needs /usr/bin/python3 (3.11+:
# tomllib), standard library only.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
out=${1:-$root/results/zeropp/planner-scale}
bin=${ZEROMINI_BIN:-$root/build/bin/zeromini}
deck=${DECK:-inputs/zeropp-scale.toml}
ranks=${RANKS:-64,128,256,512,1024}
paper_ranks=${PAPER_RANKS:-64,128,256,384,512,1024}
micro_batches=${MICRO_BATCHES:-1 2}
require_executable "$bin"
cd "$root"
mkdir -p "$out/csv" "$out/machines"

# The ZeRO++ cluster at each cross-node bandwidth of the blog's figures: Gb/s per node, shared by
# the node's 16 GPUs, in GB/s per GPU (1 GB = 1e9 bytes).
v100=inputs/machines/dgx2-v100-32gb.toml
for gbps in 800 400 200 100; do
  per_gpu=$(awk -v g="$gbps" 'BEGIN { printf "%.6g", g / 8 / 16 }')
  sed -e "s|^name = .*|name = \"DGX-2-V100-32GB, ${gbps} Gb/s per node\"|" \
    -e "s|^inter_node_bandwidth_gbs = .*|inter_node_bandwidth_gbs = ${per_gpu}  # ${gbps} Gb/s per node / 16 GPUs (written by scripts/zeropp-plan.sh)|" \
    "$v100" >"$out/machines/dgx2-v100-${gbps}g.toml"
  grep -q "^inter_node_bandwidth_gbs = ${per_gpu} " "$out/machines/dgx2-v100-${gbps}g.toml"
done

# label, machine file, rank counts
machines=(
  "dgx-h100 inputs/machines/dgx-h100.toml $ranks"
  "frontier inputs/machines/frontier.toml $ranks"
)
for gbps in 800 400 200 100; do
  machines+=("dgx2-v100-${gbps}g ${out#"$root"/}/machines/dgx2-v100-${gbps}g.toml $paper_ranks")
done

# combination and its --set overrides
combos=(none qwZ hpZ qgZ all)
declare -A sets=(
  [none]=""
  [qwZ]="zero.quantize_weights=int8"
  [hpZ]="zero.secondary_shard_size=node"
  [qgZ]="zero.quantize_grads=int4"
  [all]="zero.quantize_weights=int8 zero.secondary_shard_size=node zero.quantize_grads=int4"
)

printf 'machine\tmachine_file\tmicro_batch\tcombo\tcsv\tcommand\n' >"$out/runs.tsv"
for entry in "${machines[@]}"; do
  read -r label file machine_ranks <<<"$entry"
  for mb in $micro_batches; do
    for combo in "${combos[@]}"; do
      args=(plan "$deck" --ranks "$machine_ranks" --stage 3 --machine "$file" --format csv
        --set "train.micro_batch=$mb")
      for s in ${sets[$combo]}; do args+=(--set "$s"); done
      csv=csv/$label-mb$mb-$combo.csv
      "$bin" "${args[@]}" >"$out/$csv"
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$file" "$mb" "$combo" "$csv" \
        "zeromini ${args[*]}" >>"$out/runs.tsv"
    done
  done
done

commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
version=$("$bin" --version 2>/dev/null | head -n 1)
"$python" "$root/scripts/zeropp_plan_table.py" "$out" --commit "$commit" --version "$version"
echo "zeropp-plan: wrote $out/table.md"
