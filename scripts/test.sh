#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test run: installs the packages,
# builds with AddressSanitizer + UndefinedBehaviorSanitizer and warnings as errors, runs
# every test with CTest, then runs each fuzz target for a few seconds. Extra arguments go to
# ctest (e.g. -R Lint, or -LE slow for all but the SSH, netns and daemon tests) and leave the
# fuzz targets out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
# -g1: line tables and function names, which is all a sanitizer's stack trace prints; full -g
# spent about 7% more of the build (one test TU: 15.6 s against 14.5 s) writing variable
# locations nobody reads from a CI run. Reconfigure with -DCMAKE_CXX_FLAGS_DEBUG=-g to debug.
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUFORGE_SANITIZE=ON -DGPUFORGE_WERROR=ON \
  -DCMAKE_CXX_FLAGS_DEBUG=-g1
cmake --build build-test
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fuzz_build_pid=
if (($# == 0)); then
  # A whole run: the fuzz targets build (clang, build-fuzz/) at the lowest CPU priority while
  # CTest runs. The slow suites spend much of their time waiting (SSH hosts, namespaces shaped
  # to 400 Mbit/s, Slurm daemons), and a niced compile takes only the cycles they leave idle;
  # scripts/fuzz-smoke.sh then finds the targets built. A build that fails here is built again
  # there, which shows the error.
  # A session of its own (setsid), so that a failing CTest ends the whole build with the script.
  fuzz_log=$(mktemp)
  setsid nice -n 19 bash -c 'source tests/fuzz/lib.sh && fuzz_build' >"$fuzz_log" 2>&1 &
  fuzz_build_pid=$!
  trap '[[ -n "$fuzz_build_pid" ]] && kill -- "-$fuzz_build_pid" 2>/dev/null; rm -f "$fuzz_log"' EXIT
fi
ctest --test-dir build-test --output-on-failure -j "$(nproc)" "$@"
# Then, for a whole run (no ctest arguments), each fuzz target for a few seconds (tests/fuzz).
if [[ -n "$fuzz_build_pid" ]]; then
  wait "$fuzz_build_pid" || echo "test.sh: the fuzz build beside CTest failed; fuzz-smoke builds again" >&2
  fuzz_build_pid=
  scripts/fuzz-smoke.sh
fi
