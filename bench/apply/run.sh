#!/usr/bin/env bash
# gpuforge plan/apply against an Ansible playbook that copies the same files (issue: bench/apply).
#
#   bench/apply/run.sh [--hosts 32] [--rounds 5] [--fanout 32] [--warmup 1] [--out DIR]
#                      [--gpuforge BIN] [--tools "gpuforge ansible"] [--no-stand-in-gpu]
#                      [--host-bashrc stock|machine]
#
# Each round, for each tool (the order rotated each round): bring up --hosts fresh test hosts
# (tests/testbed/testbed.sh, with the stand-in nvidia-smi so that render writes the GPU files,
# and the stand-in sysctl from standins.sh so that the `sysctl --system` handler can run, and
# with --host-bashrc stock (the default) Debian's stock /root/.bashrc in each host; none of that
# is timed), then time three runs with the same fanout:
#
#   phase        gpuforge                          ansible
#   first        apply --only files --yes          ansible-playbook site.yml   (fresh hosts)
#   rerun-check  plan --only files                 ansible-playbook --check --diff
#   rerun-plain  apply --only files --yes          ansible-playbook site.yml
#
# site.yml is written by gen_playbook.py from `gpuforge render` of the same inventory: one
# ansible.builtin.copy per file (root:root, the rendered mode, backup: yes), the parent
# directories a fresh host lacks, and the handler gpuforge runs for the same paths.
#
# Every run is checked (check.py: exit status, summary lines, per-host counts), and after each
# first run one host's files are compared with the render (sha256, mode, owner) over ssh; after
# Ansible's first run `gpuforge plan` must also find nothing to do. A failure stops the script
# with the output saved. --warmup rounds run the same way first and are not recorded.
# Writes OUT/raw.csv, OUT/env.txt and OUT/summary.md. The testbed is taken down on exit,
# failure or signal.
#
# Needs root (the testbed), ansible-playbook, GNU time (/usr/bin/time), nsenter, python3.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/apply
# shellcheck source=bench/lib/testbed_hosts.sh
source "$ROOT/bench/lib/testbed_hosts.sh"
TESTBED=$ROOT/tests/testbed/testbed.sh
STANDINS=$ROOT/tests/testbed/standins.sh
GPU_FIXTURE=$ROOT/tests/data/facts/nvidia-h200-1gpu
PY=/usr/bin/python3

HOSTS=32
ROUNDS=5
FANOUT=32
WARMUP=1
OUT=""
GPUFORGE=$ROOT/build/gpuforge
TOOLS="gpuforge ansible"
STAND_IN_GPU=1
HOST_BASHRC=stock

usage() {
  sed -n '3,6s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

while (($#)); do
  case $1 in
    --hosts) HOSTS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --fanout) FANOUT=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --gpuforge) GPUFORGE=$2; shift 2 ;;
    --tools) TOOLS=$2; shift 2 ;;
    --no-stand-in-gpu) STAND_IN_GPU=0; shift ;;
    --host-bashrc) HOST_BASHRC=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "run.sh: unknown argument $1" >&2; usage ;;
  esac
done
[[ $HOSTS =~ ^[1-9][0-9]*$ && $ROUNDS =~ ^[1-9][0-9]*$ && $FANOUT =~ ^[1-9][0-9]*$ &&
  $WARMUP =~ ^[0-9]+$ && $HOST_BASHRC =~ ^(stock|machine)$ ]] || usage

# gpuforge is needed by both sides: it renders what the playbook copies and cross-checks it.
[[ -x $GPUFORGE ]] || { echo "run.sh: no gpuforge binary at $GPUFORGE" >&2; exit 1; }
GPUFORGE=$(cd "$(dirname "$GPUFORGE")" && pwd)/$(basename "$GPUFORGE")
for t in $TOOLS; do
  case $t in
    gpuforge) ;;
    ansible) command -v ansible-playbook >/dev/null || { echo "run.sh: ansible-playbook is not installed" >&2; exit 1; } ;;
    *) echo "run.sh: unknown tool $t" >&2; exit 2 ;;
  esac
done
[[ -x /usr/bin/time ]] || { echo "run.sh: needs GNU time at /usr/bin/time" >&2; exit 1; }
read -ra TOOL_LIST <<<"$TOOLS"

[[ -n $OUT ]] || OUT=$(mktemp -d /tmp/gpuforge-apply.XXXXXX)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/gfa.XXXXXX)  # short: Ansible's ControlPath sockets live under it
D=$WORK/tb
RENDER=$WORK/render
PB=$WORK/ansible
: >"$WORK/ansible.cfg"
TB_UP=0
CG=""  # the cgroup of the run in progress

