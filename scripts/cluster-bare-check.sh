#!/usr/bin/env bash
# Proves that zeromini builds where its users are: in a bare Debian root that holds only what a
# cluster's modules would give (a compiler, CMake, MPICH, parallel HDF5, OpenBLAS, Python), as an
# unprivileged user, with none of toml++, CLI11, fmt, GoogleTest, Google Benchmark or Kokkos
# installed. Inside, the user
#   1. runs scripts/setup-deps.sh (it must install nothing, say what it found, and not fail),
#   2. builds Kokkos 4 and Kokkos Kernels (OpenMP) into their home with scripts/build-kokkos.sh,
#   3. configures with ZEROMINI_DEPS_DIR (cmake must build all five small libraries from its
#      tarballs and say so), builds the app and the tests,
#   4. runs the quickstart at 2 ranks and the unit tests (ctest -L unit).
# Run as root (debootstrap, chroot). The root is made once per machine and reused.
#
#   scripts/cluster-bare-check.sh [--root DIR] [--deps DIR] [--jobs N]
#     --root  the bare root (default ZEROMINI_CLUSTER_ROOT, else
#             /var/cache/zeromini/bare-cluster-bookworm)
#     --deps  the release tarballs: Kokkos, Kokkos Kernels and the five small libraries
#             (default ZEROMINI_KOKKOS_VENDOR, else shared/vendor beside the clone or a parent)
# Prints a summary of each step with its seconds; the logs land in build-cluster-check/.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
bare=${ZEROMINI_CLUSTER_ROOT:-/var/cache/zeromini/bare-cluster-bookworm}
deps=${ZEROMINI_KOKKOS_VENDOR:-}
jobs=$(nproc)
while (($#)); do
  case $1 in
    --root) bare=${2:?}; shift 2 ;;
    --deps) deps=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    *) echo "usage: $0 [--root DIR] [--deps DIR] [--jobs N]" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "cluster-bare-check: run as root (debootstrap, chroot)" >&2; exit 1; }
if [[ -z $deps ]]; then
  dir=$root
  while [[ $dir != / ]]; do
    dir=$(dirname "$dir")
    [[ -d $dir/shared/vendor ]] && { deps=$dir/shared/vendor; break; }
  done
fi
for tarball in kokkos-4 kokkos-kernels-4 tomlplusplus- CLI11- fmt- googletest- benchmark-; do
  compgen -G "$deps/$tarball*.tar.gz" >/dev/null ||
    { echo "cluster-bare-check: no $tarball*.tar.gz in '$deps' (--deps DIR)" >&2; exit 1; }
done

