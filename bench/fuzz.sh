#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz) for MINUTES each and prints, per target, the
# executions, executions per second, corpus size and crashes found.
#
#   bench/fuzz.sh MINUTES [TARGET...]     (or 30s: seconds, for a quick look)
#
# JOBS=2 runs two targets at a time (default 1). The corpus of each target grows in
# build-fuzz/corpus/<target>/ from run to run (seeded from the fixtures); crash inputs land in
# build-fuzz/crashes/ with the fuzzer's log beside them. After a crash the target is started
# again on its corpus until its minutes are spent, so one shallow crash does not end the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/fuzz/lib.sh

arg="${1:?usage: bench/fuzz.sh MINUTES [TARGET...]}"
shift
if [[ "$arg" =~ ^([0-9]+)s$ ]]; then budget=${BASH_REMATCH[1]}; elif [[ "$arg" =~ ^[0-9]+$ ]]; then budget=$((arg * 60)); else
  echo "bench/fuzz.sh: MINUTES must be a whole number (or Ns for seconds), not '$arg'" >&2
  exit 2
fi
jobs="${JOBS:-1}"
targets=("$@")
((${#targets[@]})) || mapfile -t targets < <(fuzz_targets)

fuzz_build >/dev/null
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
mkdir -p "$FUZZ_BUILD_DIR/crashes"

run_one() {
  local target=$1 corpus="$FUZZ_BUILD_DIR/corpus/$1" end=$((SECONDS + budget))
  local runs=0 crashes=0 left n log
  fuzz_seed_corpus "$target" "$corpus"
  mapfile -t opts < <(fuzz_options "$target")
  while left=$((end - SECONDS)); ((left > 0)); do
    log="$results/$target.$crashes.log"
    if "$FUZZ_BUILD_DIR/tests/fuzz/$target" "${opts[@]}" -max_total_time="$left" \
        -artifact_prefix="$FUZZ_BUILD_DIR/crashes/$target-" "$corpus" >"$log" 2>&1; then
      n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
      runs=$((runs + ${n:-0}))
      break
    fi
    # A crash: libFuzzer prints no stats then, but its last status line has the count.
    n=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
    runs=$((runs + ${n:-0}))
    crashes=$((crashes + 1))
    cp "$log" "$FUZZ_BUILD_DIR/crashes/$target-$crashes.log"
  done
  local files
  files=$(find "$corpus" -type f | wc -l)
  printf '%-22s %12d %9d %7d %8d\n' "$target" "$runs" $((runs / budget)) "$files" "$crashes" \
    >"$results/$target.row"
}

printf '%-22s %12s %9s %7s %8s\n' target executions exec/s corpus crashes
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait
for t in "${targets[@]}"; do cat "$results/$t.row"; done
echo "($budget s per target, $jobs at a time; crashes under $FUZZ_BUILD_DIR/crashes)"
