#!/usr/bin/env bash
# The ZeRO paper's Table 2 (largest model per model-parallel degree) from `zeromini plan`, beside
# the published figures: results/paper-table2/{table2.md,theory.csv,largest-mp*.csv}.
#   [ZEROMINI_BIN=build/bin/zeromini] scripts/reproduce-table2.sh [OUT_DIR]
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
out=${1:-$root/results/paper-table2}
bin=${ZEROMINI_BIN:-$root/build/bin/zeromini}
[ -n "${ZEROMINI_BIN:-}" ] || [ -x "$bin" ] || "$root/scripts/build.sh" >/dev/null
# The revision before the outputs are rewritten (rewriting them makes the tree dirty).
rev=$(revision)
mkdir -p "$out"
python3 "$root/scripts/reproduce_table2.py" "$bin" "$out"
echo >>"$out/table2.md"
echo "Made by \`scripts/reproduce-table2.sh${*:+ $*}\` (zeromini $rev)." >>"$out/table2.md"