# What the modules of a cluster would give, and nothing else.
module_like=g++,make,cmake,mpich,libmpich-dev,libhdf5-mpich-dev,libopenblas-dev,python3,ca-certificates
if [[ ! -x $bare/usr/bin/cmake ]]; then
  # Starts from the kit checks' minbase root (made once per machine by kit-bare-check.sh, which
  # knows this machine's apt source), copied: the kit checks keep theirs bare.
  kit_root=${ZEROMINI_BARE_ROOT:-/var/cache/zeromini/bare-bookworm}
  "$root/scripts/kit-bare-check.sh" --make-root --root "$kit_root" || exit 1
  echo "cluster-bare-check: $kit_root copied to $bare, then apt-get install ${module_like//,/ }"
  rm -rf "$bare.partial"
  cp -a "$kit_root" "$bare.partial"
  rm -rf "$bare.partial/kit-check"
  cp /etc/resolv.conf "$bare.partial/etc/resolv.conf" 2>/dev/null || true
  # apt inside the root resolves what debootstrap's --include cannot (virtual packages such as
  # automake-1.16, which libmpich-dev needs through libltdl-dev).
  unshare --mount --fork bash -c 'mount -t proc proc "$1/proc" &&
    chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $2"' \
    _ "$bare.partial" "${module_like//,/ }" >"$bare.apt.log" 2>&1 ||
    { echo "cluster-bare-check: apt-get in the root failed; see $bare.apt.log" >&2; exit 1; }
  rm -rf "$bare"
  mv "$bare.partial" "$bare"
fi
# None of the libraries zeromini must build itself there.
for header in toml++/toml.hpp CLI/CLI.hpp fmt/format.h gtest/gtest.h benchmark/benchmark.h Kokkos_Core.hpp; do
  if find "$bare/usr/include" -path "*/$header" 2>/dev/null | grep -q .; then
    echo "cluster-bare-check: $bare is not bare: it has $header" >&2
    exit 1
  fi
done

# An unprivileged user with the sources (as committed) and the tarballs in their home.
user_id=4242
home=$bare/home/zmuser
rm -rf "$home"
mkdir -p "$home/zeromini" "$home/deps"
git -C "$root" archive HEAD | tar -x -C "$home/zeromini"
cp "$deps"/*.tar.gz "$home/deps/"
grep -q '^zmuser:' "$bare/etc/passwd" ||
  echo "zmuser:x:$user_id:$user_id:zeromini user:/home/zmuser:/bin/bash" >>"$bare/etc/passwd"
grep -q '^zmuser:' "$bare/etc/group" || echo "zmuser:x:$user_id:" >>"$bare/etc/group"
chown -R "$user_id:$user_id" "$home"

cat >"$home/check.sh" <<EOF
#!/bin/bash
# Runs inside the bare root as zmuser.
set -uo pipefail
cd ~/zeromini
export ZEROMINI_DEPS_DIR=~/deps OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
step() {  # step NAME COMMAND...: runs it, logs it, prints one summary line
  local name=\$1 start=\$SECONDS status=0
  shift
  "\$@" >~/log-\$name.txt 2>&1 || status=\$?
  echo "| \$name | \$([[ \$status == 0 ]] && echo pass || echo "FAIL (exit \$status)") | \$((SECONDS - start)) |"
  return \$status
}
echo "| step | result | seconds |"
echo "|---|---|---|"
step setup-deps bash scripts/setup-deps.sh || exit 1
step kokkos scripts/build-kokkos.sh --openmp --jobs $jobs ~/deps ~/.cache/zeromini/kokkos-4-openmp || exit 1
step configure cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \\
  -DKokkos_ROOT=\$HOME/.cache/zeromini/kokkos-4-openmp -DKokkosKernels_ROOT=\$HOME/.cache/zeromini/kokkos-4-openmp || exit 1
step build cmake --build build -j $jobs || exit 1
step quickstart mpiexec -n 2 build/bin/zeromini run inputs/quickstart.toml --out ~/quickstart || exit 1
step unit-tests bash -c 'cd build && ctest -L unit --output-on-failure' || exit 1
EOF
chmod +x "$home/check.sh"

logs=$root/build-cluster-check
rm -rf "$logs"
mkdir -p "$logs"
status=0
unshare --mount --fork bash -c '
  mount -t proc proc "$1/proc" && mkdir -p "$1/dev/shm" && mount -t tmpfs tmpfs "$1/dev/shm" &&
  chroot --userspec='"$user_id:$user_id"' "$1" /usr/bin/env -i HOME=/home/zmuser USER=zmuser \
    PATH=/usr/local/bin:/usr/bin:/bin TMPDIR=/tmp LANG=C.UTF-8 /bin/bash /home/zmuser/check.sh' \
  _ "$bare" | tee "$logs/summary.md" || status=$?
cp "$home"/log-*.txt "$logs/" 2>/dev/null || true
# What the user saw: setup-deps' report and cmake's word on each dependency.
grep '^setup-deps' "$logs/log-setup-deps.txt" 2>/dev/null | sed 's/^/  /' || true
grep 'zeromini: \(tomlplusplus\|CLI11\|fmt\|googletest\|benchmark\):' "$logs/log-configure.txt" 2>/dev/null |
  sed 's/^/  /' || true
grep -q '^| unit-tests | pass' "$logs/summary.md" || status=1
echo "cluster-bare-check: exit $status; logs in $logs"
exit $status
