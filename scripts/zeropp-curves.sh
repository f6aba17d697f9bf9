#!/usr/bin/env bash
# ZeRO++ convergence and cost at 4 ranks: inputs/zeropp.toml (stage 3, hpZ in groups of 2) run
# for 200 steps with every combination of quantized weights (qwZ) and gradients (qgZ), with and
# without error feedback where it applies, in alternating rounds (the combinations one after
# another, ROUNDS times) so that a slow spell of the machine hits them alike. Writes to OUT_DIR
# (default results/zeropp/):
#   table.md          final loss (mean of the last 10 steps) and its gap to "none", step time
#                     ratio to "none", bytes per rank and step per collective kind (the runs'
#                     own counters), within and across the hpZ groups
#   loss.png          the loss curves, and each one's relative gap to "none" per step
#   losses.csv        the loss per step of every combination (round 1)
#   runs/NAME.json    round 1's summary.json of each combination
#
#   scripts/zeropp-curves.sh [OUT_DIR]
#   ZEROMINI_BIN=build/bin/zeromini RANKS=4 STEPS=200 ROUNDS=3 COMBOS="none g-int8" scripts/zeropp-curves.sh
#
# The losses of every round must be bitwise equal (the runs are deterministic); the script fails
# otherwise. The binary must be built from a commit (not "-dirty"; ALLOW_DIRTY=1 for a trial), so
# that the committed numbers can be made again. Needs /usr/bin/python3 with h5py and matplotlib
# (Debian: python3-h5py, python3-matplotlib).
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
out=${1:-$root/results/zeropp}
bin=${ZEROMINI_BIN:-$root/build/bin/zeromini}
ranks=${RANKS:-4}
steps=${STEPS:-200}
rounds=${ROUNDS:-3}
deck=inputs/zeropp.toml
require_executable "$bin"
require_clean_build "$bin"

# name and the --set overrides of each combination (error feedback applies to gradients only)
declare -A sets=(
  [none]=""
  [w-int8]="zero.quantize_weights=int8"
  [g-int8]="zero.quantize_grads=int8"
  [g-int8-ef]="zero.quantize_grads=int8 zero.error_feedback=true"
  [g-int4]="zero.quantize_grads=int4"
  [g-int4-ef]="zero.quantize_grads=int4 zero.error_feedback=true"
  [w-int8+g-int4]="zero.quantize_weights=int8 zero.quantize_grads=int4"
  [w-int8+g-int4-ef]="zero.quantize_weights=int8 zero.quantize_grads=int4 zero.error_feedback=true"
  # not in the default set: int4 with finer blocks and with stochastic rounding (COMBOS=...)
  [g-int4-b256]="zero.quantize_grads=int4 zero.quantize_block=256"
  [g-int4-ef-b256]="zero.quantize_grads=int4 zero.error_feedback=true zero.quantize_block=256"
  [g-int4-sr]="zero.quantize_grads=int4 zero.grad_rounding=stochastic"
  [g-int4-ef-sr]="zero.quantize_grads=int4 zero.error_feedback=true zero.grad_rounding=stochastic"
)
read -r -a combos <<<"${COMBOS:-none w-int8 g-int8 g-int8-ef g-int4 g-int4-ef w-int8+g-int4 w-int8+g-int4-ef}"
[ "${combos[0]}" = none ] || { echo "zeropp-curves: COMBOS must start with none" >&2; exit 2; }

# The revision before the outputs are rewritten (rewriting them makes the tree dirty).
rev=$(revision)
work=$(mktemp -d /tmp/zeromini-zeropp.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# Every round: the combinations in order; the runs and their logs are NAME-R in $work. A failed
# run ends the script (exit 1) with the last lines of its log on stderr.
runs=()
for name in "${combos[@]}"; do
  [ -n "${sets[$name]+x}" ] || { echo "zeropp-curves: unknown combination $name" >&2; exit 2; }
  args=(--set train.steps="$steps")
  for s in ${sets[$name]}; do args+=(--set "$s"); done
  runs+=(--label "$name" -- mpiexec -n "$ranks" "$bin" run "$deck" "${args[@]}" --out '{run}')
done
(cd "$root" && tool alternation --rounds "$rounds" --dir "$work" --announce zeropp-curves \
  "${runs[@]}") || exit 1

mkdir -p "$out/runs"
command="scripts/zeropp-curves.sh${*:+ $*}"
[ -z "${COMBOS:-}${STEPS:-}${ROUNDS:-}${RANKS:-}" ] ||
  command="COMBOS=\"${combos[*]}\" RANKS=$ranks STEPS=$steps ROUNDS=$rounds $command"
combo_args=()
for name in "${combos[@]}"; do combo_args+=("--combo=$name=${sets[$name]// /,}"); done
"$python" "$root/scripts/zeropp_curves.py" "$work" "$out" --rounds "$rounds" \
  --command "$command" --revision "$rev" --deck "$deck" "${combo_args[@]}"
