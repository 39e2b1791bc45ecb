#!/bin/sh
# Gives a gpuforge test host (tests/testbed) ONE STAND-IN InfiniBand HCA in sysfs, so that what
# reads /sys/class/infiniband (the facts gather script's infiniband section, and with it `init`,
# `facts --check` and `init --subnet-from`) runs end to end on a host with a different NIC. Run
# it as root ON a test host, never on this machine:
#
#   ssh -F DIR/ssh_config tb05 sh -s DEVICE NODE_GUID < tests/testbed/hca_standin.sh
#
# e.g. `mlx5_0 0002:c903:0001:0001`. The host's kernel is this machine's and has no RDMA
# support, so there is no /sys/class/infiniband to add to, and sysfs is read-only: this script
# mounts a tmpfs over /sys/class in the host's own mount namespace, holding a link to every
# class directory entry the kernel has (relative links, as sysfs has, so they still resolve to
# /sys/devices) plus /sys/class/infiniband/DEVICE as plain files. The files hold what the
# mlx5 driver writes for a ConnectX-7 port at 4X NDR (the attribute formats of
# drivers/infiniband/core/sysfs.c: state "4: ACTIVE", phys_state "5: LinkUp", rate
# "400 Gb/sec (4X NDR)", node_guid as four colon-separated 16-bit groups; fw_ver and board_id
# as tests/data/facts/infiniband-sysfs.txt records them). Only sysfs is faked: there is no
# PCI function behind it (a directory outside /sys/devices would make the pci-tree section
# unreadable), no verbs device and no traffic. Running it again adds another DEVICE.
set -eu
umask 022

die() {
  echo "hca_standin.sh: $*" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || die "must run as root (on a test host)"
if [ ! -f /etc/ssh/testbed/sshd_config ] ||
  ! tr '\0' ' ' </proc/1/cmdline 2>/dev/null | grep -q 'testbed\.sh __init '; then
  die "this is not a gpuforge test host (tests/testbed); refusing to mount over its /sys/class"
fi
[ $# = 2 ] || die "usage: hca_standin.sh DEVICE NODE_GUID (e.g. mlx5_0 0002:c903:0001:0001)"
dev=$1
guid=$2
case $dev in
  "" | *[!a-z0-9_]*) die "DEVICE must be letters, digits and _ (got '$dev')" ;;
esac
case $guid in
  [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f][0-9a-f][0-9a-f]) ;;
  *) die "NODE_GUID must be four groups of four lower-case hex digits joined by ':' (got '$guid')" ;;
esac

if [ "$(stat -f -c %T /sys/class)" != tmpfs ]; then
  c=/run/gpuforge-testbed-sysclass
  mkdir -p "$c"
  mount -t tmpfs -o mode=0755,size=8m,nosuid,nodev,noexec gpuforge-testbed-sysclass "$c"
  for d in /sys/class/*; do
    k=${d##*/}
    mkdir "$c/$k"
    for e in "$d"/*; do
      [ -L "$e" ] || continue
      ln -s "$(readlink "$e")" "$c/$k/${e##*/}"
    done
  done
  mount --bind "$c" /sys/class
fi

d=/sys/class/infiniband/$dev
[ ! -e "$d" ] || die "$d already exists"
mkdir -p "$d/ports/1/gids"
echo 28.39.1002 >"$d/fw_ver"
echo MT_0000000838 >"$d/board_id"
echo "$guid" >"$d/node_guid"
echo "4: ACTIVE" >"$d/ports/1/state"
echo "5: LinkUp" >"$d/ports/1/phys_state"
echo "400 Gb/sec (4X NDR)" >"$d/ports/1/rate"
echo InfiniBand >"$d/ports/1/link_layer"
echo 0xa >"$d/ports/1/lid"
echo "fe80:0000:0000:0000:$guid" >"$d/ports/1/gids/0"
echo "hca_standin: $d (port 1 ACTIVE, 4X NDR, node GUID $guid)"
