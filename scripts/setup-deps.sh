#!/usr/bin/env bash
# Installs the Debian 12 packages zeromini needs, when they are missing and it can (root, or
# sudo without a password, and apt). Idempotent and quiet when everything is there. Where it
# cannot install (a cluster: no root, no apt, modules instead), it never fails: it says what is
# missing and how to provide it (a module, a prefix, ZEROMINI_DEPS_DIR), and the build's own
# checks (cmake) stop with the precise reason if something needed is still absent.
#
#   scripts/setup-deps.sh            # build, test and plot dependencies; silent when all is there
#   ZEROMINI_DEPS_VERBOSE=1 ...      # also say so when nothing was missing
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"

packages=(
  # toolchain, and the compiler cache that scripts/build.sh uses where it is installed
  cmake g++ make git pkg-config ccache
  # Kokkos 3.4 and Kokkos Kernels (Serial) with OpenBLAS as their BLAS; OpenBLAS's OpenMP build
  # for Kokkos >= 4 with OpenMP (scripts/build-kokkos.sh)
  libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev libopenblas-dev libopenblas0-pthread
  libopenblas0-openmp
  # MPI and parallel HDF5
  mpich libmpich-dev libhdf5-mpich-dev
  # C++ libraries
  libtomlplusplus-dev libcli11-dev libfmt-dev libgtest-dev libbenchmark-dev
  # Python for the reference tests, results files and plots (Debian's python3 at /usr/bin)
  python3 python3-numpy python3-torch python3-h5py python3-matplotlib
  # A one-node Slurm for the workflow test
  slurm-wlm munge
  # Nodes in network namespaces (scripts/netns-cluster.sh: ip, tc, nsenter, unshare) and UCX's
  # header for the MPI_Finalize workaround library (src/preload) the multinode tests preload
  iproute2 util-linux libucx-dev
  # The device kit (scripts/device-kit.sh) and its check in a bare Debian root (kit-bare-check.sh)
  patchelf xz-utils debootstrap
  # The NVMe tier's io_uring (src/modules/zero_infinity; without it, a pool of pread/pwrite)
  liburing-dev
)

# Without apt (or without the right to use it): what a build needs, looked for on PATH and in the
# environment, with the way to provide each on a cluster.
report_without_apt() {
  local why=$1 lacking=0
  echo "setup-deps: $why: installing nothing; checking what this machine provides"
  need() {  # need WHAT HOW COMMAND...: says WHAT is missing and HOW to provide it unless COMMAND succeeds
    local what=$1 how=$2
    shift 2
    if "$@" >/dev/null 2>&1; then
      echo "setup-deps:   found   $what"
    else
      echo "setup-deps:   MISSING $what: $how"
      lacking=1
    fi
  }
  need "a C++17 compiler (c++)" "load a compiler module (e.g. gcc, PrgEnv-gnu)" command -v "${CXX:-c++}"
  need "CMake >= 3.20" "load a cmake module, or pip install --user cmake" \
    bash -c 'v=$(cmake --version | sed -n "1s/[^0-9]*\([0-9]*\)\.\([0-9]*\).*/\1 \2/p"); set -- $v; (($1 > 3 || ($1 == 3 && $2 >= 20)))'
  need "an MPI compiler wrapper (mpicxx, or CC on Cray)" "load an MPI module (cray-mpich, openmpi, mpich)" \
    bash -c 'command -v mpicxx || command -v CC'
  need "parallel HDF5 (h5pcc, or HDF5_ROOT / HDF5_DIR)" \
    "load a parallel HDF5 module (cray-hdf5-parallel, hdf5/*-mpi) or set HDF5_ROOT" \
    bash -c 'command -v h5pcc || [[ -n ${HDF5_ROOT:-}${HDF5_DIR:-} ]]'
  need "a BLAS (OpenBLAS, or the vendor's)" "load openblas (or use cray-libsci); set BLA_VENDOR if CMake picks another" \
    bash -c '[[ -n ${OPENBLAS_ROOT:-}${CRAY_LIBSCI_PREFIX_DIR:-} ]] ||
      for dir in ${LD_LIBRARY_PATH//:/ } /usr/local/lib /usr/lib /usr/lib64 /usr/lib/*-linux-gnu; do
        compgen -G "$dir/libopenblas*.so*" || compgen -G "$dir/libsci*.so*" || continue; exit 0
      done; exit 1'
  need "python3 (reference tests, results, plots)" "load a python module" command -v python3
  echo "setup-deps: Kokkos >= 4 and Kokkos Kernels: a module (Kokkos_ROOT), or scripts/build-kokkos.sh into your home"
  echo "setup-deps: toml++, CLI11, fmt, GoogleTest, Google Benchmark: used where installed, else built from"
  echo "setup-deps: source by cmake (ZEROMINI_DEPS_DIR=DIR of release tarballs, or the network); see scripts/README.md, On a cluster"
  ((lacking == 0)) || echo "setup-deps: provide what is MISSING above before building"
}

if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  report_without_apt "no apt on this machine"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      SUDO=sudo
    else
      echo "setup-deps: missing Debian packages: ${missing[*]}"
      echo "setup-deps: as root they would be installed with: apt-get install -y ${missing[*]}"
      report_without_apt "not root, and no password-less sudo"
      exit 0
    fi
  else
    SUDO=
  fi
  echo "setup-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/zeromini-apt.log 2>&1; then
    $SUDO apt-get update -qq >>/tmp/zeromini-apt.log 2>&1
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/zeromini-apt.log 2>&1 || {
      echo "setup-deps: apt-get failed; see /tmp/zeromini-apt.log" >&2
      tail -20 /tmp/zeromini-apt.log >&2
      exit 1
    }
  fi
fi

# Kokkos Kernels calls the system BLAS; Debian's reference BLAS is ten times slower than OpenBLAS.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
if [[ -n $blas && $blas != *openblas* ]]; then
  echo "setup-deps: warning: the system BLAS is $blas, not OpenBLAS; GEMMs will be slow." >&2
  echo "setup-deps: select it with: update-alternatives --config libblas.so.3-x86_64-linux-gnu" >&2
fi
[[ -z ${ZEROMINI_DEPS_VERBOSE:-} ]] || echo "setup-deps: all dependencies are installed"
