#!/usr/bin/env bash
# Local SSH test hosts for gpuforge's tests and benchmarks: each host is a copy-on-write clone of
# this machine's root (an overlay in its own mount, pid and UTS namespace, optionally its own
# network namespace) running a real OpenSSH sshd. See README.md beside this file.
#
#   testbed.sh up --dir DIR --hosts N [--netns] [--port P] [--stand-in-gpu FIXTURE_DIR]
#                 [--lifeline-fd FD]
#   testbed.sh down --dir DIR
#   testbed.sh stop-host|start-host|hang-host|cut-link|restore-link DIR I
#   testbed.sh delay DIR I MS
#
# Exit codes: 0 done, 1 failed, 2 usage, 3 unsupported here (delay without netem or netns).
set -euo pipefail
umask 022
export LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin

SELF=$(readlink -f "${BASH_SOURCE[0]}")
readonly SELF
# Slot locks: a testbed owns slot K while any of its hosts holds K's lock, which keeps its
# addresses (127.(64+K).0.0/16, 198.18.0.0/15 + K*2048) and veth names (gfbKK-I) to itself.
readonly SLOT_DIR=/run/gpuforge-testbed
readonly MAX_SLOTS=64
readonly MAX_HOSTS=1000
readonly TMPFS_SIZE=${TESTBED_TMPFS_SIZE:-2g}
readonly READY_TIMEOUT_S=${TESTBED_READY_TIMEOUT_S:-120}
readonly GPU_USER=gpuforge

die() {
  echo "testbed: $*" >&2
  exit 1
}

usage() {
  sed -n '6,12s/^# \{0,1\}//p' "$SELF" >&2
  exit 2
}

# ---- addresses and names -------------------------------------------------------------------

host_name() { printf 'tb%0*d' "$WIDTH" "$1"; }

# Host I (1-based) of slot SLOT in loopback mode: 127.(64+SLOT).(I-1)/250.(I-1)%250+1.
loop_addr() { echo "127.$((64 + SLOT)).$((($1 - 1) / 250)).$((($1 - 1) % 250 + 1))"; }

# 198.18.0.0/15 split into 64 blocks of 2048; host I gets the /31 at block + 2*I: the even
# address is the machine's end of the veth, the odd one the host's.
net_addr() {
  local off=$((SLOT * 2048 + 2 * $1 + $2))
  echo "198.$((18 + off / 65536)).$(((off / 256) % 256)).$((off % 256))"
}

host_addr() {
  if ((NETNS)); then net_addr "$1" 1; else loop_addr "$1"; fi
}

veth_name() { printf 'gfb%02x-%d' "$SLOT" "$1"; }
mac() { printf '02:67:%02x:%02x:%02x:%02x' "$2" "$SLOT" $(($1 / 256)) $(($1 % 256)); }

# ---- state -----------------------------------------------------------------------------------

set_paths() {
  DIR=$1
  TB=$DIR/.testbed
}

load_state() {
  [[ -f $TB/state ]] || return 1
  # shellcheck disable=SC1091
  source "$TB/state"
}

host_dir() { echo "$TB/hosts/$1"; }

