#!/usr/bin/env bash
# Packs a Release gpuforge for the lent GPU machine, which cannot build it (no yaml-cpp, libssh,
# fmt, spdlog or CLI11 development packages there, and no network).
#
#   bench/gpu/pack.sh [--build-dir DIR] [--nccl-tests SRC]
#
# 1. Builds the gpuforge target into build-bench/ (Release, no tests, no sanitizer); ninja does
#    nothing when it is up to date.
# 2. Writes bench/gpu/carry/: gpuforge (a stripped copy), lib/ with every shared library ldd
#    lists for it except glibc's, libstdc++ and libgcc_s (so libyaml-cpp, libssh, libfmt,
#    libspdlog, libpugixml and what they pull in: libcrypto, libz, Kerberos...), and
#    MANIFEST.txt (what was packed, and the newest glibc/libstdc++ symbol versions the binary
#    and the libraries need, which the device's system libraries must have).
# 3. With --nccl-tests SRC (a checkout of github.com/NVIDIA/nccl-tests; the tool library's
#    `fetch` brings one): builds its all_reduce_perf (no MPI, sm_90 and sm_100 SASS, NCCL and
#    CUDA from /usr/local/cuda) into DIR/nccl-tests and copies it to carry/nccl-tests/, for
#    node_checks.sh's nccl-tests rows and the topology check. It links libnccl.so.2 and
#    libcudart.so.13 dynamically: the device's own (or PyTorch's) are used there.
# 4. Prints the carry's size and fails above 60 MiB (the device tool carries 64 MiB in all).
#
# The NVIDIA libraries (libcuda, libnvidia-ml, libcublasLt, libnccl) are not packed: gpuforge
# opens them with dlopen, and on the device they come from the driver and from PyTorch's
# wheels (bench/gpu/run.sh puts those on LD_LIBRARY_PATH).
#
# Then, with the device tool: run with carry ["bench/gpu/carry"] and command bench/gpu/run.sh.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$REPO/build-bench"
CARRY="$REPO/bench/gpu/carry"
LIMIT_MIB=60
NCCL_TESTS_SRC=""

usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD="$2"; shift ;;
    --nccl-tests) NCCL_TESTS_SRC="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "pack: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

say() { echo "pack: $*"; }
die() { echo "pack: FAIL: $*" >&2; exit 1; }

# --- 1. build ----------------------------------------------------------------------------
gen=()
[ -f "$BUILD/CMakeCache.txt" ] || gen=(-G Ninja)
mkdir -p "$BUILD"
say "configuring $BUILD (Release, GPUFORGE_TESTS=OFF, GPUFORGE_SANITIZE=OFF)"
cmake -S "$REPO" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DGPUFORGE_TESTS=OFF \
  -DGPUFORGE_SANITIZE=OFF >"$BUILD/pack-configure.log" 2>&1 ||
  { tail -n 30 "$BUILD/pack-configure.log"; die "cmake configure failed (log above)"; }
grep -E '^-- gpuforge: ' "$BUILD/pack-configure.log" | sed 's/^-- /pack: /' || true
say "building the gpuforge target (nothing to do when up to date)"
cmake --build "$BUILD" --target gpuforge >"$BUILD/pack-build.log" 2>&1 ||
  { tail -n 40 "$BUILD/pack-build.log"; die "build failed (log above)"; }
tail -n 1 "$BUILD/pack-build.log" | sed 's/^/pack: /'
BIN="$BUILD/gpuforge"
[ -x "$BIN" ] || die "no $BIN after the build"
"$BIN" agent list >/dev/null 2>&1 || die "$BIN has no working 'agent list'"
# Without CUDA headers the GPU probes are built to SKIP no_cuda_headers: useless on the device.
cuda_inc="$(sed -n 's/^GPUFORGE_CUDA_INCLUDE:PATH=//p' "$BUILD/CMakeCache.txt")"
case "$cuda_inc" in
  ''|*NOTFOUND) die "this build has no CUDA headers (GPUFORGE_CUDA_INCLUDE): its GPU probes would only SKIP" ;;
esac

# --- 2. the carry directory --------------------------------------------------------------
# glibc's own libraries, the C++ runtime and the vDSO stay the device's.
is_system_lib() {
  case "$1" in
    linux-vdso.so.*|linux-gate.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libmvec.so.*) return 0 ;;
    libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*|libanl.so.*) return 0 ;;
    libnsl.so.*|libnss_*.so.*|libBrokenLocale.so.*|libthread_db.so.*|libc_malloc_debug.so.*) return 0 ;;
    libstdc++.so.*|libgcc_s.so.*) return 0 ;;
  esac
  return 1
}

TMP="$CARRY.tmp"
rm -rf "$TMP"
mkdir -p "$TMP/lib"
trap 'rm -rf "$TMP"' EXIT

