#!/usr/bin/env bash
# Installs the Debian 12 packages zeromini needs, when they are missing. Idempotent and quiet when
# everything is there; run as root (or with sudo) when something must be installed.
#
#   scripts/setup-deps.sh            # build, test and plot dependencies; silent when all is there
#   ZEROMINI_DEPS_VERBOSE=1 ...      # also say so when nothing was missing
set -euo pipefail

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
)

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
      echo "setup-deps: missing Debian packages: ${missing[*]}" >&2
      echo "setup-deps: run as root: apt-get install -y ${missing[*]}" >&2
      exit 1
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
