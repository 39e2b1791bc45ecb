#!/usr/bin/env bash
# Builds STAND-IN .deb packages for gpuforge's tests and makes OUTDIR a flat apt repository of
# them, so that package installs (driver, CUDA, NCCL, DCGM, RDMA, Slurm) can be tested on the
# local test hosts without NVIDIA's, Mellanox's or SchedMD's repositories and without network.
# A stand-in is not the real package: it ships /usr/share/doc/NAME/STAND-IN saying so and, when
# asked, a trivial systemd unit; nothing else, and no maintainer scripts.
#
#   debrepo.sh OUTDIR SPEC...
#     SPEC = NAME=VERSION[,unit=UNIT][,depends=DEP]...
#       unit=UNIT     ship /lib/systemd/system/UNIT.service (a unit that would run `sleep`)
#       depends=DEP   a Depends entry, e.g. depends=libnccl2 or "depends=libnccl2 (= 2.28.9-1)";
#                     repeat it for several
#
# OUTDIR gets NAME_VERSION_all.deb per SPEC (added to any .debs already there) and Packages,
# Packages.gz and Release covering every .deb in it (several versions of one name included).
# On a host: deb [trusted=yes] file:/srv/gpuforge-repo ./
#
# Refuses a stand-in that would ship a file another installed package of this machine owns (this
# machine's / is every test host's lower layer, so dpkg there would refuse it too), and warns
# when NAME is installed here at a version the stand-in does not exceed (apt in a host would
# then keep the real one unless the version is pinned).
#
# Exit codes: 0 done, 1 failed, 2 usage. Needs dpkg-deb, dpkg-scanpackages (dpkg-dev), gzip.
set -euo pipefail
umask 022
export LC_ALL=C

SELF=$(readlink -f "${BASH_SOURCE[0]}")
readonly SELF

die() {
  echo "debrepo: $*" >&2
  exit 1
}

usage() {
  sed -n '8,12s/^# \{0,1\}//p' "$SELF" >&2
  exit 2
}

