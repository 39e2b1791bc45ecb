#!/usr/bin/env bash
# Installs the Debian 12 packages gpuforge needs. Idempotent; run as root (CI and a fresh
# machine) or through sudo.
#   scripts/deps.sh          what building and running gpuforge needs (scripts/setup.sh)
#   scripts/deps.sh --package  that, and what makes and judges the .deb (scripts/package.sh)
#   scripts/deps.sh --test   that, and every real peer the tests drive (scripts/test.sh)
#   scripts/deps.sh --bench  that, the test packages, and Ansible for bench/
set -euo pipefail

build=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libcli11-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libssh-dev libssl-dev nlohmann-json3-dev
  libkainjow-mustache-dev libibverbs-dev librdmacm-dev libpugixml-dev
  # The build strips the pushed agent with objcopy (binutils).
  binutils
)
# dpkg-shlibdeps (dpkg-dev) gives the .deb its dependencies; lintian judges it.
package=(dpkg-dev lintian)
test=(
  libgtest-dev libgmock-dev
  # Real peers the tests compare against or drive: Slurm's hostlist tools and daemons,
  # ClusterShell's nodeset, OpenSSH for the remote layer, hyperfine for bench/.
  openssh-server openssh-client slurm-wlm slurm-client munge pdsh clustershell hyperfine
  # slurmdbd and the MariaDB server it stores into read the rendered accounting files.
  slurmdbd mariadb-server
  python3 python3-yaml
  # The local test hosts (tests/testbed) need namespaces, veth pairs and sudo inside a host;
  # promtool checks the rendered Prometheus rules.
  util-linux iproute2 sudo procps prometheus
  # gpuforge cabling's tests cable test hosts and stand-in switches with veth pairs, each end
  # running the real lldpd (docs/cabling.md).
  lldpd
  # apply's package tests build stand-in .debs (dpkg-deb) and index them (dpkg-scanpackages);
  # scripts/package.sh's .deb takes its dependencies from dpkg-shlibdeps (dpkg-dev too).
  dpkg-dev
  # Real consumers of what gpuforge writes: the Volcano CRD schemas are checked with
  # python3-jsonschema, JUnit XML with python3-junitparser and xmllint, the HTML acceptance
  # report in headless Chromium.
  python3-jsonschema python3-junitparser libxml2-utils chromium
  # scripts/fuzz-smoke.sh builds the libFuzzer targets (tests/fuzz) with clang 16: clang 14
  # refuses the C++20 lambdas that capture structured bindings, and the fuzzer runtime is in
  # the -rt- package.
  clang-16 libclang-rt-16-dev
  # The package test installs the .deb into a clean Debian 12 that debootstrap makes; bash,
  # zsh and fish run the completion scripts, groff and man-db read the manual pages.
  debootstrap zsh fish groff-base man-db
)
packages=("${build[@]}")
case "${1:-}" in
  --package) packages+=("${package[@]}") ;;
  --test) packages+=("${package[@]}" "${test[@]}") ;;
  # bench/ compares against Ansible too; it is large, so only `deps.sh --bench` installs it.
  --bench) packages+=("${package[@]}" "${test[@]}" ansible) ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--package|--test|--bench]" >&2; exit 2 ;;
esac
wanted=()
for p in "${packages[@]}"; do
  [[ "$p" == \#* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || wanted+=("$p")
done
if ((${#wanted[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "deps: installing ${wanted[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${wanted[@]}"
else
  echo "deps: all packages present"
fi
# lldpd's package starts the daemon in this machine's own network namespace, where it would
# send LLDP frames out of every real interface; the tests run their own lldpd inside network
# namespaces only (tests/testbed/fabric.sh), so the system one is stopped and disabled.
if [[ " ${wanted[*]-} " == *" lldpd "* ]] && command -v systemctl >/dev/null 2>&1 &&
  [ -d /run/systemd/system ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO systemctl disable --now lldpd || true
fi
