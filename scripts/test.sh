#!/usr/bin/env bash
# The test command (README, CI): installs the dependencies, then builds zeromini and runs the
# whole suite with ctest (unit tests, MPI tests at 1-4 ranks, the PyTorch reference, the fault,
# workflow and Slurm tests) in each supported host configuration:
#
#   core     the core alone: Debian's Kokkos 3.4, every module off               -> build-core/
#            (ZEROMINI_MODULES=none); runs the core's tests (ctest -L core)
#   debian   Debian's Kokkos 3.4 (Serial) and Kokkos Kernels on OpenBLAS          -> build/
#   openmp   Kokkos >= 4 with OpenMP + Serial and Kokkos Kernels with the BLAS     -> build-openmp/
#            TPL, built by scripts/build-kokkos.sh from the release tarballs in a
#            shared/vendor directory beside the clone or one of its parents (or
#            ZEROMINI_KOKKOS_VENDOR) into ZEROMINI_KOKKOS_PREFIX; tests run with
#            2 OpenMP threads per rank (one at 3-4 ranks on 2 cores: tests/README.md),
#            bf16 included. Skipped, with a message,
#            where no such sources exist.
#   cuda     Kokkos >= 4 with CUDA (sm_90, or ZEROMINI_CUDA_ARCH) and Kokkos Kernels  -> build-cuda/
#            with cuBLAS, built the same way with nvcc (/usr/local/cuda, or
#            CUDA_HOME); the whole project
#            compiles (the app, every test, every benchmark), and what needs no GPU
#            runs (ctest -L no_gpu: version, schema, plan; with the inspect module
#            inspect and export of host-made files), under CUDA's stub driver where
#            the machine has no GPU. Skipped, with a message, where there is no nvcc or no sources.
#
#   scripts/test.sh [--config core|debian|openmp|cuda|all] [ctest arguments, e.g. -L mpi or -R deck]
#   (ctest arguments apply to the core, debian and openmp configurations; cuda runs -L no_gpu).
#   When every configuration runs, the debian one runs the modules' tests only (ctest -LE core):
#   the core's run in the core configuration (modules off) and in openmp (modules on), which
#   leaves out what does not depend on the Kokkos backend (labels workflow, slurm, fault, docs,
#   tools: run in the core or debian configuration).
#   scripts/test.sh --quick   the debian configuration's unit tests and its 1- and 2-rank
#                             GoogleTest runs (label quick): a few minutes on a warm machine
#
# Work that does not need the cores the tests use starts at once, in the background: the bare
# Debian root of the kit checks (debootstrap waits on the network) and, when every configuration
# runs, the cuda configuration's build (Kokkos and the whole project through nvcc) at the lowest
# priority, so that it takes only what the debian and openmp tests leave idle and the tests keep
# their timing. The openmp and cuda configurations compile in unity batches
# (ZEROMINI_UNITY_BUILD); the debian one file by file, so that a missing include still fails.
#
# At its end it prints one table of where the time went: per configuration the seconds of the
# dependencies, Kokkos, configure, compile, tests and kit, and the ten slowest tests
# (scripts/ci_times.py; results/ci-time.md); phases that ran in the background are marked.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
cd "$root"

configs=all
if [[ ${1:-} == --config ]]; then
  configs=${2:?--config needs debian, openmp or all}
  shift 2
elif [[ ${1:-} == --quick ]]; then
  configs=debian
  shift
  set -- -L quick "$@"
fi
case $configs in core | debian | openmp | cuda | all) ;; *) echo "test.sh: unknown configuration $configs" >&2; exit 2 ;; esac

