#!/usr/bin/env bash
# Proves a device kit on this machine: runs its check.sh in a bare Debian root (debootstrap
# minbase, nothing from this machine's packages) under chroot, with /proc and /dev/shm mounted in
# a private mount namespace. The openmp kit runs every step (the GPU-only ones report "skipped:
# no GPU"); in a cuda kit the env step shows every library resolved but the CUDA driver and
# toolkit libraries that the device provides. Run as root.
#
#   scripts/kit-bare-check.sh [--flavor openmp|cuda] [--kit DIR] [--root DIR] [STEP...]
#   scripts/kit-bare-check.sh --make-root [--root DIR]
#     --kit        the kit (default device-kit/; scripts/device-kit.sh --flavor F --out DIR makes it)
#     --root       the bare root, made once per machine and reused (default ZEROMINI_BARE_ROOT,
#                  else /var/cache/zeromini/bare-bookworm)
#     --make-root  only make the bare root where it is missing (scripts/test.sh starts this first,
#                  in the background: debootstrap waits on the network, not the cores); a check
#                  that needs the root meanwhile waits for it (DIR.lock)
# The check's output lands in DIR/bare-check-out/ (summary.md, check-logs.tar.gz).
# CHECK_ONE_PER_PROGRAM=1 is passed on to the check (scripts/device-kit/kit-check.sh).
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
flavor=openmp kit=$root/device-kit bare=${ZEROMINI_BARE_ROOT:-/var/cache/zeromini/bare-bookworm}
make_root_only=0
while (($#)); do
  case $1 in
    --flavor) flavor=${2:?}; shift 2 ;;
    --kit) kit=${2:?}; shift 2 ;;
    --root) bare=${2:?}; shift 2 ;;
    --make-root) make_root_only=1; shift ;;
    -*)
      echo "usage: $0 [--flavor openmp|cuda] [--kit DIR] [--root DIR] [STEP...] | --make-root [--root DIR]" >&2
      exit 2
      ;;
    *) break ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "kit-bare-check: run as root (debootstrap, chroot, mount)" >&2; exit 1; }

# The bare root, from the apt source this machine uses; made once, under a lock, so that a check
# started while scripts/test.sh's background debootstrap runs waits for it instead of making a
# second one.
make_bare_root() {
  [[ -x $bare/bin/bash ]] && return 0
  # Only the source files that exist: sed's status 2 for a missing one (Debian 12 has no
  # sources.list, only sources.list.d/debian.sources) would end this script under pipefail.
  local sources=() file mirror=
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
    [[ -f $file ]] && sources+=("$file")
  done
  if ((${#sources[@]})); then
    mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p; s/^deb \(http[^ ]*debian\) .*/\1/p' \
      "${sources[@]}" | head -n 1)
  fi
  echo "kit-bare-check: debootstrap --variant=minbase bookworm $bare ${mirror:-http://deb.debian.org/debian}"
  # Made beside its place and moved in whole: an interrupted debootstrap leaves no half root.
  rm -rf "$bare.partial"
  debootstrap --variant=minbase bookworm "$bare.partial" "${mirror:-http://deb.debian.org/debian}" \
    >/dev/null || { echo "kit-bare-check: debootstrap failed (it needs the network once)" >&2; return 1; }
  rm -rf "$bare"
  mv "$bare.partial" "$bare"
}
mkdir -p "$(dirname "$bare")"
(
  flock 9
  make_bare_root
) 9>"$bare.lock" || exit 1
((make_root_only)) && exit 0
[[ -f $kit/check.sh && -f $kit/zeromini-kit.tar.xz ]] ||
  { echo "kit-bare-check: no kit in $kit: scripts/device-kit.sh --flavor $flavor --out $kit" >&2; exit 1; }
kit=$(cd "$kit" && pwd)
packed=$(xz -dc "$kit/zeromini-kit.tar.xz" | tar -xOf - kit/KIT-INFO | sed -n 's/^flavor=//p')
[[ $packed == "$flavor" ]] || { echo "kit-bare-check: $kit is a $packed kit, not $flavor" >&2; exit 1; }

# Bare means none of what the kit carries: no MPI, HDF5, OpenBLAS, OpenMP runtime, no python3.
for lib in libmpich.so.12 libhdf5_openmpi.so libhdf5_mpich.so.103 libopenblas.so.0 libgomp.so.1 libgfortran.so.5; do
  if find "$bare/usr/lib" "$bare/lib" -name "$lib" 2>/dev/null | grep -q .; then
    echo "kit-bare-check: $bare is not bare: it has $lib" >&2
    exit 1
  fi
done
for program in python3 mpiexec ctest nvidia-smi; do
  [[ ! -e $bare/usr/bin/$program ]] || { echo "kit-bare-check: $bare has $program" >&2; exit 1; }
done

inside=/kit-check
rm -rf "${bare:?}$inside"
mkdir -p "$bare$inside"
cp "$kit/check.sh" "$kit/zeromini-kit.tar.xz" "$kit/xz" "$kit/liblzma.so.5" "$bare$inside/"
start=$SECONDS
status=0
unshare --mount --fork bash -c '
  mount -t proc proc "$1/proc" && mkdir -p "$1/dev/shm" && mount -t tmpfs tmpfs "$1/dev/shm" &&
  chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp \
    OUT='"$inside"'/out ${CHECK_ONE_PER_PROGRAM:+CHECK_ONE_PER_PROGRAM=$CHECK_ONE_PER_PROGRAM} \
    /bin/bash '"$inside"'/check.sh "${@:2}"' _ "$bare" "$@" || status=$?
rm -rf "$kit/bare-check-out"
cp -r "$bare$inside/out" "$kit/bare-check-out"
echo "kit-bare-check: the $flavor kit in a bare Debian root: exit $status after $((SECONDS - start)) s;" \
  "output in $kit/bare-check-out"
exit $status