# Prints the pid if the process is alive (not a zombie) and carries this testbed's marker.
ours() {
  local pid=$1 state args
  [[ $pid =~ ^[0-9]+$ && -r /proc/$pid/cmdline ]] || return 1
  read -r _ _ state _ 2>/dev/null <"/proc/$pid/stat" || return 1
  [[ $state != Z ]] || return 1
  mapfile -d '' -t args 2>/dev/null <"/proc/$pid/cmdline" || return 1
  local a
  for ((a = 0; a + 1 < ${#args[@]}; a++)); do
    if [[ ${args[a]} == __init || ${args[a]} == __watch ]] && [[ ${args[a + 1]} == "$DIR" ]]; then
      return 0
    fi
  done
  return 1
}

# ---- up --------------------------------------------------------------------------------------

claim_slot() {
  mkdir -p "$SLOT_DIR"
  local start k s busy_addrs listeners
  start=$(($(cksum <<<"$DIR" | cut -d' ' -f1) % MAX_SLOTS))
  busy_addrs=$(ip -o -4 addr show)
  listeners=$(ss -Hltn 2>/dev/null || true)
  for ((k = 0; k < MAX_SLOTS; k++)); do
    s=$(((start + k) % MAX_SLOTS))
    exec 6>"$SLOT_DIR/slot-$s.lock"
    if ! flock -n 6; then
      exec 6>&-
      continue
    fi
    # Someone else's addresses in the slot's range (not a testbed's, or one left without
    # its lock): leave the slot alone.
    SLOT=$s
    local o nets=()
    for ((o = 0; o < 8; o++)); do
      nets+=("$(net_addr $((128 * o)) 0)")
      nets[o]=${nets[o]%.*}
    done
    if grep -qE "inet ($(IFS='|'; echo "${nets[*]//./\.}"))\." <<<"$busy_addrs" ||
      grep -qE "[[:space:]]127\.$((64 + s))\.[0-9]+\.[0-9]+:" <<<"$listeners" ||
      ip -o link show 2>/dev/null | grep -q "$(printf 'gfb%02x-' "$s")"; then
      exec 6>&-
      continue
    fi
    echo "$DIR" >"$SLOT_DIR/slot-$s.owner"
    return 0
  done
  die "no free slot among $MAX_SLOTS in $SLOT_DIR: too many testbeds at once"
}

# Directories of the template get the real directory's mode and owner: in the overlay, an
# upper directory's attributes win over the lower one's.
mkdir_like() {
  local p
  for p; do
    mkdir -p "$T$p"
    chmod --reference="$p" "$T$p"
    chown --reference="$p" "$T$p"
  done
}

free_id() {
  local file=$1 id=$2
  while cut -d: -f3 "$file" | grep -qx "$id"; do id=$((id + 1)); done
  echo "$id"
}

# Files every host gets on top of the machine's root: the gpuforge user, keys, sudo rule, and
# optionally the stand-in nvidia-smi.
build_template() {
  T=$TB/template
  rm -rf "$T"
  mkdir -p "$T"
  mkdir_like /etc /etc/sudoers.d /etc/ssh /root /home /usr /usr/bin /usr/share
  local uid gid
  uid=$(free_id /etc/passwd 4200)
  gid=$(free_id /etc/group "$uid")
  cp -a /etc/passwd /etc/shadow /etc/group "$T/etc/"
  [[ -f /etc/gshadow ]] && cp -a /etc/gshadow "$T/etc/"
  echo "$GPU_USER:x:$uid:$gid:gpuforge testbed user:/home/$GPU_USER:/bin/sh" >>"$T/etc/passwd"
  echo "$GPU_USER:*:19000:0:99999:7:::" >>"$T/etc/shadow"
  echo "$GPU_USER:x:$gid:" >>"$T/etc/group"
  [[ -f $T/etc/gshadow ]] && echo "$GPU_USER:!::" >>"$T/etc/gshadow"
  echo "$GPU_USER ALL=(ALL:ALL) NOPASSWD: ALL" >"$T/etc/sudoers.d/$GPU_USER-testbed"
  chmod 0440 "$T/etc/sudoers.d/$GPU_USER-testbed"
  mkdir -p "$T/root/.ssh" "$T/home/$GPU_USER/.ssh"
  chmod 0755 "$T/home/$GPU_USER"
  chmod 0700 "$T/root/.ssh" "$T/home/$GPU_USER/.ssh"
  # A stock .bashrc for root: this machine's own may run slow or locking tools (pyenv init
  # rehashes, and waits 60 s on a lock another process holds) for every command sent over ssh.
  [[ -f /etc/skel/.bashrc ]] && cp /etc/skel/.bashrc "$T/root/.bashrc"
  cp "$DIR/id_ed25519.pub" "$T/root/.ssh/authorized_keys"
  cp "$DIR/id_ed25519.pub" "$T/home/$GPU_USER/.ssh/authorized_keys"
  chmod 0600 "$T/root/.ssh/authorized_keys" "$T/home/$GPU_USER/.ssh/authorized_keys"
  chown -R "$uid:$gid" "$T/home/$GPU_USER"
  if [[ -n $STAND_IN ]]; then
    mkdir -p "$T/usr/share/gpuforge-testbed/nvidia-smi"
    cp "$STAND_IN"/* "$T/usr/share/gpuforge-testbed/nvidia-smi/"
    write_stand_in >"$T/usr/bin/nvidia-smi"
    chmod 0755 "$T/usr/bin/nvidia-smi"
  fi

  # /dev of every host: a tmpfs filled from here, plus its own devpts.
  DT=$TB/dev
  rm -rf "$DT"
  mkdir -p "$DT/pts" "$DT/shm"
  chmod 1777 "$DT/shm"
  mknod -m 0666 "$DT/null" c 1 3
  mknod -m 0666 "$DT/zero" c 1 5
  mknod -m 0666 "$DT/full" c 1 7
  mknod -m 0666 "$DT/random" c 1 8
  mknod -m 0666 "$DT/urandom" c 1 9
  mknod -m 0666 "$DT/tty" c 5 0
  ln -s pts/ptmx "$DT/ptmx"
  ln -s /proc/self/fd "$DT/fd"
  ln -s /proc/self/fd/0 "$DT/stdin"
  ln -s /proc/self/fd/1 "$DT/stdout"
  ln -s /proc/self/fd/2 "$DT/stderr"
}

write_stand_in() {
  cat <<EOF
#!/bin/sh
# STAND-IN for nvidia-smi, not NVIDIA's program. gpuforge's testbed (tests/testbed/testbed.sh)
# put it into this test host's overlay so that GPU fact parsing runs end to end: it prints what
# the real nvidia-smi printed on a real machine (fixtures copied from $STAND_IN)
# for the arguments it knows, and refuses anything else with exit code 2.
d=/usr/share/gpuforge-testbed/nvidia-smi
case "\$*" in
  "") f=nvidia-smi.txt ;;
  "-q") f=nvidia-smi-q.txt ;;
  "-q -x" | "-x -q") f=nvidia-smi-q.xml ;;
  "-q -d PERFORMANCE,ECC,ROW_REMAPPER,PAGE_RETIREMENT,CLOCK,POWER,TEMPERATURE") f=q-health.txt ;;
  "topo -m") f=topo-m.txt ;;
  --query-gpu=*) f=query-gpu.csv ;;
  *)
    echo "nvidia-smi (testbed stand-in): no recorded output for arguments: \$*" >&2
    exit 2
    ;;
esac
if [ ! -f "\$d/\$f" ]; then
  echo "nvidia-smi (testbed stand-in): fixture \$f is missing" >&2
  exit 2
fi
exec cat "\$d/\$f"
EOF
}

# What differs between hosts: host key, sshd_config, hostname.
write_host_files() {
  local i=$1 name addr H E
  name=$(host_name "$i")
  addr=$(host_addr "$i")
  H=$(host_dir "$name")
  E=$H/extra
  mkdir -p "$E/etc/ssh/testbed" "$H/rw" "$H/root"
  echo "$name" >"$E/etc/hostname"
  {
    cat /etc/hosts
    echo "$addr $name"
  } >"$E/etc/hosts"
  cat >"$E/etc/ssh/testbed/sshd_config" <<EOF
# sshd of gpuforge testbed host $name (tests/testbed/testbed.sh); not this machine's sshd.
Port $PORT
ListenAddress $addr
AddressFamily inet
HostKey /etc/ssh/testbed/ssh_host_ed25519_key
PidFile /run/sshd.pid
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 100:30:200
Subsystem sftp internal-sftp
EOF
  mkfifo "$H/ctl" "$H/ack"
  ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$E/etc/ssh/testbed/ssh_host_ed25519_key"
}

launch_host() {
  local i=$1 name H netflag=()
  name=$(host_name "$i")
  H=$(host_dir "$name")
  ((NETNS)) && netflag=(--net)
  # setsid: the host outlives this script and ignores the terminal's signals; --kill-child:
  # killing the unshare process kills the host's pid 1 and with it every process in the host.
  setsid unshare --kill-child=SIGKILL --mount --pid --fork --uts "${netflag[@]}" \
    --propagation private /bin/bash "$SELF" __init "$DIR" "$i" \
    >"$H/init.log" 2>&1 </dev/null &
  echo "$!" >"$H/unshare.pid"
}

write_outputs() {
  local i name addr H pid key kh link
  {
    echo "# gpuforge testbed $DIR: $HOSTS hosts (tests/testbed/testbed.sh)"
    for ((i = 1; i <= HOSTS; i++)); do
      name=$(host_name "$i")
      addr=$(host_addr "$i")
      cat <<EOF

Host $name
  HostName $addr
  Port $PORT
  User root
  IdentityFile $DIR/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $DIR/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
EOF
    done
  } >"$DIR/ssh_config"
  : >"$DIR/known_hosts.tmp"
  printf '# name\taddress\tport\tpid\tlink\n' >"$DIR/hosts.tsv.tmp"
  for ((i = 1; i <= HOSTS; i++)); do
    name=$(host_name "$i")
    addr=$(host_addr "$i")
    H=$(host_dir "$name")
    read -r key <"$H/extra/etc/ssh/testbed/ssh_host_ed25519_key.pub"
    # ssh writes port 22 as the bare address and any other port as [address]:port.
    if ((PORT == 22)); then kh=$addr; else kh="[$addr]:$PORT"; fi
    echo "$kh ${key% *}" >>"$DIR/known_hosts.tmp"
    read -r pid <"$H/pid"
    if ((NETNS)); then link=$(veth_name "$i"); else link=-; fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$addr" "$PORT" "$pid" "$link" >>"$DIR/hosts.tsv.tmp"
  done
  mv "$DIR/known_hosts.tmp" "$DIR/known_hosts"
  mv "$DIR/hosts.tsv.tmp" "$DIR/hosts.tsv"
  write_inventory >"$DIR/inventory.yaml"
}

write_inventory() {
  local i
  cat <<EOF
# gpuforge testbed: $HOSTS local test hosts made by tests/testbed/testbed.sh in $DIR.
# Each is a clone of this machine in its own namespaces running a real sshd; nothing here is a
# real cluster. Host keys are in $DIR/known_hosts.
version: 1

cluster:
  name: testbed

defaults:
  ssh: {user: root, port: $PORT, identity_file: $DIR/id_ed25519}

profiles:
  testbed-host:
EOF
  if [[ -n $STAND_IN ]]; then
    cat <<EOF
    # The stand-in nvidia-smi prints fixtures recorded on one H200 (${STAND_IN}).
    gpus: {model: H200, count: 1}
EOF
  fi
  cat <<EOF
    cpu: {sockets: 1, cores_per_socket: $(nproc)}
    nics:
      - {name: eth0, kind: ethernet, rate: 10Gb/s, network: testbed, netdev: eth0}

networks:
  # The veth pairs (--netns) or loopback that carry SSH to the hosts.
  testbed: {role: compute, kind: ethernet, rate: 10Gb/s}

software:
  os: {distro: debian}
EOF
  if [[ -n $STAND_IN ]]; then
    cat <<EOF
  # What the recorded machine ran (fixtures README).
  driver: {branch: "580", version: "580.159.04"}
  cuda: "13.0"
  nccl: {version: "2.28.9"}
EOF
  fi
  cat <<EOF

lint:
  # Test hosts, not a cluster design: the sizing rules have nothing to judge.
  disable: [node.gpus_per_node, fabric.nic_rate, network.no_storage_network]

nodes:
EOF
  for ((i = 1; i <= HOSTS; i++)); do
    echo "  - {name: $(host_name "$i"), address: $(host_addr "$i"), profile: testbed-host}"
  done
}

cmd_up() {
  local dir="" hosts="" netns=0 port=22 stand_in="" lifeline=""
  while (($#)); do
    case $1 in
      --dir) dir=${2:?}; shift 2 ;;
      --hosts) hosts=${2:?}; shift 2 ;;
      --netns) netns=1; shift ;;
      --port) port=${2:?}; shift 2 ;;
      --stand-in-gpu) stand_in=${2:?}; shift 2 ;;
      --lifeline-fd) lifeline=${2:?}; shift 2 ;;
      *) usage ;;
    esac
  done
  [[ -n $dir && $hosts =~ ^[0-9]+$ ]] || usage
  ((hosts >= 1 && hosts <= MAX_HOSTS)) || die "--hosts must be 1 to $MAX_HOSTS"
  if ! [[ $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
    die "--port must be 1 to 65535"
  fi
  ((EUID == 0)) || die "needs root (mount, pid and network namespaces)"
  grep -qw overlay /proc/filesystems || die "this kernel has no overlayfs"
  if [[ -n $stand_in ]]; then
    [[ -f $stand_in/nvidia-smi.txt ]] || die "--stand-in-gpu $stand_in: no nvidia-smi.txt there"
    stand_in=$(readlink -f "$stand_in")
  fi
  [[ $dir != *[[:space:]]* ]] || die "--dir must not contain white space (it goes into ssh_config)"
  mkdir -p "$dir"
  set_paths "$(readlink -f "$dir")"
  if [[ -d $TB ]]; then
    local f p
    for f in "$TB"/hosts/*/pid; do
      [[ -f $f ]] && read -r p <"$f" && ours "$p" && die "$DIR: a testbed is up there; run down first"
    done
    cmd_down --dir "$DIR" >/dev/null 2>&1 || die "$DIR: down could not remove what was left there"
  fi
  mkdir -p "$TB/hosts"
  HOSTS=$hosts NETNS=$netns PORT=$port STAND_IN=$stand_in
  WIDTH=${#hosts}
  ((WIDTH < 2)) && WIDTH=2

  # Anything that fails from here on takes the half-built testbed down with it.
  # shellcheck disable=SC2154  # rc is set inside the trap.
  trap 'rc=$?; trap - EXIT; if ((rc)); then cmd_down --dir "$DIR" >/dev/null 2>&1 || true; fi; exit $rc' EXIT
  if [[ -n $lifeline ]]; then
    # The caller holds the pipe's other end; when it goes away (the test crashed), the
    # watcher takes the testbed down.
    setsid /bin/bash "$SELF" __watch "$DIR" <&"$lifeline" >/dev/null 2>&1 6>&- &
    echo "$!" >"$TB/watch.pid"
  fi
  claim_slot
  local v
  for v in SLOT HOSTS NETNS PORT WIDTH STAND_IN; do printf '%s=%q\n' "$v" "${!v}"; done >"$TB/state"

  ssh-keygen -q -t ed25519 -N '' -C "gpuforge-testbed" -f "$DIR/id_ed25519" <<<y >/dev/null
  build_template
  local i jobs=()
  for ((i = 1; i <= HOSTS; i++)); do
    write_host_files "$i" &
    jobs+=($!)
  done
  for i in "${jobs[@]}"; do wait "$i" || die "preparing the hosts' files failed"; done

  rm -f "$TB/ready"
  mkfifo "$TB/ready"
  exec 5<>"$TB/ready" 7</proc/self/ns/net
  for ((i = 1; i <= HOSTS; i++)); do launch_host "$i"; done

  local ready=0 word n msg t0=$SECONDS waited
  while ((ready < HOSTS)); do
    if read -r -t 1 -u 5 word n msg; then
      case $word in
        READY) ready=$((ready + 1)) ;;
        FAIL) die "host $n failed to come up: $msg (log: $(host_dir "$(host_name "$n")")/init.log)" ;;
      esac
      continue
    fi
    waited=$((SECONDS - t0))
    ((waited < READY_TIMEOUT_S)) || die "only $ready of $HOSTS hosts came up in ${READY_TIMEOUT_S}s"
    for ((i = 1; i <= HOSTS; i++)); do
      local up_pid
      read -r up_pid <"$(host_dir "$(host_name "$i")")/unshare.pid"
      if ! kill -0 "$up_pid" 2>/dev/null; then
        die "host $i exited while coming up: $(tail -n 5 "$(host_dir "$(host_name "$i")")/init.log")"
      fi
    done
  done
  exec 5>&- 7<&-
  rm -f "$TB/ready"
  write_outputs
  trap - EXIT
  echo "testbed: $HOSTS hosts up in $DIR ($( ((NETNS)) && echo netns || echo loopback), slot $SLOT)"
}

# ---- inside a host (pid 1 of its namespaces) -------------------------------------------------

host_init() {
  set_paths "$1"
  local i=$2
  load_state
  NAME=$(host_name "$i")
  ADDR=$(host_addr "$i")
  local H R outer
  H=$(host_dir "$NAME")
  R=$H/root
  # fd 5: the ready fifo, fd 6: the slot lock (held for as long as the host lives).
  trap 'echo "FAIL $i line $LINENO: $BASH_COMMAND" >&5; exit 1' ERR
  # This procfs is still the machine's: /proc/self is this process as the machine sees it.
  read -r outer _ </proc/self/stat
  echo "$outer" >"$H/pid"

  mount -t tmpfs -o "size=$TMPFS_SIZE,mode=0755" "testbed-$NAME" "$H/rw"
  mkdir "$H/rw/upper" "$H/rw/work"
  cp -a "$TB/template/." "$H/extra/." "$H/rw/upper/"
  mount -t overlay -o "lowerdir=/,upperdir=$H/rw/upper,workdir=$H/rw/work" "testbed-$NAME" "$R"
  # A test host starts as a node gpuforge has never touched: state a run on this machine left
  # (validate --local's /var/lib/gpuforge) is hidden by a whiteout in this host's upper layer,
  # never removed from the machine. Tests that count what apply created depended on its absence.
  rm -rf "$R/var/lib/gpuforge"
  mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
  echo "$NAME" >"$R/proc/sys/kernel/hostname"
  # The kernel is the machine's: sysctl writes would reach it, so /proc/sys and /sys are
  # read-only here.
  mount --bind "$R/proc/sys" "$R/proc/sys"
  mount -o remount,bind,ro "$R/proc/sys"
  mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"
  mount -t tmpfs -o mode=0755,size=64m,nosuid "testbed-dev" "$R/dev"
  cp -a "$TB/dev/." "$R/dev/"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$R/dev/pts"
  mount -t tmpfs -o mode=0755,size=64m,nosuid,nodev "testbed-run" "$R/run"
  mount -t tmpfs -o mode=1777,size=512m,nosuid,nodev "testbed-tmp" "$R/tmp"
  mkdir -p "$R/run/sshd"
  exec 8<>"$H/ctl" 9<>"$H/ack"
  cd "$R"
  pivot_root . .
  umount -l .
  cd /

  if ((NETNS)); then
    local veth mac_in mac_out in out
    veth=$(veth_name "$i")
    mac_in=$(mac "$i" 0x62)
    mac_out=$(mac "$i" 0x63)
    in=$(net_addr "$i" 1)
    out=$(net_addr "$i" 0)
    # fd 7 is the caller's network namespace: the machine's end of the veth goes there.
    ip link add eth0 address "$mac_in" type veth peer name "$veth" address "$mac_out" \
      netns /proc/self/fd/7
    nsenter --net=/proc/self/fd/7 ip -batch - <<EOF
link set $veth addrgenmode none
addr add $out/31 dev $veth
link set $veth up
neigh replace $in lladdr $mac_in dev $veth nud permanent
EOF
    ip -batch - <<EOF
link set lo up
link set eth0 addrgenmode none
addr add $in/31 dev eth0
link set eth0 up
neigh replace $out lladdr $mac_out dev eth0 nud permanent
EOF
    NEIGH=(neigh replace "$out" lladdr "$mac_out" dev eth0 nud permanent)
  fi
  exec 7>&-

  sshd_start || {
    echo "FAIL $i sshd did not start" >&5
    exit 1
  }
  echo "READY $i" >&5
  exec 5>&-
  trap - ERR
  set +e
  serve
}

SSHD_PID="" HANG_PID="" NEIGH=()

sshd_start() {
  if [[ -n $SSHD_PID ]] && kill -0 "$SSHD_PID" 2>/dev/null; then return 0; fi
  rm -f /run/sshd.pid
  /usr/sbin/sshd -D -e -f /etc/ssh/testbed/sshd_config 5>&- 8>&- 9>&- &
  SSHD_PID=$!
  local t
  # sshd writes its pid file once it listens.
  for ((t = 0; t < 1000; t++)); do
    [[ -s /run/sshd.pid ]] && return 0
    if ! kill -0 "$SSHD_PID" 2>/dev/null; then
      wait "$SSHD_PID" || true
      SSHD_PID=""
      return 1
    fi
    sleep 0.01
  done
  return 1
}

sshd_stop() {
  [[ -n $SSHD_PID ]] || return 0
  kill -TERM "$SSHD_PID" 2>/dev/null || true
  wait "$SSHD_PID" 2>/dev/null || true
  SSHD_PID=""
  rm -f /run/sshd.pid
}

# A listener in sshd's place that completes the TCP handshake and then never says a word.
hang_start() {
  rm -f /run/testbed-hang.ready
  perl -e '
    use Socket;
    socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
    setsockopt($s, SOL_SOCKET, SO_REUSEADDR, 1);
    bind($s, pack_sockaddr_in($ARGV[1], inet_aton($ARGV[0]))) or die "bind: $!";
    listen($s, 128) or die "listen: $!";
    open(my $f, ">", "/run/testbed-hang.ready"); close($f);
    my @held;
    while (1) { my $c; push @held, $c if accept($c, $s); }
  ' "$ADDR" "$PORT" 5>&- 8>&- 9>&- &
  HANG_PID=$!
  local t
  for ((t = 0; t < 1000; t++)); do
    [[ -e /run/testbed-hang.ready ]] && return 0
    kill -0 "$HANG_PID" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

hang_stop() {
  [[ -n $HANG_PID ]] || return 0
  kill -KILL "$HANG_PID" 2>/dev/null || true
  wait "$HANG_PID" 2>/dev/null || true
  HANG_PID=""
}

ack() { echo "$1 $2" >&9; }

# Commands from outside arrive on the ctl fifo as "SEQ COMMAND [ARG]"; each gets "SEQ ok" or
# "SEQ error: ..." back on the ack fifo.
serve() {
  local seq cmd arg
  while :; do
    read -r seq cmd arg <&8 || continue
    case $cmd in
      start)
        hang_stop
        if sshd_start; then ack "$seq" ok; else ack "$seq" "error: sshd did not start"; fi
        ;;
      stop)
        hang_stop
        sshd_stop
        ack "$seq" ok
        ;;
      hang)
        sshd_stop
        if hang_start; then ack "$seq" ok; else ack "$seq" "error: the listener did not start"; fi
        ;;
      link-down)
        if ip link set eth0 down; then ack "$seq" ok; else ack "$seq" "error: ip link failed"; fi
        ;;
      link-up)
        # Taking a link down flushes its neighbours, the permanent one included.
        if ip link set eth0 up && ip "${NEIGH[@]}"; then ack "$seq" ok; else ack "$seq" "error: ip link failed"; fi
        ;;
      delay)
        local out
        if ((arg == 0)); then
          tc qdisc del dev eth0 root 2>/dev/null
          ack "$seq" ok
        elif out=$(tc qdisc replace dev eth0 root netem delay "${arg}ms" 2>&1); then
          ack "$seq" ok
        elif [[ $out == *"qdisc kind is unknown"* ]]; then
          ack "$seq" "unsupported: this kernel has no netem (CONFIG_NET_SCH_NETEM)"
        else
          ack "$seq" "error: tc: ${out//$'\n'/ }"
        fi
        ;;
      ping) ack "$seq" ok ;;
      *) ack "$seq" "error: unknown command $cmd" ;;
    esac
  done
}