# Controller CPU of the whole process tree, detached processes included (Ansible's
# ControlPersist masters daemonize, so GNU time never waits for them): a cpuacct cgroup per run
# (cgroup v1 cpuacct.usage, or cgroup v2 cpu.stat usage_usec). Empty when neither is writable.
CG_ROOT=""
CG_KIND=""
probe_cgroup() {
  local d
  if [[ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]]; then
    d=/sys/fs/cgroup/cpuacct/gfa-probe-$$
    if mkdir "$d" 2>/dev/null; then rmdir "$d"; CG_ROOT=/sys/fs/cgroup/cpuacct; CG_KIND=v1; return; fi
  fi
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    d=/sys/fs/cgroup/gfa-probe-$$
    if mkdir "$d" 2>/dev/null; then rmdir "$d"; CG_ROOT=/sys/fs/cgroup; CG_KIND=v2; return; fi
  fi
}

cg_usage_s() {
  if [[ $CG_KIND == v1 ]]; then
    awk '{ printf "%.2f", $1 / 1e9 }' "$CG/cpuacct.usage"
  else
    awk '$1 == "usage_usec" { printf "%.2f", $2 / 1e6 }' "$CG/cpu.stat"
  fi
}

# Ends what is left in the run's cgroup (Ansible's ControlPersist masters: asked to exit over
# their sockets first, then by pid) and removes it.
cg_close() {
  local s pid i
  [[ -n $CG && -d $CG ]] || { CG=""; return 0; }
  for s in "$WORK"/cp/*/*; do
    [[ -S $s ]] && ssh -O exit -S "$s" x >/dev/null 2>&1 || true
  done
  for ((i = 0; i < 50; i++)); do
    [[ -s $CG/cgroup.procs ]] || break
    sleep 0.1
  done
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$CG/cgroup.procs"
  for ((i = 0; i < 50; i++)); do
    rmdir "$CG" 2>/dev/null && break
    sleep 0.1
  done
  CG=""
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  cg_close || true
  if ((TB_UP)); then
    "$TESTBED" down --dir "$D" >/dev/null 2>&1 || echo "run.sh: down --dir $D failed" >&2
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "[$(date +%T)] $*" >&2; }

# Ansible at its fastest, cold on every run like gpuforge: pipelining, the interpreter given (in
# hosts.ini), gather_facts off, ssh_args left at Ansible's default (-C -o ControlMaster=auto -o
# ControlPersist=60s: one connection per host, reused by every task of the run), but a fresh
# ControlPath directory per run whose masters are closed after it, so no run inherits a warm
# connection from the one before. Host keys checked against the testbed's known_hosts.
ANSIBLE_ENV=(
  LC_ALL=C.UTF-8  # ansible refuses a non-UTF-8 locale
  ANSIBLE_CONFIG="$WORK/ansible.cfg"  # empty: no ansible.cfg from cwd or ~
  ANSIBLE_HOME="$WORK/ansible-home"
  ANSIBLE_LOCAL_TEMP="$WORK/ansible-tmp"
  ANSIBLE_HOST_KEY_CHECKING=True
  ANSIBLE_PIPELINING=True
  ANSIBLE_NOCOLOR=1
  ANSIBLE_DEPRECATION_WARNINGS=False
  ANSIBLE_RETRY_FILES_ENABLED=False
)

# ---- the testbed ------------------------------------------------------------------------------

# Fresh hosts: down (if up), up, stand-ins, render, playbook. None of it is timed.
fresh_testbed() {
  local up_args=(up --dir "$D" --hosts "$HOSTS") h pids=() p fail=0
  if ((TB_UP)); then
    "$TESTBED" down --dir "$D" >/dev/null 2>&1
    TB_UP=0
  fi
  ((STAND_IN_GPU)) && up_args+=(--stand-in-gpu "$GPU_FIXTURE")
  TB_UP=1
  "$TESTBED" "${up_args[@]}" >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; exit 1; }
  grep -v '^#' "$D/hosts.tsv" | cut -f1 >"$WORK/hosts"
  [[ $(wc -l <"$WORK/hosts") -eq $HOSTS ]] || { echo "run.sh: hosts.tsv does not list $HOSTS hosts" >&2; exit 1; }
  # The stand-in sysctl: a host's /proc/sys is read-only, and the `sysctl --system` handler
  # that both tools run after writing /etc/sysctl.d would fail there.
  # The stock /root/.bashrc in every host (bench/lib/testbed_hosts.sh says why); `machine`
  # keeps this machine's.
  if [[ $HOST_BASHRC == stock ]]; then
    stock_bashrc "$D" || exit 1
  fi
  while read -r h; do
    ssh -F "$D/ssh_config" "$h" sh -s <"$STANDINS" >"$WORK/standins-$h.log" 2>&1 &
    pids+=($!)
  done <"$WORK/hosts"
  for p in "${pids[@]}"; do wait "$p" || fail=1; done
  ((fail == 0)) || { echo "run.sh: standins.sh failed on a host:" >&2; cat "$WORK"/standins-*.log >&2; exit 1; }
  # Rendered from inside DIR with the inventory's file name, so that the generated-by header
  # names it as apply's does (docs/plan-apply.md) and the files are byte-identical to apply's.
  rm -rf "$RENDER" "$PB"
  (cd "$D" && "$GPUFORGE" render inventory.yaml --out "$RENDER") >"$WORK/render.log" 2>&1 ||
    { cat "$WORK/render.log" >&2; exit 1; }
  h=$(head -1 "$WORK/hosts")
  (cd "$RENDER/$h" && find . -mindepth 1 -type d | sed 's|^\.||' | sort) >"$WORK/dirs"
  ssh -F "$D/ssh_config" "$h" 'while read -r d; do [ -d "$d" ] && echo "$d"; done; true' \
    <"$WORK/dirs" >"$WORK/have-dirs"
  "$PY" "$HERE/gen_playbook.py" "$RENDER" "$D/hosts.tsv" "$D/id_ed25519" "$PB" "$WORK/have-dirs" \
    >"$WORK/counts"
}

# Compares host H's managed files with the render: sha256, mode, owner and group root.
verify_host() {
  local h=$1 label=$2 files want got f
  files=$(cd "$RENDER/$h" && find . -type f | sed 's|^\.||' | sort | tr '\n' ' ')
  want=$(cd "$RENDER/$h" && for f in $files; do
    printf '%s %s %s root root\n' "$(sha256sum <".$f" | cut -d' ' -f1)" "$f" "$(stat -c %a ".$f")"
  done)
  # shellcheck disable=SC2016  # expanded on the host
  got=$(ssh -F "$D/ssh_config" "$h" 'for f in '"$files"'; do
    printf "%s %s %s\n" "$(sha256sum <$f | cut -d" " -f1)" "$f" "$(stat -c "%a %U %G" $f)"; done') || true
  if [[ $want != "$got" ]]; then
    echo "run.sh: after $label, $h's files differ from the render:" >&2
    diff <(echo "$want") <(echo "$got") >&2 || true
    exit 1
  fi
}

# ---- one run ----------------------------------------------------------------------------------

# Sets ARGV to TOOL's command line for PHASE.
tool_argv() {
  local tool=$1 phase=$2 cpdir=$3
  local gf=(--only files --fanout "$FANOUT" --known-hosts "$D/known_hosts" --ssh-config none)
  case $tool/$phase in
    gpuforge/first | gpuforge/rerun-plain) ARGV=("$GPUFORGE" apply "$D/inventory.yaml" --yes "${gf[@]}") ;;
    gpuforge/rerun-check) ARGV=("$GPUFORGE" plan "$D/inventory.yaml" "${gf[@]}") ;;
    ansible/*)
      ARGV=(env "${ANSIBLE_ENV[@]}" ANSIBLE_SSH_CONTROL_PATH_DIR="$cpdir"
        ansible-playbook -i "$PB/hosts.ini" -f "$FANOUT")
      [[ $phase == rerun-check ]] && ARGV+=(--check --diff)
      ARGV+=("$PB/site.yml")
      ;;
  esac
}

# run_once TOOL PHASE LABEL: runs, checks, and sets WALL, CPU (GNU time %U + %S: the tool and
# the children it waited for), CGCPU (the cgroup: every process of the tree, detached or not),
# MAXRSS (KiB, the largest single process).
run_once() {
  local tool=$1 phase=$2 label=$3
  local o=$WORK/$label.out e=$WORK/$label.err tf=$WORK/$label.time cpdir=$WORK/cp/$label t0 t1 usr sys
  mkdir -p "$cpdir"
  tool_argv "$tool" "$phase" "$cpdir"
  CGCPU=""
  local launch=()
  if [[ -n $CG_ROOT ]]; then
    CG=$CG_ROOT/gfa-$$-$label
    mkdir "$CG"
    # shellcheck disable=SC2016  # $$ and $1 are the inner shell's
    launch=(sh -c 'echo $$ >"$1" && shift && exec "$@"' sh "$CG/cgroup.procs")
  fi
  t0=$(date +%s%N)
  set +e
  "${launch[@]}" /usr/bin/time -f '%M %U %S' -o "$tf" "${ARGV[@]}" </dev/null >"$o" 2>"$e"
  RC=$?
  set -e
  t1=$(date +%s%N)
  [[ -n $CG ]] && CGCPU=$(cg_usage_s)
  cg_close
  rm -rf "$cpdir"
  WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
  read -r MAXRSS usr sys < <(tail -1 "$tf")
  CPU=$(awk -v u="$usr" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  if ! "$PY" "$HERE/check.py" "$tool" "$phase" "$WORK/counts" "$o" "$e" "$RC"; then
    cp "$o" "$OUT/failed-$label.out"
    cp "$e" "$OUT/failed-$label.err"
    echo "run.sh: $tool $phase failed ($label, ${WALL} s); its output is in $OUT/failed-$label.{out,err}" >&2
    exit 1
  fi
  rm -f "$o" "$e" "$tf"
}

# One tool's three phases on fresh hosts; appends to raw.csv when ROUND > 0.
tool_round() {
  local tool=$1 round=$2 pos=$3 tag phase line="" h
  tag=$([[ $round -gt 0 ]] && echo "r$round" || echo "w$((-round))")
  fresh_testbed
  for phase in first rerun-check rerun-plain; do
    run_once "$tool" "$phase" "$tag-$tool-$phase"
    if [[ $phase == first ]]; then
      # A different host each round; and after Ansible, gpuforge must agree nothing is left.
      h=$(sed -n "$(((${round#-} % HOSTS) + 1))p" "$WORK/hosts")
      verify_host "$h" "$tool first run"
      if [[ $tool == ansible ]]; then
        "$GPUFORGE" plan "$D/inventory.yaml" --only files --fanout "$FANOUT" \
          --known-hosts "$D/known_hosts" --ssh-config none >"$WORK/cross.out" 2>&1 &&
          grep -q '^Plan: 0 to add, 0 to change, 0 to destroy\.$' "$WORK/cross.out" || {
          echo "run.sh: after Ansible's first run gpuforge plan still finds work:" >&2
          cat "$WORK/cross.out" >&2
          exit 1
        }
      fi
    fi
    if ((round > 0)); then
      echo "$HOSTS,$FANOUT,$round,$pos,$tool,$phase,$WALL,$CPU,$CGCPU,$MAXRSS" >>"$OUT/raw.csv"
    fi
    line+=" $phase=${WALL}s/${CPU}cpu${CGCPU:+/${CGCPU}tree}"
  done
  log "  $tag $tool:$line"
}

# ---- main -------------------------------------------------------------------------------------

probe_cgroup
gf_build=""
cache=$(dirname "$GPUFORGE")/CMakeCache.txt
[[ -f $cache ]] && gf_build=$(grep -E '^(CMAKE_BUILD_TYPE|GPUFORGE_SANITIZE):' "$cache" | tr '\n' ' ')
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "hosts: $HOSTS; rounds: $ROUNDS (+ $WARMUP warm-up); fanout: $FANOUT; tools: $TOOLS; stand-in GPU: $STAND_IN_GPU; host /root/.bashrc: $HOST_BASHRC"
  echo "gpuforge: $GPUFORGE ($("$GPUFORGE" --version 2>&1 | head -1 || true)) ${gf_build:-build type unknown}"
  echo "ansible: $(LC_ALL=C.UTF-8 ansible-playbook --version 2>&1 | head -1)"
  echo "python: $($PY --version 2>&1)"
  echo "ssh: $(ssh -V 2>&1)"
  echo "ansible settings: ${ANSIBLE_ENV[*]} ANSIBLE_SSH_CONTROL_PATH_DIR=<fresh per run>; ssh_args: Ansible's default"
  echo "tree CPU: ${CG_KIND:-none} ${CG_ROOT:+($CG_ROOT)}"
} >"$OUT/env.txt"

echo "hosts,fanout,round,position,tool,phase,wall_s,cpu_s,tree_cpu_s,max_rss_kib" >"$OUT/raw.csv"
nt=${#TOOL_LIST[@]}
for ((w = 1; w <= WARMUP; w++)); do
  log "warm-up $w/$WARMUP ($HOSTS hosts, fanout $FANOUT)"
  for ((p = 0; p < nt; p++)); do
    tool_round "${TOOL_LIST[$p]}" "-$w" $((p + 1))
  done
done
for ((r = 1; r <= ROUNDS; r++)); do
  log "round $r/$ROUNDS"
  for ((p = 0; p < nt; p++)); do
    tool_round "${TOOL_LIST[$(((p + r - 1) % nt))]}" "$r" $((p + 1))
  done
done
if ((TB_UP)); then
  "$TESTBED" down --dir "$D" >/dev/null 2>&1
  TB_UP=0
fi

{
  echo "per host (directories a fresh host lacks, files, handlers) x hosts: $(cut -d' ' -f2- "$WORK/counts" | sort | uniq -c | awk '{ printf "(%s, %s, %s) x %s; ", $2, $3, $4, $1 }')"
  echo "files of $(head -1 "$WORK/hosts"): $(cd "$RENDER/$(head -1 "$WORK/hosts")" && find . -type f | sed 's|^\.||' | sort | tr '\n' ' ')"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$OUT/env.txt"
"$PY" "$HERE/summarize.py" "$OUT" >"$OUT/summary.md"
cat "$OUT/summary.md"
log "results in $OUT"
