#!/usr/bin/env bash
# The isolation planner and judge (#32) on simulated nodes: rounds, waves and pair runs to name
# one bad node and one bad cable, and the planning cost per node at each size (linear growth
# keeps "us per node" flat). Compiles bench/isolate/sim.cc with the planner's one source file,
# optimised, into a temporary directory. Usage: bench/isolate/run.sh [SIZES...]; RUNS=5 seeds.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${CXX:-c++}" -O2 -DNDEBUG -std=c++20 -Iinclude bench/isolate/sim.cc src/validate/isolate.cc -lfmt -o "$tmp/sim"
"$tmp/sim" "$@"