# Writes the package tree for one SPEC under $1 and prints NAME VERSION.
make_tree() {
  local root=$1 spec=$2 name version unit="" deps=() field rest
  rest=${spec#*,}
  [[ $rest == "$spec" ]] && rest=""
  field=${spec%%,*}
  [[ $field == *=* ]] || die "$spec: expected NAME=VERSION"
  name=${field%%=*}
  version=${field#*=}
  # Policy's rule (dpkg itself also takes upper case).
  [[ $name =~ ^[a-z0-9][a-z0-9+.-]+$ ]] || die "$spec: '$name' is not a package name"
  dpkg --validate-version "$version" >/dev/null 2>&1 || die "$spec: '$version' is not a version"
  local IFS=,
  for field in $rest; do
    case $field in
      unit=?*)
        unit=${field#unit=}
        unit=${unit%.service}
        [[ $unit =~ ^[A-Za-z0-9:_.@-]+$ ]] || die "$spec: '$unit' is not a unit name"
        ;;
      depends=?*) deps+=("${field#depends=}") ;;
      *) die "$spec: unknown field '$field' (want unit= or depends=)" ;;
    esac
  done
  unset IFS

  mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$name"
  cat >"$root/usr/share/doc/$name/STAND-IN" <<EOF
This is a gpuforge testbed STAND-IN, not the real $name package.

tests/testbed/debrepo.sh built it (version $version) so that gpuforge's tests can install,
pin and upgrade a package of this name on local test hosts without the real repository. It
contains nothing but this file$([[ -n $unit ]] && echo " and a trivial unit, /lib/systemd/system/$unit.service").
EOF
  if [[ -n $unit ]]; then
    mkdir -p "$root/lib/systemd/system"
    cat >"$root/lib/systemd/system/$unit.service" <<EOF
# gpuforge testbed STAND-IN for $unit.service of $name $version (tests/testbed/debrepo.sh):
# not the real unit. Test hosts have no systemd; the stand-in systemctl only reads that this
# file exists, whether it has ExecReload= and its [Install] section.
[Unit]
Description=gpuforge testbed stand-in for $unit ($name $version)

[Service]
Type=simple
ExecStart=/bin/sleep infinity
ExecReload=/bin/kill -HUP \$MAINPID

[Install]
WantedBy=multi-user.target
EOF
  fi
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: all"
    echo "Maintainer: gpuforge testbed <testbed@gpuforge.invalid>"
    echo "Section: misc"
    echo "Priority: optional"
    if ((${#deps[@]})); then
      local joined
      printf -v joined '%s, ' "${deps[@]}"
      echo "Depends: ${joined%, }"
    fi
    echo "Description: gpuforge testbed STAND-IN for $name (not the real package)"
    echo " Built by gpuforge's tests/testbed/debrepo.sh for tests on local test hosts."
    echo " It ships only /usr/share/doc/$name/STAND-IN${unit:+ and $unit.service}."
  } >"$root/DEBIAN/control"
  echo "$name $version"
}

# A stand-in must not take over another installed package's files: dpkg on a host (whose
# lower layer is this machine) would refuse to unpack it, or worse, divert what a test relies on.
check_collisions() {
  local root=$1 name=$2 f owner
  while IFS= read -r f; do
    f=${f#.}
    owner=$(dpkg-query -S "$f" 2>/dev/null | sed -n 's/: .*//p' | head -n 1) || true
    [[ -z $owner ]] && continue
    local o
    for o in ${owner//, / }; do
      o=${o%%:*}
      [[ $o == "$name" ]] && continue
      die "$name: $f belongs to the installed package $o on this machine (every test host's lower layer); pick another name or unit"
    done
  done < <(cd "$root" && find . -path ./DEBIAN -prune -o ! -type d -print)
}

warn_installed() {
  local name=$1 version=$2 have
  have=$(dpkg-query -W -f '${db:Status-Abbrev} ${Version}' "$name" 2>/dev/null) || return 0
  [[ $have == ii* ]] || return 0
  have=${have##* }
  if ! dpkg --compare-versions "$version" gt "$have"; then
    echo "debrepo: warning: $name $have is installed on this machine, so on every test host;" \
      "the stand-in $version does not exceed it (install it pinned, or remove the real one in the host first)" >&2
  fi
}

write_release() {
  local out=$1 f
  {
    echo "Origin: gpuforge-testbed"
    echo "Label: gpuforge testbed stand-ins"
    echo "Suite: testbed"
    echo "Codename: testbed"
    echo "Date: $(date -u -R ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH})"
    echo "Description: STAND-IN packages for gpuforge's tests (tests/testbed/debrepo.sh), not real packages"
    echo "SHA256:"
    for f in Packages Packages.gz; do
      printf ' %s %s %s\n' "$(sha256sum "$out/$f" | cut -d' ' -f1)" "$(stat -c %s "$out/$f")" "$f"
    done
  } >"$out/Release"
}

main() {
  (($# >= 2)) || usage
  [[ $1 != -* ]] || usage
  local out=$1
  shift
  local tool
  for tool in dpkg-deb dpkg-scanpackages gzip sha256sum; do
    command -v "$tool" >/dev/null || die "$tool is not installed (dpkg-scanpackages comes with dpkg-dev)"
  done
  mkdir -p "$out"
  out=$(readlink -f "$out")
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/debrepo.XXXXXX")
  # shellcheck disable=SC2064  # work is fixed now.
  trap "rm -rf '$work'" EXIT

  local spec i=0 nv name version deb
  for spec; do
    i=$((i + 1))
    nv=$(make_tree "$work/$i" "$spec")
    read -r name version <<<"$nv"
    check_collisions "$work/$i" "$name"
    warn_installed "$name" "$version"
    # Like dpkg-name and the archive: no epoch in the file name.
    deb="$out/${name}_${version#*:}_all.deb"
    dpkg-deb --root-owner-group -Zgzip --build "$work/$i" "$deb" >/dev/null ||
      die "$spec: dpkg-deb failed"
  done

  # --multiversion: two versions of one package (for pinning tests) both go into the index.
  (cd "$out" && dpkg-scanpackages --multiversion . /dev/null >"$work/Packages" 2>"$work/scan.log") ||
    die "dpkg-scanpackages failed: $(cat "$work/scan.log")"
  mv "$work/Packages" "$out/Packages"
  gzip -9nc "$out/Packages" >"$out/Packages.gz"
  write_release "$out"
}

main "$@"
