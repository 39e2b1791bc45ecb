#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test run: installs the packages,
# builds with AddressSanitizer + UndefinedBehaviorSanitizer and warnings as errors, runs
# every test with CTest, then runs each fuzz target for a few seconds. Extra arguments go to
# ctest (e.g. -R Lint, or -LE slow for all but the SSH, netns and daemon tests) and leave the
# fuzz targets out.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUFORGE_SANITIZE=ON -DGPUFORGE_WERROR=ON
cmake --build build-test
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-test --output-on-failure -j "$(nproc)" "$@"
# Then, for a whole run (no ctest arguments), each fuzz target for a few seconds (tests/fuzz).
(($#)) || scripts/fuzz-smoke.sh
