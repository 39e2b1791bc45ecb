#!/usr/bin/env bash
# gpuforge run against pdsh, ClusterShell and Ansible on local test hosts (issue #4).
#
#   bench/fanout/run.sh [--hosts "32 128"] [--rounds 5] [--fanout 64] [--out DIR]
#                       [--mem-hosts "32 64 128 256"] [--mem-reps 3] [--gpuforge BIN]
#                       [--tools "gpuforge pdsh clush ansible"]
#
# For each count in --hosts: bring up that many test hosts (tests/testbed/testbed.sh), run the
# command set once with every tool (warm-up, checked, not timed), then --rounds rounds in which
# every tool runs the same command on all hosts with the same fanout, the tool order rotated
# each round. Then one memory pass per tool under memsample.py (sampled process-tree RSS/PSS;
# sampling costs CPU, so those runs are not timed). For each count in --mem-hosts: gpuforge
# with --fanout = hosts, --mem-reps times, peak RSS from GNU time; summarize.py fits a line
# and extrapolates to 1024 connections.
#
# Every run is checked (check.py): exit status 0 and the expected output from every host, or
# the script stops. Writes OUT/raw.csv, OUT/mem.csv, OUT/curve.csv, OUT/env.txt and
# OUT/summary.md. Every testbed is taken down on exit, failure or signal.
#
# Every host gets Debian's stock /root/.bashrc, as bench/apply's do (bench/lib/testbed_hosts.sh).
#
# Needs root (the testbed), pdsh, clush, ansible, GNU time (/usr/bin/time), nsenter, python3.
set -euo pipefail
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/bench/fanout
# shellcheck source=bench/lib/testbed_hosts.sh
source "$ROOT/bench/lib/testbed_hosts.sh"
TESTBED=$ROOT/tests/testbed/testbed.sh
PY=/usr/bin/python3

HOSTS="32 128"
ROUNDS=5
FANOUT=64
OUT=""
MEM_HOSTS="32 64 128 256"
MEM_REPS=3
GPUFORGE=$ROOT/build/gpuforge
TOOLS="gpuforge pdsh clush ansible"
# The fact-gathering command set: one command line, the same for every tool.
CMD='uname -r; nproc; grep MemTotal /proc/meminfo; cat /etc/os-release | head -2'

usage() {
  sed -n '3,6s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

while (($#)); do
  case $1 in
    --hosts) HOSTS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --fanout) FANOUT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --mem-hosts) MEM_HOSTS=$2; shift 2 ;;
    --mem-reps) MEM_REPS=$2; shift 2 ;;
    --gpuforge) GPUFORGE=$2; shift 2 ;;
    --tools) TOOLS=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "run.sh: unknown argument $1" >&2; usage ;;
  esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $FANOUT =~ ^[1-9][0-9]*$ && $MEM_REPS =~ ^[1-9][0-9]*$ ]] || usage

for t in $TOOLS; do
  case $t in
    gpuforge) [[ -x $GPUFORGE ]] || { echo "run.sh: no gpuforge binary at $GPUFORGE" >&2; exit 1; } ;;
    pdsh | clush | ansible) command -v "$t" >/dev/null || { echo "run.sh: $t is not installed" >&2; exit 1; } ;;
    *) echo "run.sh: unknown tool $t" >&2; exit 2 ;;
  esac
done
if [[ -n $MEM_HOSTS && ! -x $GPUFORGE ]]; then
  echo "run.sh: the memory curve needs gpuforge ($GPUFORGE)" >&2
  exit 1
fi
[[ -x /usr/bin/time ]] || { echo "run.sh: needs GNU time at /usr/bin/time" >&2; exit 1; }
read -ra TOOL_LIST <<<"$TOOLS"

[[ -n $OUT ]] || OUT=$(mktemp -d /tmp/gpuforge-fanout.XXXXXX)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d /tmp/gf-fanout-work.XXXXXX)
: >"$WORK/ansible.cfg"
UP_DIRS=()

cleanup() {
  local rc=$? d
  trap - EXIT INT TERM
  for d in "${UP_DIRS[@]}"; do
    "$TESTBED" down --dir "$d" >/dev/null 2>&1 || echo "run.sh: down --dir $d failed" >&2
  done
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "[$(date +%T)] $*" >&2; }

# ---- per-tool command lines ------------------------------------------------------------------

# Sets ARGV to TOOL's command line for testbed D (N hosts) with fanout F. `env` sets the
# environment and execs the tool, so GNU time's child is the tool itself.
tool_argv() {
  local tool=$1 D=$2 N=$3 F=$4
  case $tool in
    gpuforge)
      ARGV=("$GPUFORGE" run "$D/inventory.yaml" --fanout "$F" --known-hosts "$D/known_hosts"
        --ssh-config none -- "$CMD")
      ;;
    pdsh)
      # -S: exit with the largest remote exit status (pdsh exits 0 otherwise).
      ARGV=(env PDSH_RCMD_TYPE=ssh "PDSH_SSH_ARGS_APPEND=-F $D/ssh_config"
        pdsh -R ssh -S -f "$F" -w "^$WORK/hosts-$N" "$CMD")
      ;;
    clush)
      # -S: exit with the largest remote exit status. Line output (no -b), like pdsh.
      ARGV=(clush -S -f "$F" -w "$(paste -sd, "$WORK/hosts-$N")" -o "-F $D/ssh_config" "$CMD")
      ;;
    ansible)
      # -m command cannot run `;` or `|` itself (no shell), so it runs /bin/sh -c, exactly as
      # gpuforge does. Settings in ansible_env below.
      ARGV=(env "${ANSIBLE_ENV[@]}" ansible all -i "$WORK/ansible-$N.ini" -f "$F" -m command
        -a "/bin/sh -c '$CMD'")
      ;;
  esac
}

