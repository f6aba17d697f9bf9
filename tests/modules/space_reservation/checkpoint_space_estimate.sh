#!/usr/bin/env bash
# The room a checkpoint reserves before it is written is estimated from its datasets' sizes: at
# least the size written, and at most twice it, for the tiny and the quickstart decks (stages 2
# and 3, 2 ranks). The run's log states both figures.
#   checkpoint_space_estimate.sh ZEROMINI MPIEXEC INPUTS_DIR WORKDIR
set -euo pipefail
zeromini=$1 mpiexec=$2 inputs=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
status=0
for deck in tiny-test quickstart; do
  for stage in 2 3; do
    out="$work/$deck-s$stage"
    "$mpiexec" -n 2 "$zeromini" run "$inputs/$deck.toml" --set zero.stage=$stage \
      --set train.steps=2 --set train.warmup=0 --set output.checkpoint_every=2 --out "$out" \
      >"$out.log" 2>&1 || { echo "FAIL: $deck stage $stage did not run"; cat "$out.log"; exit 1; }
    line=$(grep -E "checkpoint .* bytes written, [0-9]+ estimated" "$out.log" | tail -1) ||
      { echo "FAIL: $deck stage $stage: no checkpoint size line"; cat "$out.log"; exit 1; }
    written=$(sed -E 's/.*\(([0-9]+) bytes written, ([0-9]+) estimated.*/\1/' <<<"$line")
    estimated=$(sed -E 's/.*\(([0-9]+) bytes written, ([0-9]+) estimated.*/\2/' <<<"$line")
    actual=$(stat -c %s "$out"/checkpoints/step_00000002.h5)
    echo "$deck stage $stage: written $written (file $actual), estimated $estimated"
    if ((written != actual)); then
      echo "FAIL: the log's written size $written is not the file's $actual"; status=1
    fi
    if ((estimated < written || estimated > 2 * written)); then
      echo "FAIL: estimate $estimated outside [written, 2 x written] = [$written, $((2 * written))]"
      status=1
    fi
  done
done
exit $status
