#!/usr/bin/env bash
# CI's fuzz step: builds the libFuzzer targets (tests/fuzz, clang 16, build-fuzz/) and runs each
# for a few seconds on its seed corpus (the fixtures and tests/fuzz/corpus). Fails on the first
# crash, leak, sanitizer report, broken invariant or slow input, leaving the input under
# build-fuzz/crashes/ and the fuzzer's report on stderr. FUZZ_SECONDS sets the time per target
# (default 5); extra arguments go to the build (e.g. -j1).
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/fuzz/lib.sh
seconds="${FUZZ_SECONDS:-5}"

start=$SECONDS
fuzz_build "$@"
echo "fuzz-smoke: built the targets in $((SECONDS - start)) s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
crashes="$FUZZ_BUILD_DIR/crashes"
mkdir -p "$crashes"
failed=()
for target in $(fuzz_targets); do
  fuzz_seed_corpus "$target" "$work/$target"
  mapfile -t opts < <(fuzz_options "$target")
  log="$work/$target.log"
  if "$FUZZ_BUILD_DIR/tests/fuzz/$target" "${opts[@]}" -max_total_time="$seconds" \
      -artifact_prefix="$crashes/$target-" "$work/$target" >"$log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz-smoke: $target: ${runs:-?} runs, no finding"
  else
    echo "fuzz-smoke: $target: FAILED, input under $crashes:" >&2
    grep -v '^#[0-9]' "$log" | tail -40 >&2
    failed+=("$target")
  fi
done
echo "fuzz-smoke: $(( $(fuzz_targets | wc -l) - ${#failed[@]} )) passed, ${#failed[@]} failed in $((SECONDS - start)) s"
((${#failed[@]} == 0))