# Ansible at its fastest, and cold on every run like the others: pipelining (one ssh per host
# per run instead of mkdir/put/exec/rm), the interpreter given (no discovery round trip), no
# ControlPersist (a master left from the previous round would make the next one warm and keep
# ssh processes running between tools). Host keys are checked (host_key_checking stays True,
# known_hosts is the testbed's, StrictHostKeyChecking=yes).
ANSIBLE_ENV=(
  LC_ALL=C.UTF-8  # ansible refuses a non-UTF-8 locale
  ANSIBLE_CONFIG="$WORK/ansible.cfg"  # empty: no ansible.cfg from cwd or ~
  ANSIBLE_HOME="$WORK/ansible-home"
  ANSIBLE_LOCAL_TEMP="$WORK/ansible-tmp"
  ANSIBLE_HOST_KEY_CHECKING=True
  ANSIBLE_PIPELINING=True
  ANSIBLE_SSH_ARGS="-o ControlMaster=no -o ControlPersist=no"
  ANSIBLE_NOCOLOR=1
  ANSIBLE_DEPRECATION_WARNINGS=False
  ANSIBLE_RETRY_FILES_ENABLED=False
)

write_hostfiles() {
  local D=$1 N=$2
  grep -v '^#' "$D/hosts.tsv" | cut -f1 >"$WORK/hosts-$N"
  {
    echo "[tb]"
    awk -F'\t' -v key="$D/id_ed25519" '!/^#/ {
      printf "%s ansible_host=%s ansible_port=%s ansible_user=root ansible_ssh_private_key_file=%s\n", $1, $2, $3, key
    }' "$D/hosts.tsv"
    echo "[tb:vars]"
    echo "ansible_ssh_common_args='-o UserKnownHostsFile=$D/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes'"
    echo "ansible_python_interpreter=/usr/bin/python3"
  } >"$WORK/ansible-$N.ini"
  [[ $(wc -l <"$WORK/hosts-$N") -eq $N ]] || { echo "run.sh: hosts.tsv does not list $N hosts" >&2; exit 1; }
}

# ---- one run -----------------------------------------------------------------------------------

