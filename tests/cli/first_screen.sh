#!/usr/bin/env bash
# first_screen.sh MAX_LINES OUT_DIR COMMAND...: runs COMMAND (a `zeromini run ... --out OUT_DIR`)
# and checks that it prints at most MAX_LINES lines before its first step line, and that the
# whole resolved deck is in OUT_DIR/deck.toml (every section, loadable as a deck again). Only
# zeromini's own lines (stdout) count: what the MPI library or Kokkos warn on stderr (bare
# machines: hwloc, UCX, oversubscription) is theirs, printed but not counted.
set -u
max=$1 out=$2
shift 2
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
output=$("$@" 2>"$errors")
status=$?
printf '%s\n' "$output"
cat "$errors"
[[ $status -eq 0 ]] || { echo "first_screen.sh: exit status $status"; exit 1; }
before=$(awk '/\] step +1\//{print NR - 1; found = 1; exit} END {if (!found) print -1}' <<<"$output")
[[ $before -ge 0 ]] || { echo "first_screen.sh: no step line"; exit 1; }
echo "first_screen.sh: $before lines before the first step line (at most $max)"
[[ $before -le $max ]] || exit 1
for section in model train zero comm data output; do
  grep -q "^\[$section\]" "$out/deck.toml" || { echo "first_screen.sh: $out/deck.toml lacks [$section]"; exit 1; }
done
exit 0