# The Kokkos >= 4 release tarballs: ZEROMINI_KOKKOS_VENDOR, else shared/vendor beside the clone
# or beside one of its parent directories.
find_kokkos_vendor() {
  if [[ -n ${ZEROMINI_KOKKOS_VENDOR:-} ]]; then
    [[ -d $ZEROMINI_KOKKOS_VENDOR ]] && echo "$ZEROMINI_KOKKOS_VENDOR"
    return
  fi
  local dir=$root
  while [[ $dir != / ]]; do
    dir=$(dirname "$dir")
    if compgen -G "$dir/shared/vendor/kokkos-[0-9]*.tar.gz" >/dev/null &&
      compgen -G "$dir/shared/vendor/kokkos-kernels-[0-9]*.tar.gz" >/dev/null; then
      echo "$dir/shared/vendor"
      return
    fi
  done
}

# Outside the clone, shared by every clone on the machine: a warm machine does not rebuild.
#   default_kokkos_prefix NAME   e.g. kokkos-4-openmp
default_kokkos_prefix() {
  if [[ -w /opt || -w /opt/zeromini ]]; then
    echo "/opt/zeromini/$1"
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/zeromini/$1"
  fi
}

# Where the time goes: "CONFIG PHASE SECONDS" lines, read by scripts/ci_times.py at the end.
# A phase that runs in the background says so (BACKGROUND=background): its seconds overlap the
# others' and are not added to the totals.
phase_log=$(mktemp "${TMPDIR:-/tmp}/zeromini-phases.XXXXXX")
BACKGROUND=
timed() {  # timed CONFIG PHASE COMMAND...: runs COMMAND, logs its seconds, returns its status
  local config=$1 phase=$2 start=$SECONDS status=0
  shift 2
  "$@" || status=$?
  echo "$config $phase $((SECONDS - start)) $BACKGROUND" >>"$phase_log"
  return $status
}
# build CONFIG [build.sh arguments]: configure and compile, each phase logged.
build() {
  local config=$1 status=0 steps
  shift
  steps=$(mktemp "${TMPDIR:-/tmp}/zeromini-build-phases.XXXXXX")
  ZEROMINI_PHASE_LOG=$steps scripts/build.sh "$@" || status=$?
  sed "s/^/$config /; s/\$/ $BACKGROUND/" "$steps" >>"$phase_log"
  rm -f "$steps"
  return $status
}

