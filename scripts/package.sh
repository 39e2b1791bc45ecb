#!/usr/bin/env bash
# Builds the Debian package: a release build in ./build (as scripts/setup.sh makes it), CPack's
# DEB generator with dependencies from dpkg-shlibdeps, then lintian, which must report no tag
# that cmake/debian/lintian-overrides does not explain. Prints the .deb's path last.
#   scripts/package.sh [BUILD_DIR]
# Install it with: apt install ./build/package/gpuforge_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/deps.sh --package
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFORGE_TESTS=OFF -DGPUFORGE_SANITIZE=OFF
fi
cmake --build "$build" --target gpuforge
out="$build/package"
rm -rf "$out"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out"
deb=$(ls "$out"/gpuforge_*.deb)
# Errors and warnings fail; the overrides the package installs are honoured (lintian reads them
# from the package itself), and each one says why it stays.
lintian --fail-on error,warning --tag-display-limit 0 "$deb"
echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"
