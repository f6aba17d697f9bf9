#!/usr/bin/env bash
# Packs a build into a device kit: everything a bare machine lacks to run zeromini, its tests and
# benchmarks, in one archive of at most 60 MiB, with check.sh beside it (scripts/README.md, "The device kit").
#
#   scripts/device-kit.sh [--flavor cuda|openmp] [--build DIR] [--out DIR]
#     --flavor  cuda (default; build-cuda/, cmake --preset cuda) or openmp (build-openmp/)
#     --build   the build directory, built in full (every test executable)
#     --out     the kit's directory (default device-kit/): check.sh, zeromini-kit.tar.xz, and xz
#               with its library for machines without xz
#
# The kit holds the app, the benchmarks and every test executable (stripped), MPICH's launcher,
# and every shared library they need but glibc's and, for cuda, the CUDA driver and toolkit
# libraries the device provides (libcuda, libcudart, libcublas*, libnccl, libnvidia*): they find
# each other through RUNPATH ($ORIGIN), so nothing sets LD_LIBRARY_PATH for other programs. Also
# the decks, a small token shard, the PyTorch reference script (torch_gpt_ref.py from a
# shared/bench beside the clone or one of its parents, or ZEROMINI_TORCH_GPT_REF), the test
# scripts, and the ctest tree with kit-relative paths plus tests.list (check.sh needs no ctest).
# Needs patchelf and xz (scripts/setup-deps.sh installs them).
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
flavor=cuda build= out=$root/device-kit
while (($#)); do
  case $1 in
    --flavor) flavor=${2:?}; shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    *) echo "usage: $0 [--flavor cuda|openmp] [--build DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done
case $flavor in cuda | openmp) ;; *) echo "device-kit: unknown flavor $flavor" >&2; exit 2 ;; esac
build=$(cd "${build:-$root/build-$flavor}" && pwd)
[[ -x $build/bin/zeromini ]] || { echo "device-kit: no $build/bin/zeromini: build it first" >&2; exit 1; }
# The sources the build was configured from (the tests name their scripts and decks there).
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
for tool in patchelf xz ldd; do
  command -v $tool >/dev/null || { echo "device-kit: needs $tool (scripts/setup-deps.sh)" >&2; exit 1; }
done
stage=$(mktemp -d /tmp/zeromini-device-kit.XXXXXX)
trap 'rm -rf "$stage"' EXIT
kit=$stage/kit
mkdir -p "$kit/bin" "$kit/lib"