# Tests declare the cores they take (PROCESSORS: ranks x threads per rank); ctest fills the
# machine with them, in both host configurations.
run_ctest() {  # run_ctest BUILD_DIR [ctest arguments]
  local dir=$1
  shift
  (cd "$dir" && OPENBLAS_NUM_THREADS=1 ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@")
}

run_core() {
  echo "=== test.sh: configuration core (Debian's Kokkos 3.4, Serial, every module off) ==="
  # set -e does not act inside a function called as an if condition: every step says || return.
  # In unity batches: the debian configuration compiles the same sources file by file.
  BUILD_DIR=$root/build-core build core -DZEROMINI_MODULES=none -DZEROMINI_UNITY_BUILD=ON ||
    return
  timed core tests run_ctest build-core -L core "$@" || return
  scripts/list-skipped-tests.py build-core core
}

run_debian() {
  echo "=== test.sh: configuration debian (Debian's Kokkos 3.4, Serial) ==="
  local only_modules=()
  if [[ $configs == all ]]; then
    # The core's tests run in the core configuration; the fuzzer, which reads inputs only the
    # core parses, is built there.
    only_modules=(-LE core)
    build debian -DZEROMINI_BUILD_FUZZ=OFF || return
  else
    build debian || return
  fi
  timed debian tests run_ctest build "${only_modules[@]}" "$@" || return
  scripts/list-skipped-tests.py build debian
}

run_openmp() {
  local vendor prefix
  vendor=$(find_kokkos_vendor)
  if [[ -z $vendor ]]; then
    echo "=== test.sh: configuration openmp skipped: no Kokkos >= 4 release tarballs (no shared/vendor beside the clone or its parents; set ZEROMINI_KOKKOS_VENDOR) ==="
    return "$skipped"
  fi
  prefix=${ZEROMINI_KOKKOS_PREFIX:-$(default_kokkos_prefix kokkos-4-openmp)}
  echo "=== test.sh: configuration openmp (Kokkos >= 4, OpenMP + Serial, from $vendor) ==="
  timed openmp kokkos scripts/build-kokkos.sh --openmp "$vendor" "$prefix" || return
  # The fuzzer's sanitized copy of the library is built and run once, in the debian
  # configuration: the readers it fuzzes do not depend on the Kokkos backend, and building it
  # twice cost CI minutes.
  BUILD_DIR=$root/build-openmp build openmp -DKokkos_ROOT="$prefix" \
    -DKokkosKernels_ROOT="$prefix" -DZEROMINI_BUILD_FUZZ=OFF -DZEROMINI_MULTINODE_TESTS=OFF \
    -DZEROMINI_UNITY_BUILD=ON || return
  # With every configuration, what does not depend on the Kokkos backend (the workflow, Slurm,
  # fault, docs and tools tests: processes, files, scripts) ran in the core or debian one.
  local backend_independent=()
  [[ $configs != all ]] || backend_independent=(-LE 'workflow|slurm|fault|docs|tools')
  timed openmp tests run_ctest build-openmp "${backend_independent[@]}" "$@" || return
  scripts/list-skipped-tests.py build-openmp openmp
}

# The CUDA compile: Kokkos for the architecture with nvcc, then the whole project. Nothing runs on a GPU
# here; the no_gpu tests check what must work without one.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
cuda_buildable() {  # says why not, and fails, where this machine cannot build the cuda configuration
  if [[ ! -x $cuda_home/bin/nvcc ]]; then
    echo "=== test.sh: configuration cuda skipped: no nvcc at $cuda_home/bin (set CUDA_HOME) ==="
    return 1
  fi
  if [[ -z $(find_kokkos_vendor) ]]; then
    echo "=== test.sh: configuration cuda skipped: no Kokkos >= 4 release tarballs (set ZEROMINI_KOKKOS_VENDOR) ==="
    return 1
  fi
}
# ZEROMINI_CUDA_ARCH picks the GPU architecture (sm_80 for A100, sm_90 for H100 and GH200; CI
# compiles sm_90).
cuda_arch=${ZEROMINI_CUDA_ARCH:-sm_90}
build_cuda() {
  local prefix=${ZEROMINI_KOKKOS_CUDA_PREFIX:-$(default_kokkos_prefix kokkos-4-cuda-$cuda_arch)}
  PATH=$cuda_home/bin:$PATH timed cuda kokkos scripts/build-kokkos.sh --cuda "$cuda_arch" \
    "$(find_kokkos_vendor)" "$prefix" || return
  PATH=$cuda_home/bin:$PATH Kokkos_ROOT=$prefix BUILD_DIR=$root/build-cuda build cuda \
    --preset cuda -DCMAKE_CXX_FLAGS="-arch=$cuda_arch" || return
}
# When every configuration runs, the cuda build starts with the first one, at the lowest priority.
cuda_background_pid= cuda_background_log=$root/build-cuda.background.log
# Made when the build succeeded (a fresh name outside the clone).
cuda_background_done=$(mktemp -u "${TMPDIR:-/tmp}/zeromini-cuda-built.XXXXXX")
start_cuda_build_in_background() {
  cuda_buildable >/dev/null || return 0
  echo "=== test.sh: the cuda build starts in the background at nice 19 (log: $cuda_background_log) ==="
  # In a process group of its own (job control on for the start), so that it can be stopped
  # whole if this script ends first.
  set -m
  (
    renice -n 19 -p "$BASHPID" >/dev/null  # what it starts inherits the priority
    BACKGROUND=background
    build_cuda && touch "$cuda_background_done"
  ) >"$cuda_background_log" 2>&1 &
  cuda_background_pid=$!
  set +m
  trap 'stop_cuda_build' EXIT
  trap 'stop_cuda_build; exit 130' INT
  trap 'stop_cuda_build; exit 143' TERM
}
# Waits for the background build; whether it succeeded, from the file it leaves. A build that ended
# long before may be forgotten by `wait` ("not a child of this shell"), so its status is not taken
# from `wait`.
wait_cuda_build() {
  wait "$cuda_background_pid" 2>/dev/null || true
  [[ -f $cuda_background_done ]] || return 1
  rm -f "$cuda_background_done"
}
stop_cuda_build() {
  [[ -z $cuda_background_pid ]] || kill -TERM -- "-$cuda_background_pid" 2>/dev/null || true
}

run_cuda() {
  cuda_buildable || return "$skipped"
  echo "=== test.sh: configuration cuda (Kokkos >= 4, CUDA $cuda_arch, from $(find_kokkos_vendor); compile only) ==="
  if [[ -n $cuda_background_pid ]]; then
    echo "test.sh: waiting for the cuda build started in the background"
    local status=0
    timed cuda waited wait_cuda_build || status=$?
    cuda_background_pid=
    # Its output, once, here: the configuration's log reads as if it had run in the foreground.
    cat "$cuda_background_log"
    ((status == 0)) || return $status
  else
    build_cuda || return
  fi
  timed cuda tests bash -c 'cd build-cuda && ctest --output-on-failure --timeout 300 -L no_gpu' ||
    return
  timed cuda kit cuda_kit || return
}

# The cuda device kit, packed from build-cuda as a GPU session would carry it, and its env step in
# the bare Debian root (scripts/kit-bare-check.sh): every program and library resolved but the
# driver's and CUDA's own, which the device provides. A change that breaks packing fails here,
# not on the device. The openmp kit's whole check.sh runs as the ctest kit_bare_check.
cuda_kit() {
  local kit=$root/build-cuda/device-kit
  scripts/device-kit.sh --flavor cuda --build "$root/build-cuda" --out "$kit" || return
  if [[ $(id -u) -ne 0 ]] || ! command -v debootstrap >/dev/null; then
    echo "test.sh: the cuda kit packed ($(du -sh "$kit" | cut -f1)); its env step in a bare root skipped: needs root and debootstrap"
    return 0
  fi
  scripts/kit-bare-check.sh --flavor cuda --kit "$kit" env || return
  grep -q '^| env | pass |' "$kit/bare-check-out/summary.md" ||
    { echo "test.sh: the cuda kit's env step did not pass in the bare root" >&2; return 1; }
}

timed setup deps scripts/setup-deps.sh
skipped=77  # a configuration's status when this machine cannot build it
failed=()
# The bare root of the kit checks (openmp's kit_bare_check, cuda's kit), made where missing while
# the first configuration builds; a check that needs it meanwhile waits for it.
bare_root_log=$root/build-bare-root.log
if [[ $configs != debian && $(id -u) -eq 0 ]] && command -v debootstrap >/dev/null; then
  nice -n 19 scripts/kit-bare-check.sh --make-root >"$bare_root_log" 2>&1 &
fi
[[ $configs != all ]] || start_cuda_build_in_background
for config in core debian openmp cuda; do
  [[ $configs == all || $configs == "$config" ]] || continue
  start=$SECONDS
  if "run_$config" "$@"; then
    echo "=== test.sh: configuration $config passed ($((SECONDS - start)) s) ==="
  elif (($? != skipped)); then
    echo "=== test.sh: configuration $config FAILED ($((SECONDS - start)) s) ==="
    failed+=("$config")
  fi
done
echo "all elapsed $SECONDS" >>"$phase_log"
echo "=== test.sh: where the time went ==="
/usr/bin/env python3 scripts/ci_times.py "$phase_log" core=build-core debian=build \
  openmp=build-openmp cuda=build-cuda || true
rm -f "$phase_log"
if ((${#failed[@]})); then
  echo "test.sh: failed configurations: ${failed[*]}" >&2
  exit 1
fi
