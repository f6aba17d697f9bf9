#!/usr/bin/env bash
# kit_bare_check.sh SOURCE_DIR BUILD_DIR KIT_DIR: packs BUILD_DIR (an OpenMP build) as a device kit
# in KIT_DIR and runs its check.sh, every step, in a bare Debian root; exit 77 (skipped) where
# this machine cannot (not root, or no debootstrap, patchelf or xz).
set -u
src=$1 build=$2 kit=$3
[[ $(id -u) -eq 0 ]] || { echo "kit_bare_check: skipped: needs root (chroot, mount)"; exit 77; }
for tool in debootstrap patchelf xz; do
  command -v $tool >/dev/null || { echo "kit_bare_check: skipped: no $tool"; exit 77; }
done
"$src/scripts/device-kit.sh" --flavor openmp --build "$build" --out "$kit" || exit 1
# The build tree's ctest ran every test; in the bare root each program runs once per rank count.
CHECK_ONE_PER_PROGRAM=1 "$src/scripts/kit-bare-check.sh" --flavor openmp --kit "$kit" || exit 1
# Every step ran: the host ones passed, the GPU-only ones said why not.
summary=$kit/bare-check-out/summary.md
for step in env unit mpi bf16; do
  grep -q "^| $step | pass |" "$summary" || { echo "kit_bare_check: $step did not pass"; exit 1; }
done
for step in nccl sanitize perf; do
  grep -q "^| $step | skipped: no GPU |" "$summary" || { echo "kit_bare_check: $step: not 'skipped: no GPU'"; exit 1; }
done