# glibc (newer on the device), and for cuda the driver and toolkit that the device's image ships.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so)'
[[ $flavor == cuda ]] && skip="$skip|^(libcuda\.so|libcudart|libcublas|libnccl|libnvidia)"
is_elf() { [[ -f $1 && $(head -c4 "$1" | od -An -c | tr -d ' ') == 177ELF ]]; }
copy_libraries() {  # copy_libraries ELF...: the libraries they need (ldd lists all, transitively)
  local file name path
  for file in "$@"; do
    while read -r name path; do
      [[ $name =~ $skip || -e $kit/lib/$name ]] || cp -L "$path" "$kit/lib/$name"
    done < <(ldd "$file" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  done
}

echo "device-kit: $flavor kit from $build"
for file in "$build"/bin/*; do is_elf "$file" && cp -L "$file" "$kit/bin/"; done
for tool in mpiexec.hydra hydra_pmi_proxy; do
  launcher=$(command -v $tool) || { echo "device-kit: no $tool (MPICH)" >&2; exit 1; }
  cp -L "$launcher" "$kit/bin/"
done
ln -s mpiexec.hydra "$kit/bin/mpiexec"

# The ctest tree and tests.list, with the scripts and decks the tests name.
# ctest rewrites Testing/Temporary/LastTest.log of the tree it reads, even to list it: list a copy
# of the build's ctest files, so that the log of a ctest run in progress (the kit_bare_check test
# packs its own build) or just finished (read by list-skipped-tests.py and ci_times.py) is kept.
(cd "$build" && find . -name CTestTestfile.cmake ! -path '*/CMakeFiles/*') |
  while read -r file; do install -D -m 644 "$build/$file" "$stage/ctest-tree/$file"; done
(cd "$stage/ctest-tree" && ctest --show-only=json-v1) >"$stage/tests.json"
cp -r "$src/inputs" "$kit/inputs"
# The test tree but its C++ sources: the scripts the tests run and the ones those call, decks.
(cd "$src" && find tests -type f ! -name '*.cpp' ! -name '*.hpp' ! -name CMakeLists.txt) |
  while read -r file; do install -D -m "$(stat -c %a "$src/$file")" "$src/$file" "$kit/$file"; done
python3 "$root/scripts/device-kit/make_test_list.py" "$src" "$build" "$kit" "$stage/tests.json"
# The rewritten tree lists the same tests to ctest (where the device has one).
listed=$(cd "$kit/build" && ctest -N | sed -n 's/^Total Tests: //p')
[[ $listed == "$(grep -vc '^#' "$kit/tests.list")" ]] ||
  { echo "device-kit: the kit's ctest tree lists $listed tests, tests.list others" >&2; exit 1; }
mapfile -t tool_libs < <(find "$kit/build" -name '*.so' -type f)
copy_libraries "$kit"/bin/* "${tool_libs[@]}"

# Debug sections are most of the size; RUNPATH makes the kit's libraries found from anywhere.
chmod u+w "$kit"/bin/* "$kit"/lib/* "${tool_libs[@]}"
strip --strip-unneeded "$kit"/bin/mpiexec.hydra "$kit"/bin/hydra_pmi_proxy "$kit"/lib/* "${tool_libs[@]}"
for file in "$kit"/bin/*; do [[ -L $file ]] || strip --strip-all "$file"; done
# A cuda kit's programs also look where CUDA installs its runtime and cuBLAS by default.
bin_rpath='$ORIGIN/../lib'
[[ $flavor == cuda ]] && bin_rpath+=':/usr/local/cuda/lib64'
for file in "$kit"/bin/*; do [[ -L $file ]] || patchelf --set-rpath "$bin_rpath" "$file"; done
for file in "$kit"/lib/*; do patchelf --set-rpath '$ORIGIN' "$file"; done
for file in "${tool_libs[@]}"; do patchelf --set-rpath "\$ORIGIN/$(realpath --relative-to="$(dirname "$file")" "$kit/lib")" "$file"; done

# The benchmark and its PyTorch reference, the kit's own scripts, a token shard.
mkdir -p "$kit/scripts" "$kit/bench" "$kit/data"
cp -r "$src/scripts/." "$kit/scripts/"  # sweep files name the Slurm templates there
cp "$root/scripts/gpu-bench.sh" "$root/scripts/device-kit/"*.sh "$kit/scripts/"
torch_ref=${ZEROMINI_TORCH_GPT_REF:-}
if [[ -z $torch_ref ]]; then
  dir=$root
  while [[ $dir != / && -z $torch_ref ]]; do
    dir=$(dirname "$dir")
    [[ -f $dir/shared/bench/torch_gpt_ref.py ]] && torch_ref=$dir/shared/bench/torch_gpt_ref.py
  done
fi
if [[ -n $torch_ref && -f $torch_ref ]]; then
  cp "$torch_ref" "$kit/bench/torch_gpt_ref.py"
else
  echo "device-kit: WARNING: no shared/bench/torch_gpt_ref.py beside the clone (ZEROMINI_TORCH_GPT_REF):" \
    "the perf step will have no PyTorch figures" >&2
fi
python3 "$src/scripts/text-to-shard.py" "$src/README.md" "$kit/data/readme-tokens.bin" >/dev/null
{
  echo "flavor=$flavor"
  echo "revision=$(revision)"
  echo "packed=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "torch_ref=$([[ -f $kit/bench/torch_gpt_ref.py ]] && echo yes || echo missing)"
  # The GPU architecture the build was compiled for (ZEROMINI_CUDA_ARCH, the preset's -arch).
  [[ $flavor != cuda ]] ||
    echo "cuda_arch=$(sed -n 's/^CMAKE_CXX_FLAGS:STRING=.*-arch=\(sm_[0-9]*\).*/\1/p' "$build/CMakeCache.txt")"
  # A cuda build loads the driver: CUDA's stub library stands in for it here.
  stub=$stage/stub && mkdir -p "$stub"
  [[ -f /usr/local/cuda/lib64/stubs/libcuda.so ]] && ln -s /usr/local/cuda/lib64/stubs/libcuda.so "$stub/libcuda.so.1"
  LD_LIBRARY_PATH=$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$kit/bin/zeromini" --version 2>/dev/null |
    head -3 | sed 's/^/version: /' || true
} >"$kit/KIT-INFO"

# No host path may be left in the kit's text files (the binaries' __FILE__ strings are not used):
# none of this machine's directories anywhere, and in what the kit generated (the ctest tree,
# tests.list) no interpreter or launcher of this machine either (copied scripts and decks may
# name /usr/bin/python3 in their comments).
host_dirs=("$root/" "$src/" "$build")
if found=$(grep -rIlF "${host_dirs[@]/#/-e}" "$kit" --exclude=README.md) ||
  found=$(grep -rIlF -e /usr/bin/python3 -e /usr/bin/mpiexec "$kit/build" "$kit/tests.list"); then
  echo "device-kit: host paths left in: $found" >&2
  exit 1
fi

mkdir -p "$out"
rm -rf "$out/kit" "$out/zeromini-kit.tar.xz"
# The programs share most of their bytes (the same libraries and CUDA kernels linked into each),
# but far apart in the tar: one stream with a dictionary over the whole kit finds them, where xz's
# default (8 MiB, or blocks per thread) does not (the cuda kit: 29 MiB instead of 59). Preset 2's
# quick match finder finds those long matches in a minute; preset 6 saves 4 MiB more in three.
# It takes about 1 GiB to pack and the dictionary's size to unpack.
tar -C "$stage" -cf - kit | xz --lzma2=preset=2,dict=384MiB -T1 >"$out/zeromini-kit.tar.xz"
cp "$root/scripts/device-kit/check.sh" "$out/check.sh"
# xz itself, for machines without it (a bare Debian has liblzma but no xz).
cp -L "$(command -v xz)" "$out/xz"
cp -L "$(ldd "$(command -v xz)" | awk '/liblzma/ {print $3}')" "$out/liblzma.so.5"
patchelf --set-rpath '$ORIGIN' "$out/xz"
size=$(stat -c %s "$out/zeromini-kit.tar.xz")
echo "device-kit: $out: $(du -sh "$kit" | cut -f1) unpacked, archive $((size / 1024 / 1024)) MiB" \
  "($(ls "$kit/bin" | wc -l) programs, $(ls "$kit/lib" | wc -l) libraries, $(grep -vc '^#' "$kit/tests.list") tests)"
if ((size > 60 * 1024 * 1024)); then
  echo "device-kit: the archive is over 60 MiB" >&2
  exit 1
fi