# ---- commands on a running testbed -----------------------------------------------------------

# Sends COMMAND [ARG] to host I's pid 1 and waits for its answer; prints it.
host_cmd() {
  local i=$1 cmd=$2 arg=${3:-} name H pid lk c a seq s reply t
  load_state || die "$DIR: no testbed here"
  if ! [[ $i =~ ^[0-9]+$ ]] || ((i < 1 || i > HOSTS)); then
    die "host index must be 1 to $HOSTS"
  fi
  name=$(host_name "$i")
  H=$(host_dir "$name")
  read -r pid <"$H/pid" 2>/dev/null || die "host $name has no pid file"
  ours "$pid" || die "host $name is not running"
  exec {lk}>"$H/lock"
  flock "$lk"
  seq="$$-$RANDOM"
  exec {a}<>"$H/ack" {c}<>"$H/ctl"
  echo "$seq $cmd $arg" >&"$c"
  for ((t = 0; t < 60; t++)); do
    if read -r -t 1 -u "$a" s reply; then
      [[ $s == "$seq" ]] && break
      continue
    fi
    ours "$pid" || die "host $name exited"
  done
  ((t < 60)) || die "host $name did not answer '$cmd' within 60s"
  case $reply in
    ok) return 0 ;;
    unsupported:*)
      echo "testbed: $name: $reply" >&2
      exit 3
      ;;
    *) die "$name: $cmd: $reply" ;;
  esac
}

