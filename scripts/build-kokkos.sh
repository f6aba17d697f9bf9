#!/usr/bin/env bash
# Builds Kokkos and Kokkos Kernels (>= 4) from release tarballs or source directories into a
# prefix outside the repository, for machines without Spack or a site module: CI's second
# configuration (OpenMP + Serial on the host), CUDA builds, users.
#
#   scripts/build-kokkos.sh [--openmp | --serial | --cuda ARCH] [--jobs N] VENDOR_DIR PREFIX
#   scripts/build-kokkos.sh [--openmp | --serial | --cuda ARCH] [--jobs N] KOKKOS_SRC KERNELS_SRC PREFIX
#
#   VENDOR_DIR    a directory holding kokkos-X.tar.gz and kokkos-kernels-Y.tar.gz
#   KOKKOS_SRC    a Kokkos release tarball or an unpacked source directory
#   KERNELS_SRC   the same for Kokkos Kernels
#   --openmp      OpenMP + Serial backends (the default), Kokkos Kernels with the BLAS TPL
#   --serial      Serial backend only
#   --cuda ARCH   CUDA backend for ARCH (sm_70, sm_80, sm_86, sm_89, sm_90), Serial on the
#                 host, Kokkos Kernels with cuBLAS; Kokkos' nvcc_wrapper is the compiler.
#   --blas LIB    the BLAS library for the BLAS TPL (default: Debian's OpenMP OpenBLAS for
#                 --openmp where installed, so that BLAS and Kokkos share one thread pool)
#
# Kokkos Kernels is built without explicit instantiations (ETI) for every backend: zeromini calls
# one GEMM (KokkosBlas::gemm, to the BLAS or cuBLAS through the TPL specialisations, which are
# headers) and the batched team GEMM (a header), both instantiated where they are used. The
# pre-instantiated float and double kernels took 5 of the 6 minutes of an OpenMP build on 2 cores
# and most of a CUDA one, for nothing zeromini links.
#
# Known tarballs are checked against their sha256 (see the table below); an unknown one is
# refused unless ZEROMINI_KOKKOS_TRUST_UNKNOWN=1. A prefix that already holds a build of the same
# sources with the same options (PREFIX/share/zeromini-kokkos-build.txt) is reused, not rebuilt.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"

known_sha256=(
  "kokkos-4.6.01.tar.gz d8a8a5e15331c46b900d3f75d2b62b0b32f067b126a4a75d465224c899765084"
  "kokkos-kernels-4.6.02.tar.gz 581ec04666a9bf922db6f471c468a65ad03a0d0d0c23db64cc7717c93d5ca17b"
)

die() {
  echo "build-kokkos: $*" >&2
  exit 1
}
usage() {
  sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

backend=openmp
cuda_arch=
jobs=$(nproc)
blas=
positional=()
while (($#)); do
  case $1 in
    --openmp) backend=openmp ;;
    --serial) backend=serial ;;
    --cuda)
      backend=cuda
      cuda_arch=${2:?--cuda needs an architecture, e.g. sm_90}
      shift
      ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    --blas) blas=${2:?--blas needs a library path}; shift ;;
    -h | --help) usage 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1") ;;
  esac
  shift
done

case ${#positional[@]} in
  2)
    vendor=${positional[0]}
    [[ -d $vendor ]] || die "$vendor is not a directory"
    kokkos_src=$(ls "$vendor"/kokkos-[0-9]*.tar.gz 2>/dev/null | sort -V | tail -n 1)
    kernels_src=$(ls "$vendor"/kokkos-kernels-[0-9]*.tar.gz 2>/dev/null | sort -V | tail -n 1)
    [[ -n $kokkos_src && -n $kernels_src ]] ||
      die "$vendor holds no kokkos-*.tar.gz and kokkos-kernels-*.tar.gz"
    prefix=${positional[1]}
    ;;
  3) kokkos_src=${positional[0]} kernels_src=${positional[1]} prefix=${positional[2]} ;;
  *) usage 1 ;;
