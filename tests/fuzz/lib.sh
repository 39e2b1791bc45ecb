# Shared by scripts/fuzz-smoke.sh and bench/fuzz.sh (source it from the repository root).
# Builds the fuzz targets in build-fuzz and lays out each target's seed corpus.

# Where the targets are built; FUZZ_BUILD_DIR overrides.
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"

# The targets, in tests/fuzz/seeds.txt order.
fuzz_targets() {
  sed -n 's/^\(fuzz_[a-z_]*\):.*/\1/p' tests/fuzz/seeds.txt
}

# Configures (once) and builds every target with clang 16 (CC/CXX override), through ccache when
# it is there. -O1, as libFuzzer's documentation builds its targets (llvm.org/docs/LibFuzzer.html,
# "Fuzzer Usage": clang -g -O1 -fsanitize=fuzzer,address), with line tables only, as OSS-Fuzz's
# default CFLAGS have it: a crash's stack still names file:line, and the cold build (a third
# compile of half the library, on CI's 2 cores) is cheaper than at -O2 -g. -DNDEBUG as before.
fuzz_build() {
  local launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if [[ ! -f "$FUZZ_BUILD_DIR/CMakeCache.txt" ]]; then
    CC="${CC:-clang-16}" CXX="${CXX:-clang++-16}" cmake -S . -B "$FUZZ_BUILD_DIR" -G Ninja \
      -DGPUFORGE_FUZZ=ON -DGPUFORGE_TESTS=OFF -DGPUFORGE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" "${launcher[@]}" >/dev/null
  fi
  cmake --build "$FUZZ_BUILD_DIR" --target gpuforge_fuzz "$@"
}

# fuzz_seed_corpus TARGET DIR: copies the target's fixtures and checked-in seeds into DIR.
fuzz_seed_corpus() {
  local target=$1 dir=$2 line f
  mkdir -p "$dir"
  line=$(sed -n "s/^$target:\(.*\)/\1/p" tests/fuzz/seeds.txt)
  for f in $line tests/fuzz/corpus/"$target"/*; do
    [[ -f "$f" ]] && cp "$f" "$dir/seed-$(echo "$f" | tr '/' '_')"
  done
  return 0
}

# The libFuzzer options every run uses: the target's dictionary when there is one, a per-input
# time limit (a slow input is a finding too) and quiet output.
fuzz_options() {
  local target=$1
  local opts=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
  [[ -f "tests/fuzz/dict/$target.dict" ]] && opts+=("-dict=tests/fuzz/dict/$target.dict")
  printf '%s\n' "${opts[@]}"
}
