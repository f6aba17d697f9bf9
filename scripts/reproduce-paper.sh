#!/usr/bin/env bash
# The ZeRO paper's memory table (and model sizes) from `zeromini plan`, beside the published
# figures, as markdown.   [ZEROMINI_BIN=build/bin/zeromini] scripts/reproduce-paper.sh [OUT.md]
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
out=${1:-/dev/stdout}
bin=${ZEROMINI_BIN:-$root/build/bin/zeromini}
[ -n "${ZEROMINI_BIN:-}" ] || [ -x "$bin" ] || "$root/scripts/build.sh" >/dev/null
{
  python3 "$root/scripts/reproduce_paper.py" "$bin"
  echo
  echo "Made by \`scripts/reproduce-paper.sh $*\` (zeromini $(revision))."
} >"$out"