cmd_host() {
  local verb=$1
  (($# >= 3)) || usage
  set_paths "$(readlink -f "$2")"
  local i=$3
  case $verb in
    stop-host) host_cmd "$i" stop ;;
    start-host) host_cmd "$i" start ;;
    hang-host) host_cmd "$i" hang ;;
    cut-link | restore-link | delay)
      load_state || die "$DIR: no testbed here"
      if ((!NETNS)); then
        echo "testbed: $verb needs a testbed brought up with --netns" >&2
        exit 3
      fi
      case $verb in
        cut-link) host_cmd "$i" link-down ;;
        restore-link) host_cmd "$i" link-up ;;
        delay)
          [[ ${4:-} =~ ^[0-9]+$ ]] || usage
          host_cmd "$i" delay "$4"
          ;;
      esac
      ;;
  esac
}

# ---- down ------------------------------------------------------------------------------------

cmd_down() {
  [[ ${1:-} == --dir && -n ${2:-} ]] || usage
  [[ -d $2 ]] || return 0
  set_paths "$(readlink -f "$2")"
  [[ -d $TB ]] || return 0
  local SLOT="" NETNS=0 pids=() p f
  load_state 2>/dev/null || true

  if [[ -f $TB/watch.pid ]]; then
    read -r p <"$TB/watch.pid" || true
    if [[ $p != "$$" ]] && ours "$p"; then pids+=("$p"); fi
  fi
  for f in "$TB"/hosts/*/unshare.pid "$TB"/hosts/*/pid; do
    [[ -f $f ]] || continue
    read -r p <"$f" || continue
    ours "$p" && pids+=("$p")
  done
  # Hosts whose pid files were never written (a crash mid-up) still carry the marker.
  for f in /proc/[0-9]*; do
    p=${f#/proc/}
    [[ $p != "$$" ]] || continue
    ours "$p" && pids+=("$p")
  done
  if ((${#pids[@]})); then
    kill -KILL "${pids[@]}" 2>/dev/null || true
    local t left
    for ((t = 0; t < 200; t++)); do
      left=0
      for p in "${pids[@]}"; do ours "$p" && left=1; done
      ((left)) || break
      sleep 0.05
    done
    ((!left)) || die "processes ${pids[*]} of $DIR survived SIGKILL"
  fi
  # A network namespace goes away a moment after its last process; its veth with it.
  if [[ -n $SLOT ]]; then
    local prefix links t
    prefix=$(printf 'gfb%02x-' "$SLOT")
    for ((t = 0; t < 100; t++)); do
      links=$(ip -o link show | grep -o "${prefix}[0-9]*" || true)
      [[ -n $links ]] || break
      sleep 0.05
    done
    for p in $links; do ip link del "$p" 2>/dev/null || true; done
    if [[ -f $SLOT_DIR/slot-$SLOT.owner && $(<"$SLOT_DIR/slot-$SLOT.owner") == "$DIR" ]]; then
      rm -f "$SLOT_DIR/slot-$SLOT.owner"
    fi
  fi
  rm -rf "$TB"
  rm -f "$DIR"/{id_ed25519,id_ed25519.pub,known_hosts,known_hosts.tmp,ssh_config,hosts.tsv} \
    "$DIR"/{hosts.tsv.tmp,inventory.yaml}
  rmdir "$DIR" 2>/dev/null || true
}

# Waits for the lifeline (stdin) to close, then takes the testbed down.
watch_lifeline() {
  set_paths "$1"
  while read -r _; do :; done
  exec /bin/bash "$SELF" down --dir "$DIR"
}

main() {
  (($#)) || usage
  local verb=$1
  shift
  case $verb in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    stop-host | start-host | hang-host | cut-link | restore-link | delay) cmd_host "$verb" "$@" ;;
    __init) host_init "$@" ;;
    __watch) watch_lifeline "$@" ;;
    -h | --help | help) usage ;;
    *) usage ;;
  esac
}

main "$@"