# run_once TOOL D N F LABEL [memsample]: runs, checks, and sets WALL, MAXRSS (KiB), CPU (user +
# system seconds of the tool and every child it waited for: the controller's CPU, not sshd's), RC.
run_once() {
  local tool=$1 D=$2 N=$3 F=$4 label=$5 mode=${6:-}
  local o=$WORK/$label.out e=$WORK/$label.err tf=$WORK/$label.time t0 t1 usr sys
  tool_argv "$tool" "$D" "$N" "$F"
  t0=$(date +%s%N)
  set +e
  if [[ $mode == memsample ]]; then
    "$PY" "$HERE/memsample.py" --pss --interval 0.05 --report "$tf" -- "${ARGV[@]}" </dev/null >"$o" 2>"$e"
  else
    /usr/bin/time -f '%M %U %S' -o "$tf" "${ARGV[@]}" </dev/null >"$o" 2>"$e"
  fi
  RC=$?
  set -e
  t1=$(date +%s%N)
  WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
  if [[ $mode == memsample ]]; then
    MEMLINE=$(cat "$tf")
    MAXRSS=${MEMLINE##* }
    CPU=
  else
    read -r MAXRSS usr sys < <(tail -1 "$tf")
    CPU=$(awk -v u="$usr" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  fi
  if ! "$PY" "$HERE/check.py" "$tool" "$WORK/hosts-$N" "$WORK/expected-$N" "$o" "$e" "$RC"; then
    cp "$o" "$OUT/failed-$label.out"
    cp "$e" "$OUT/failed-$label.err"
    echo "run.sh: $tool failed ($label, ${WALL} s); its output is in $OUT/failed-$label.{out,err}" >&2
    exit 1
  fi
  rm -f "$o" "$e" "$tf"
}

# ---- main ------------------------------------------------------------------------------------

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: $CMD"
  echo "hosts: $HOSTS; rounds: $ROUNDS; fanout: $FANOUT; mem-hosts: $MEM_HOSTS x $MEM_REPS"
  echo "gpuforge: $GPUFORGE ($("$GPUFORGE" --version 2>&1 | head -1 || true))"
  echo "pdsh: $(pdsh -V 2>&1 | head -1)"
  echo "clush: $(clush --version 2>&1 | head -1)"
  echo "ansible: $(LC_ALL=C.UTF-8 ansible --version 2>&1 | head -1)"
  echo "ssh: $(ssh -V 2>&1)"
  echo "ansible settings: ${ANSIBLE_ENV[*]}"
} >"$OUT/env.txt"

echo "hosts,fanout,round,position,tool,wall_s,max_rss_kib,cpu_s" >"$OUT/raw.csv"
echo "hosts,fanout,tool,peak_rss_sum_kib,peak_pss_sum_kib,peak_procs,max_single_rss_kib,wall_s" >"$OUT/mem.csv"
echo "hosts,fanout,rep,wall_s,max_rss_kib" >"$OUT/curve.csv"

COUNTS=$(printf '%s\n' $HOSTS $MEM_HOSTS | sort -n | uniq)
for N in $COUNTS; do
  D=$WORK/tb$N
  log "testbed: up $N hosts"
  UP_DIRS+=("$D")
  "$TESTBED" up --dir "$D" --hosts "$N" >"$WORK/up-$N.log" 2>&1 ||
    { cat "$WORK/up-$N.log" >&2; exit 1; }
  # The same hosts as bench/apply's: Debian's stock /root/.bashrc, not this machine's.
  stock_bashrc "$D" || exit 1
  write_hostfiles "$D" "$N"
  first=$(head -1 "$WORK/hosts-$N")
  ssh -F "$D/ssh_config" "$first" "$CMD" </dev/null >"$WORK/expected-$N"
  [[ $(wc -l <"$WORK/expected-$N") -eq 5 ]] || { echo "run.sh: unexpected output from $first over ssh:" >&2; cat "$WORK/expected-$N" >&2; exit 1; }

  if [[ " $HOSTS " == *" $N "* ]]; then
    for tool in "${TOOL_LIST[@]}"; do
      run_once "$tool" "$D" "$N" "$FANOUT" "warmup-$N-$tool"
      log "  warm-up $tool: $WALL s"
    done
    nt=${#TOOL_LIST[@]}
    for ((r = 1; r <= ROUNDS; r++)); do
      line=""
      for ((p = 0; p < nt; p++)); do
        tool=${TOOL_LIST[$(((p + r - 1) % nt))]}
        run_once "$tool" "$D" "$N" "$FANOUT" "r$r-$N-$tool"
        echo "$N,$FANOUT,$r,$((p + 1)),$tool,$WALL,$MAXRSS,$CPU" >>"$OUT/raw.csv"
        line+=" $tool=${WALL}s/${CPU}cpu/$((MAXRSS / 1024))MB"
      done
      log "  round $r/$ROUNDS:$line"
    done
    for tool in "${TOOL_LIST[@]}"; do
      run_once "$tool" "$D" "$N" "$FANOUT" "mem-$N-$tool" memsample
      read -r rss pss procs single <<<"$MEMLINE"
      echo "$N,$FANOUT,$tool,$rss,$pss,$procs,$single,$WALL" >>"$OUT/mem.csv"
      log "  memory $tool: tree RSS sum $((rss / 1024)) MB, PSS sum $((pss / 1024)) MB, $procs processes, largest $((single / 1024)) MB"
    done
  fi

  if [[ " $MEM_HOSTS " == *" $N "* ]]; then
    for ((k = 1; k <= MEM_REPS; k++)); do
      # All N connections at once; a generous connect timeout, because N simultaneous key
      # exchanges on a small machine are slow and a timed-out host is not a memory sample
      # (at 1000 hosts one host once went past the default --timeout of 60 s).
      tool_argv gpuforge "$D" "$N" "$N"
      ARGV=("${ARGV[@]:0:3}" --connect-timeout 120 --timeout 180 "${ARGV[@]:3}")
      o=$WORK/curve-$N.out e=$WORK/curve-$N.err
      t0=$(date +%s%N)
      set +e
      /usr/bin/time -f '%M' -o "$WORK/curve.time" "${ARGV[@]}" </dev/null >"$o" 2>"$e"
      RC=$?
      set -e
      t1=$(date +%s%N)
      WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
      if ! "$PY" "$HERE/check.py" gpuforge "$WORK/hosts-$N" "$WORK/expected-$N" "$o" "$e" "$RC"; then
        cp "$o" "$OUT/failed-curve-$N.out"
        cp "$e" "$OUT/failed-curve-$N.err"
        echo "run.sh: gpuforge --fanout $N failed; output in $OUT/failed-curve-$N.{out,err}" >&2
        exit 1
      fi
      MAXRSS=$(tail -1 "$WORK/curve.time")
      echo "$N,$N,$k,$WALL,$MAXRSS" >>"$OUT/curve.csv"
      log "  curve: gpuforge --fanout $N: $WALL s, max RSS $MAXRSS KiB"
    done
  fi

  log "testbed: down $N hosts"
  "$TESTBED" down --dir "$D" >/dev/null 2>&1
  unset 'UP_DIRS[-1]'
done

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"
"$PY" "$HERE/summarize.py" "$OUT" >"$OUT/summary.md"
cat "$OUT/summary.md"
log "results in $OUT"
