#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a built gpuforge in ./build:
# installs the packages, configures and builds (release flags, no sanitizers).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFORGE_TESTS=OFF -DGPUFORGE_SANITIZE=OFF
cmake --build build --target gpuforge
echo "setup: built $(pwd)/build/gpuforge"