esac
[[ $prefix == /* ]] || prefix=$PWD/$prefix

# A fingerprint of a source: the tarball's sha256 (checked against the table when known), or
# the hash of every file's hash for a directory.
source_hash() {
  local src=$1 name sum entry
  if [[ -d $src ]]; then
    (cd "$src" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z |
      xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
    return
  fi
  [[ -f $src ]] || die "$src: no such file or directory"
  name=$(basename "$src")
  sum=$(sha256sum "$src" | cut -d' ' -f1)
  for entry in "${known_sha256[@]}"; do
    if [[ ${entry%% *} == "$name" ]]; then
      [[ ${entry#* } == "$sum" ]] || die "$src: sha256 $sum, expected ${entry#* } (damaged or altered)"
      echo "$sum"
      return
    fi
  done
  [[ ${ZEROMINI_KOKKOS_TRUST_UNKNOWN:-0} == 1 ]] ||
    die "$src (sha256 $sum) is not a known release tarball; set ZEROMINI_KOKKOS_TRUST_UNKNOWN=1 to build it"
  echo "$sum"
}

# Debian's OpenBLAS built on the OpenMP runtime: with it the GEMMs share Kokkos' OpenMP threads
# instead of starting a second pool that fights them for the cores.
debian_openmp_blas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
if [[ -z $blas && $backend == openmp && -e $debian_openmp_blas ]]; then
  blas=$debian_openmp_blas
fi

cxx=${CXX:-g++}
kokkos_hash=$(source_hash "$kokkos_src")
kernels_hash=$(source_hash "$kernels_src")
stamp_file=$prefix/share/zeromini-kokkos-build.txt
stamp=$(
  cat <<EOF
kokkos_source_sha256=$kokkos_hash
kernels_source_sha256=$kernels_hash
backend=$backend
cuda_arch=$cuda_arch
blas=$blas
compiler=$($cxx --version | head -n 1)
nvcc=$([[ $backend == cuda ]] && nvcc --version | tail -n 1 || true)
script_revision=4
kernels_eti=none
EOF
)

if [[ -f $stamp_file && $(cat "$stamp_file") == "$stamp" ]]; then
  echo "build-kokkos: $prefix already holds this build ($backend); reusing it"
  exit 0
fi

mkdir -p "$(dirname "$prefix")"
exec 9>"$prefix.lock"
flock 9
# Another build may have finished while this one waited for the lock.
if [[ -f $stamp_file && $(cat "$stamp_file") == "$stamp" ]]; then
  echo "build-kokkos: $prefix already holds this build ($backend); reusing it"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zeromini-kokkos.XXXXXX")
trap 'rm -rf "$work"' EXIT
unpack() {  # unpack SRC DEST: a tarball's single top directory, or a copy of a directory
  local src=$1 dest=$2
  mkdir -p "$dest"
  if [[ -d $src ]]; then
    cp -a "$src"/. "$dest"
  else
    tar -xzf "$src" -C "$dest" --strip-components=1
  fi
}
unpack "$kokkos_src" "$work/kokkos"
unpack "$kernels_src" "$work/kernels"

kokkos_args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DKokkos_ENABLE_SERIAL=ON)
kernels_args=(-DCMAKE_BUILD_TYPE=Release -DKokkosKernels_ENABLE_ALL_COMPONENTS=OFF
  -DKokkosKernels_ENABLE_COMPONENT_BLAS=ON -DKokkosKernels_ENABLE_COMPONENT_BATCHED=ON
  -DKokkosKernels_ENABLE_TPL_LAPACK=OFF -DKokkosKernels_ADD_DEFAULT_ETI=OFF
  -DKokkosKernels_INST_FLOAT=OFF -DKokkosKernels_INST_DOUBLE=OFF
  -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF)
case $backend in
  openmp)
    kokkos_args+=(-DKokkos_ENABLE_OPENMP=ON -DCMAKE_CXX_COMPILER="$cxx")
    kernels_args+=(-DKokkosKernels_ENABLE_TPL_BLAS=ON -DCMAKE_CXX_COMPILER="$cxx")
    ;;
  serial)
    kokkos_args+=(-DCMAKE_CXX_COMPILER="$cxx")
    kernels_args+=(-DKokkosKernels_ENABLE_TPL_BLAS=ON -DCMAKE_CXX_COMPILER="$cxx")
    ;;
  cuda)
    case $cuda_arch in
      sm_70) karch=VOLTA70 ;; sm_80) karch=AMPERE80 ;; sm_86) karch=AMPERE86 ;;
      sm_89) karch=ADA89 ;; sm_90) karch=HOPPER90 ;;
      *) die "--cuda $cuda_arch: expected one of sm_70 sm_80 sm_86 sm_89 sm_90" ;;
    esac
    command -v nvcc >/dev/null || die "--cuda: nvcc is not on PATH (e.g. PATH=/usr/local/cuda/bin:\$PATH)"
    # nvcc_wrapper's default architecture (sm_70) is refused by CUDA 13: name it explicitly.
    wrapper_flags="-arch=$cuda_arch"
    kokkos_args+=(-DKokkos_ENABLE_CUDA=ON "-DKokkos_ARCH_$karch=ON"
      -DCMAKE_CXX_COMPILER="$work/kokkos/bin/nvcc_wrapper" -DCMAKE_CXX_FLAGS="$wrapper_flags")
    kernels_args+=(-DKokkosKernels_ENABLE_TPL_CUBLAS=ON -DKokkosKernels_ENABLE_TPL_BLAS=ON
      -DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper" -DCMAKE_CXX_FLAGS="$wrapper_flags")
    cuda_major=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
    if ((cuda_major >= 13)); then
      # The python3 on PATH (a cluster's module), not the prologue's /usr/bin one, which a cluster
      # may lack or keep older.
      /usr/bin/env python3 "$(dirname "$0")/kokkos-cuda13-adapt.py" "$work/kokkos"
    fi
    ;;
esac
# Kokkos Kernels finds the library by file name within its directory.
[[ -z $blas ]] || kernels_args+=(-DBLAS_LIBRARY_DIRS="$(dirname "$blas")" -DBLAS_LIBRARIES="$(basename "$blas")")

log=$work/build.log
step() {  # step NAME COMMAND...: run quietly, show the log's tail on failure
  local name=$1
  shift
  echo "build-kokkos: $name"
  "$@" >>"$log" 2>&1 || {
    tail -40 "$log" >&2
    die "$name failed (full log above; rerun to retry)"
  }
}

start=$SECONDS
# Install into a fresh prefix: a stale, half-built install must not be mixed with this one.
rm -rf "$prefix"
step "configuring Kokkos ($backend)" cmake -S "$work/kokkos" -B "$work/kokkos-build" \
  -DCMAKE_INSTALL_PREFIX="$prefix" "${kokkos_args[@]}"
step "building Kokkos" cmake --build "$work/kokkos-build" -j "$jobs"
step "installing Kokkos" cmake --install "$work/kokkos-build"
step "configuring Kokkos Kernels" cmake -S "$work/kernels" -B "$work/kernels-build" \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DKokkos_ROOT="$prefix" "${kernels_args[@]}"
step "building Kokkos Kernels (several minutes)" cmake --build "$work/kernels-build" -j "$jobs"
step "installing Kokkos Kernels" cmake --install "$work/kernels-build"
# The stamp goes last: an interrupted build leaves none, and the next call starts again.
mkdir -p "$(dirname "$stamp_file")"
echo "$stamp" >"$stamp_file"
echo "build-kokkos: installed in $prefix ($backend) in $((SECONDS - start)) s"