cp "$BIN" "$TMP/gpuforge"
strip --strip-unneeded "$TMP/gpuforge"
"$TMP/gpuforge" agent list >/dev/null 2>&1 || die "the stripped copy does not run"

missing="$(ldd "$BIN" | grep 'not found' || true)"
[ -z "$missing" ] || die "ldd finds no library for: $missing"
packed=()
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] || continue  # the vDSO and the loader have no "=> path"
  is_system_lib "$name" && continue
  [ -f "$path" ] || die "ldd names $path for $name, which is not a file"
  cp -L "$path" "$TMP/lib/$name"
  packed+=("$name")
done < <(ldd "$BIN")
[ ${#packed[@]} -gt 0 ] || die "ldd listed no library to pack (is $BIN static?)"

if [ -n "$NCCL_TESTS_SRC" ]; then
  [ -f "$NCCL_TESTS_SRC/src/all_reduce.cu" ] || die "--nccl-tests $NCCL_TESTS_SRC is not an nccl-tests checkout"
  cuda_home="$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")"
  say "building nccl-tests' all_reduce_perf from $NCCL_TESTS_SRC ($cuda_home)"
  make -C "$NCCL_TESTS_SRC/src" -j"$(nproc)" CUDA_HOME="$cuda_home" NCCL_HOME="$cuda_home" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_100,code=sm_100" \
    BUILDDIR="$BUILD/nccl-tests" "$BUILD/nccl-tests/all_reduce_perf" >"$BUILD/pack-nccl-tests.log" 2>&1 ||
    { tail -n 30 "$BUILD/pack-nccl-tests.log"; die "nccl-tests build failed (log above)"; }
  mkdir -p "$TMP/nccl-tests"
  cp "$BUILD/nccl-tests/all_reduce_perf" "$TMP/nccl-tests/"
  strip --strip-unneeded "$TMP/nccl-tests/all_reduce_perf"
  echo "nccl-tests $(git -C "$NCCL_TESTS_SRC" rev-parse --short HEAD 2>/dev/null || echo "(no git)") from $NCCL_TESTS_SRC" \
    >"$TMP/nccl-tests/SOURCE.txt"
fi

# Nothing packed may need a library that is neither packed nor the system's.
for f in "$TMP/gpuforge" "$TMP"/lib/*; do
  lost="$(LD_LIBRARY_PATH="$TMP/lib" ldd "$f" | grep 'not found' || true)"
  [ -z "$lost" ] || die "$(basename "$f") needs a library that is not packed: $lost"
done

# The newest symbol versions needed from what stays the device's.
need_glibc="$(objdump -T "$TMP/gpuforge" "$TMP"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -n 1)"
need_glibcxx="$(objdump -T "$TMP/gpuforge" "$TMP"/lib/* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -u -V | tail -n 1)"

{
  echo "gpuforge carry, written by bench/gpu/pack.sh on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "version: $("$TMP/gpuforge" --version 2>/dev/null | head -n 1 || echo unknown)"
  echo "built from: $BUILD ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt"))"
  echo "cuda headers: $cuda_inc"
  echo "nccl headers: $(sed -n 's/^GPUFORGE_NCCL_INCLUDE:PATH=//p' "$BUILD/CMakeCache.txt")"
  echo "built on: $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | tr -d '"'), $(ldd --version | head -n 1)"
  echo "needs from the device: ${need_glibc:-?} (libc), ${need_glibcxx:-?} (libstdc++), libgcc_s"
  echo "sha256 gpuforge: $(sha256sum "$TMP/gpuforge" | cut -d' ' -f1)"
  echo "lib/:"
  for n in "${packed[@]}"; do printf '  %-28s %8d bytes\n' "$n" "$(stat -c %s "$TMP/lib/$n")"; done
  [ -f "$TMP/nccl-tests/SOURCE.txt" ] && echo "nccl-tests/all_reduce_perf: $(cat "$TMP/nccl-tests/SOURCE.txt")"
} >"$TMP/MANIFEST.txt"

bytes="$(du -sb "$TMP" | cut -f1)"
mib="$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
[ "$bytes" -le $((LIMIT_MIB * 1048576)) ] || die "the carry is $mib MiB, over the $LIMIT_MIB MiB limit"

rm -rf "$CARRY"
mv "$TMP" "$CARRY"
trap - EXIT
sed 's/^/pack: /' "$CARRY/MANIFEST.txt"
say "carry: $CARRY, $mib MiB (gpuforge $(du -k "$CARRY/gpuforge" | cut -f1) KiB + ${#packed[@]} libraries), under the $LIMIT_MIB MiB limit"
say "next: the device tool's run with carry [\"bench/gpu/carry\"] and command bench/gpu/run.sh"
