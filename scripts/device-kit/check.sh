#!/usr/bin/env bash
# The device check of a zeromini device kit (scripts/device-kit.sh; scripts/README.md, "The device kit").
#
#   DIR/check.sh [STEP...]      steps: env unit mpi nccl bf16 sanitize perf (default: all)
#
# Unpacks zeromini-kit.tar.xz beside it into DIR/kit on first use, runs the steps, and writes
# everything under $OUT (default ./check-out): summary.md (the table printed last) and
# check-logs.tar.gz (every log). A step that cannot run here says why in the table.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -f $here/kit/.unpacked || $here/zeromini-kit.tar.xz -nt $here/kit/.unpacked ]]; then
  rm -rf "$here/kit"
  unxz=xz
  command -v xz >/dev/null || unxz=$here/xz  # a bare machine may lack xz: the kit carries one
  echo "check.sh: unpacking $here/zeromini-kit.tar.xz"
  "$unxz" -dc "$here/zeromini-kit.tar.xz" | tar -C "$here" -xf - && touch "$here/kit/.unpacked" || {
    echo "check.sh: cannot unpack $here/zeromini-kit.tar.xz" >&2
    exit 1
  }
fi
exec bash "$here/kit/scripts/kit-check.sh" "$@"
