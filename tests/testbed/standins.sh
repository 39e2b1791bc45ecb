#!/bin/sh
# Installs STAND-INs for what a gpuforge test host (tests/testbed) cannot do for real, so that
# apply's end-to-end tests can enable services, load modules and set sysctls there and check
# the outcome. Run it as root ON a test host, never on this machine:
#
#   ssh -F DIR/ssh_config tb01 sh -s < tests/testbed/standins.sh
#
# It puts into /usr/local/sbin (first in root's PATH over SSH and in sudo's secure_path, so they
# shadow the real ones):
#   systemctl  the host has no systemd; unit state is kept in files, nothing is started
#   modprobe   the host's kernel is this machine's; modules are directories in a tmpfs that
#              this script mounts over /sys/module
#   sysctl     the host's /proc/sys is read-only; values are recorded and read back
# Each says in its header that it is a stand-in and what it does. State and logs live under
# /var/lib/gpuforge-testbed (the host's overlay). Running it again reinstalls the programs and
# keeps their state. See README.md beside this file.
set -eu
umask 022

die() {
  echo "standins.sh: $*" >&2
  exit 1
}

# This machine's /usr/local/sbin and /sys/module are not to be touched: only a test host's pid 1
# is the testbed's init, and only a test host has the testbed's sshd_config.
[ "$(id -u)" = 0 ] || die "must run as root (on a test host)"
if [ ! -f /etc/ssh/testbed/sshd_config ] ||
  ! tr '\0' ' ' </proc/1/cmdline 2>/dev/null | grep -q 'testbed\.sh __init '; then
  die "this is not a gpuforge test host (tests/testbed); refusing to install stand-ins here"
fi

S=/var/lib/gpuforge-testbed
mkdir -p "$S/systemd/active" "$S/systemd/failed" "$S/sysctl" /usr/local/sbin

# ---- systemctl -------------------------------------------------------------------------------
cat >/usr/local/sbin/systemctl.new <<'STANDIN'
#!/bin/sh
# STAND-IN for systemctl, not systemd's. gpuforge's testbed (tests/testbed/standins.sh) put it
# into this test host: a test host has no systemd (pid 1 is the testbed's shell), so the real
# systemctl can only say it was not booted with systemd. This one starts and stops nothing; it
# keeps each unit's state in files and answers as systemd 252 (Debian 12) does.
#
#   unit exists  a unit file in /etc/systemd/system, /run/systemd/system or /lib/systemd/system
#                (a package must ship it first); "slurmd" means slurmd.service
#   enabled      the symlinks systemd itself makes: /etc/systemd/system/TARGET.wants/UNIT for
#                each WantedBy= of the unit's [Install] (RequiredBy= -> TARGET.requires), so
#                what this machine has enabled shows as enabled, and a purge disables
#   masked       /etc/systemd/system/UNIT -> /dev/null
#   active       /var/lib/gpuforge-testbed/systemd/active/UNIT; failed: .../systemd/failed/UNIT
#
# Verbs: is-enabled, is-active, is-failed, enable [--now], disable [--now], start, stop,
# restart, reload (needs ExecReload= and an active unit), try-restart, reload-or-restart, mask,
# unmask, reset-failed, daemon-reload (nothing to do), show [-p PROP,...] [--value] (Id, Names,
# LoadState, ActiveState, SubState, UnitFileState, FragmentPath), status, is-system-running
# ("running"). Messages and exit codes are systemd's: 5 for a unit that is not found.
#
# Fault hooks, NAME being the unit without ".service" (the full name works too):
#   /var/lib/gpuforge-testbed/fail-NAME  start, restart and reload of NAME fail (exit 1) and
#                                        leave it failed
#   /var/lib/gpuforge-testbed/hang-NAME  start and restart touch .../hanging-NAME, sleep 300 s
#                                        (or the number of seconds the file holds), then fail
#                                        with a timeout
# Every call is appended to /var/lib/gpuforge-testbed/systemctl.log (its arguments, one line).
S=/var/lib/gpuforge-testbed
D=$S/systemd
mkdir -p "$D/active" "$D/failed"
printf '%s\n' "$*" >>"$S/systemctl.log"

now=0 quiet=0 value=0 props="" verb="" take=0
for a; do
  if [ $take = 1 ]; then
    props="$props,$a"
    take=0
    continue
  fi
  case $a in
    --now) now=1 ;;
    -q | --quiet) quiet=1 ;;
    --value) value=1 ;;
    -p | --property) take=1 ;;
    --property=*) props="$props,${a#--property=}" ;;
    -p?*) props="$props,${a#-p}" ;;
    -*) ;;
    *) [ -n "$verb" ] || verb=$a ;;
  esac
done

unit_name() {
  case $1 in
    *.service | *.socket | *.timer | *.target | *.mount | *.path | *.slice | *.scope | *.swap | \
      *.automount | *.device) echo "$1" ;;
    *) echo "$1.service" ;;
  esac
}

# Prints the unit's file, first in systemd's search order; an instance (getty@tty1.service)
# falls back to its template (getty@.service).
unit_file() {
  for f in "$1" "${1%%@*}@.${1##*.}"; do
    for d in /etc/systemd/system /run/systemd/system /lib/systemd/system /usr/lib/systemd/system; do
      if [ -e "$d/$f" ] || [ -L "$d/$f" ]; then
        echo "$d/$f"
        return 0
      fi
    done
    case $1 in *@?*.*) ;; *) return 1 ;; esac
  done
  return 1
}

masked() {
  for d in /etc/systemd/system /run/systemd/system; do
    [ -L "$d/$1" ] && [ "$(readlink "$d/$1")" = /dev/null ] && return 0
  done
  return 1
}

# WantedBy=/RequiredBy= targets of the unit's [Install], as "wants TARGET" / "requires TARGET".
install_targets() {
  sed -n '/^\[Install\]/,/^\[/{
    s/^WantedBy=[[:space:]]*/wants /p
    s/^RequiredBy=[[:space:]]*/requires /p
  }' "$1" | while read -r kind targets; do
    for t in $targets; do echo "$kind $t"; done
  done
}

has_install() {
  sed -n '/^\[Install\]/,/^\[/p' "$1" | grep -Eq '^(WantedBy|RequiredBy|Alias|Also)='
}

enabled() {
  for l in /etc/systemd/system/*.wants/"$1" /etc/systemd/system/*.requires/"$1"; do
    [ -L "$l" ] && return 0
  done
  return 1
}

file_state() {
  if masked "$1"; then
    echo masked
  elif ! unit_file "$1" >/dev/null; then
    echo ""
  elif enabled "$1"; then
    echo enabled
  elif has_install "$(unit_file "$1")"; then
    echo disabled
  else
    echo static
  fi
}

active_state() {
  if [ -e "$D/active/$1" ]; then
    echo active
  elif [ -e "$D/failed/$1" ]; then
    echo failed
  else
    echo inactive
  fi
}

hook() { # KIND UNIT: the hook file's path if there is one
  for h in "$S/$1-${2%.service}" "$S/$1-$2"; do
    [ -e "$h" ] && echo "$h" && return 0
  done
  return 1
}

fail_job() {
  rm -f "$D/active/$1"
  : >"$D/failed/$1"
  echo "Job for $1 failed because $2." >&2
  echo "See \"systemctl status $1\" and \"journalctl -xeu $1\" for details." >&2
  return 1
}

# start/restart/reload with the fault hooks; $1 is the job (start, restart, reload).
run_job() {
  if hook fail "$2" >/dev/null; then
    fail_job "$2" "the control process exited with error code"
    return
  fi
  if [ "$1" != reload ] && h=$(hook hang "$2"); then
    : >"$S/hanging-${2%.service}"
    secs=$(tr -cd 0-9 <"$h")
    sleep "${secs:-300}"
    fail_job "$2" "a timeout was exceeded"
    return
  fi
  rm -f "$D/failed/$2"
  : >"$D/active/$2"
}

u_start() { # JOB UNIT: exit codes as systemctl's
  if masked "$2"; then
    echo "Failed to $1 $2: Unit $2 is masked." >&2
    return 1
  fi
  if ! unit_file "$2" >/dev/null; then
    echo "Failed to $1 $2: Unit $2 not found." >&2
    return 5
  fi
  run_job "$1" "$2" || return 1
}

u_stop() {
  if ! unit_file "$1" >/dev/null && [ "$(active_state "$1")" = inactive ]; then
    echo "Failed to stop $1: Unit $1 not loaded." >&2
    return 5
  fi
  rm -f "$D/active/$1" "$D/failed/$1"
}

u_reload() {
  if ! f=$(unit_file "$1"); then
    echo "Failed to reload $1: Unit $1 not found." >&2
    return 5
  fi
  if ! grep -q '^ExecReload=' "$f"; then
    echo "Failed to reload $1: Job type reload is not applicable for unit $1." >&2
    return 1
  fi
  if [ "$(active_state "$1")" != active ]; then
    echo "$1 is not active, cannot reload." >&2
    return 1
  fi
  run_job reload "$1" || return 1
}

u_enable() {
  if masked "$1"; then
    echo "Failed to enable unit: Unit file /etc/systemd/system/$1 is masked." >&2
    return 1
  fi
  if ! f=$(unit_file "$1"); then
    echo "Failed to enable unit: Unit file $1 does not exist." >&2
    return 1
  fi
  if ! has_install "$f"; then
    echo "The unit files have no installation config (WantedBy=, RequiredBy=, Also=," \
      "Alias= settings in the [Install] section, and DefaultInstance= for template units)." >&2
    return 0
  fi
  install_targets "$f" | while read -r kind t; do
    l=/etc/systemd/system/$t.$kind/$1
    [ -L "$l" ] && continue
    mkdir -p "/etc/systemd/system/$t.$kind"
    ln -s "$f" "$l"
    echo "Created symlink $l → $f." >&2
  done
}

u_disable() {
  if ! unit_file "$1" >/dev/null; then
    echo "Failed to disable unit: Unit file $1 does not exist." >&2
    return 1
  fi
  for l in /etc/systemd/system/*.wants/"$1" /etc/systemd/system/*.requires/"$1"; do
    [ -L "$l" ] || continue
    rm -f "$l"
    echo "Removed \"$l\"." >&2
  done
}

u_show() {
  u=$1
  f=$(unit_file "$u") || f=""
  if masked "$u"; then
    load=masked
  elif [ -n "$f" ]; then
    load=loaded
  else
    load=not-found
  fi
  st=$(active_state "$u")
  case $st in active) sub=running ;; failed) sub=failed ;; *) sub=dead ;; esac
  ufs=$(file_state "$u")
  want=${props#,}
  [ -n "$want" ] || want=Id,Names,LoadState,ActiveState,SubState,UnitFileState,FragmentPath
  IFS=,
  for p in $want; do
    case $p in
      Id | Names) v=$u ;;
      LoadState) v=$load ;;
      ActiveState) v=$st ;;
      SubState) v=$sub ;;
      UnitFileState) v=$ufs ;;
      FragmentPath) v=$f ;;
      *) continue ;;
    esac
    if [ $value = 1 ]; then echo "$v"; else echo "$p=$v"; fi
  done
  unset IFS
}

u_status() {
  u=$1
  if ! f=$(unit_file "$u"); then
    echo "Unit $u could not be found." >&2
    return 4
  fi
  st=$(active_state "$u")
  case $st in active) sub=running ;; failed) sub=failed ;; *) sub=dead ;; esac
  echo "● $u - gpuforge testbed stand-in state"
  echo "     Loaded: loaded ($f; $(file_state "$u"))"
  echo "     Active: $st ($sub)"
  [ "$st" = active ]
  return $(($? * 3))
}

[ -n "$verb" ] || {
  echo "systemctl (testbed stand-in): listing units is not supported; give a verb" >&2
  exit 1
}

rc=0
n=0
any=0 # is-*: whether any unit is what was asked; systemctl exits 0 then
seen_verb=0
skip=0
for a; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case $a in
    -p | --property) skip=1; continue ;;
    -*) continue ;;
  esac
  if [ $seen_verb = 0 ]; then seen_verb=1; continue; fi
  n=$((n + 1))
  u=$(unit_name "$a")
  case $verb in
    is-enabled)
      s=$(file_state "$u")
      if [ -z "$s" ]; then
        echo "Failed to get unit file state for $u: No such file or directory" >&2
        continue
      fi
      [ $quiet = 1 ] || echo "$s"
      case $s in enabled | static) any=1 ;; esac
      ;;
    is-active | is-failed)
      s=$(active_state "$u")
      [ $quiet = 1 ] || echo "$s"
      [ "$s" != "${verb#is-}" ] || any=1
      ;;
    start | restart) u_start "$verb" "$u" || rc=$? ;;
    stop) u_stop "$u" || rc=$? ;;
    reload) u_reload "$u" || rc=$? ;;
    try-restart | condrestart)
      if ! unit_file "$u" >/dev/null; then
        echo "Failed to try-restart $u: Unit $u not found." >&2
        rc=5
      elif [ "$(active_state "$u")" = active ]; then
        u_start restart "$u" || rc=$?
      fi
      ;;
    reload-or-restart)
      if [ "$(active_state "$u")" = active ] && grep -q '^ExecReload=' "$(unit_file "$u")"; then
        u_reload "$u" || rc=$?
      else
        u_start restart "$u" || rc=$?
      fi
      ;;
    enable)
      if u_enable "$u"; then
        [ $now = 0 ] || u_start start "$u" || rc=$?
      else
        rc=1
      fi
      ;;
    disable)
      if u_disable "$u"; then
        [ $now = 0 ] || u_stop "$u" || rc=$?
      else
        rc=1
      fi
      ;;
    mask)
      mkdir -p /etc/systemd/system
      rm -f "/etc/systemd/system/$u"
      ln -s /dev/null "/etc/systemd/system/$u"
      echo "Created symlink /etc/systemd/system/$u → /dev/null." >&2
      ;;
    unmask)
      if masked "$u"; then
        rm -f "/etc/systemd/system/$u"
        echo "Removed \"/etc/systemd/system/$u\"." >&2
      fi
      ;;
    reset-failed) rm -f "$D/failed/$u" ;;
    show)
      [ $n = 1 ] || echo
      u_show "$u"
      ;;
    status)
      [ $n = 1 ] || echo
      u_status "$u" || { r=$?; [ $rc -ge $r ] || rc=$r; }
      ;;
    *)
      echo "Unknown command verb $verb." >&2
      exit 1
      ;;
  esac
done

case $verb in
  daemon-reload | daemon-reexec) ;;
  is-system-running) [ $quiet = 1 ] || echo running ;;
  is-enabled | is-active | is-failed | start | restart | stop | reload | try-restart | condrestart | \
    reload-or-restart | enable | disable | mask | unmask | reset-failed | show | status)
    if [ $n = 0 ]; then
      echo "Too few arguments." >&2
      exit 1
    fi
    case $verb in
      is-enabled | is-failed) [ $any = 1 ] && rc=0 || rc=1 ;;
      is-active) [ $any = 1 ] && rc=0 || rc=3 ;;
    esac
    ;;
  *)
    echo "Unknown command verb $verb." >&2
    exit 1
    ;;
esac
exit $rc
STANDIN

# ---- modprobe --------------------------------------------------------------------------------
cat >/usr/local/sbin/modprobe.new <<'STANDIN'
#!/bin/sh
# STAND-IN for modprobe, not kmod's. gpuforge's testbed (tests/testbed/standins.sh) put it into
# this test host: the host runs on this machine's kernel, so a real modprobe would load modules
# into that kernel (or fail for lack of them). Instead, /sys/module here is a tmpfs holding one
# directory per module the real kernel had when the stand-ins were installed, and this
#   modprobe NAME [PARAM=VALUE...]   makes /sys/module/NAME ('-' read as '_') with initstate
#                                    "live" and parameters/PARAM for each PARAM=VALUE given and
#                                    each "options NAME ..." in /etc, /run and /lib/modprobe.d
#   modprobe -a NAME...              each NAME so
#   modprobe -r NAME...              removes /sys/module/NAME
# A NAME listed in /var/lib/gpuforge-testbed/no-such-modules (one a line) does not exist:
# modprobe fails as the real one does for a module the kernel lacks. /proc/modules (lsmod)
# still shows the real kernel's modules. Every call is appended to
# /var/lib/gpuforge-testbed/modprobe.log.
S=/var/lib/gpuforge-testbed
mkdir -p "$S"
printf '%s\n' "$*" >>"$S/modprobe.log"

remove=0 all=0 quiet=0 dry=0
for a; do
  case $a in
    -r | --remove) remove=1 ;;
    -a | --all) all=1 ;;
    -q | --quiet) quiet=1 ;;
    -n | --dry-run | --show) dry=1 ;;
    -[a-zA-Z]*) # bundled short options: -rq, -qa
      case $a in *r*) remove=1 ;; esac
      case $a in *a*) all=1 ;; esac
      case $a in *q*) quiet=1 ;; esac
      case $a in *n*) dry=1 ;; esac
      ;;
  esac
done

norm() { printf '%s' "$1" | tr - _; }

missing() {
  [ -f "$S/no-such-modules" ] && tr - _ <"$S/no-such-modules" | grep -qxF "$(norm "$1")"
}

fatal() {
  [ $quiet = 1 ] || echo "modprobe: FATAL: $*" >&2
  exit 1
}

load() { # NAME: the module and its modprobe.d options; parameters given after it follow
  m=$(norm "$1")
  missing "$1" && fatal "Module $1 not found in directory /lib/modules/$(uname -r)"
  [ $dry = 0 ] || return 0
  [ -d "/sys/module/$m" ] && return 0
  mkdir -p "/sys/module/$m/parameters"
  echo live >"/sys/module/$m/initstate"
  cat /etc/modprobe.d/*.conf /run/modprobe.d/*.conf /lib/modprobe.d/*.conf 2>/dev/null |
    awk -v m="$m" '$1 == "options" { x = $2; gsub("-", "_", x); if (x == m) for (i = 3; i <= NF; i++) print $i }' |
    while IFS= read -r p; do param "$m" "$p"; done
  loaded=$m
}

param() {
  case $2 in
    *=*) printf '%s\n' "${2#*=}" >"/sys/module/$1/parameters/${2%%=*}" ;;
    *) echo Y >"/sys/module/$1/parameters/$2" ;;
  esac
}

unload() {
  m=$(norm "$1")
  missing "$1" && fatal "Module $1 not found."
  [ -d "/sys/module/$m" ] || fatal "Module $m is not in kernel."
  [ $dry = 1 ] || rm -rf "/sys/module/$m"
}

n=0 loaded=""
for a; do
  case $a in -*) continue ;; esac
  n=$((n + 1))
  if [ $remove = 1 ]; then
    unload "$a"
  elif [ $all = 1 ] || [ $n = 1 ]; then
    load "$a"
  elif [ -n "$loaded" ]; then
    param "$loaded" "$a"
  fi
done
if [ $n = 0 ]; then
  echo "modprobe: ERROR: missing parameters. See -h." >&2
  exit 1
fi
exit 0
STANDIN

# ---- sysctl ----------------------------------------------------------------------------------
cat >/usr/local/sbin/sysctl.new <<'STANDIN'
#!/bin/sh
# STAND-IN for sysctl, not procps'. gpuforge's testbed (tests/testbed/standins.sh) put it into
# this test host: the host runs on this machine's kernel and its /proc/sys is read-only (a write
# would reach that kernel), so this sysctl records what it is told to set in
# /var/lib/gpuforge-testbed/sysctl/KEY (KEY in dotted form) and reads a recorded value back in
# place of /proc/sys. A KEY is known when /proc/sys has it or a test has made its file there.
#   sysctl [-n] [-N] [-e] [-q] KEY...     reads (`key = value`, or the value with -n)
#   sysctl [-w] KEY=VALUE...              records (several values are stored tab-separated,
#                                         as the kernel prints them)
#   sysctl -p [FILE...] / --system        loads files as procps 4.0.2 (Debian 12) does, with its
#                                         messages and exit codes (1 on any failure)
# Every call is appended to /var/lib/gpuforge-testbed/sysctl.log.
S=/var/lib/gpuforge-testbed
V=$S/sysctl
mkdir -p "$V"
printf '%s\n' "$*" >>"$S/sysctl.log"

values=0 names=0 ignore=0 quiet=0 write=0 load=0 system=0
for a; do
  case $a in
    -n | --values) values=1 ;;
    -N | --names) names=1 ;;
    -e | --ignore) ignore=1 ;;
    -q | --quiet) quiet=1 ;;
    -w | --write) write=1 ;;
    -p | --load) load=1 ;;
    -p?* | --load=*) load=1 ;;
    --system) system=1 ;;
    -[nNeqw]*)
      case $a in *n*) values=1 ;; esac
      case $a in *N*) names=1 ;; esac
      case $a in *e*) ignore=1 ;; esac
      case $a in *q*) quiet=1 ;; esac
      case $a in *w*) write=1 ;; esac
      ;;
    -*)
      echo "sysctl (testbed stand-in): option $a is not supported" >&2
      exit 2
      ;;
  esac
done

rc=0
warn() { echo "sysctl: $*" >&2; }

# Sets KEY (dotted) and P (its /proc/sys path) from a key in dotted or slashed form.
key() {
  k=$(printf '%s' "$1" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
  case $k in
    */*) P=/proc/sys/$k KEY=$(printf '%s' "$k" | tr / .) ;;
    *) KEY=$k P=/proc/sys/$(printf '%s' "$k" | tr . /) ;;
  esac
}

say() { # KEY VALUE
  if [ "$names" = 1 ]; then
    echo "$1"
  elif [ "$values" = 1 ]; then
    printf '%s\n' "$2"
  else
    printf '%s = %s\n' "$1" "$2"
  fi
}

read_key() {
  key "$1"
  if [ -f "$V/$KEY" ]; then
    say "$KEY" "$(cat "$V/$KEY")"
  elif [ -d "$P" ]; then
    for f in $(find "$P" -type f | sort); do
      k=${f#/proc/sys/}
      [ -f "$V/$(printf '%s' "$k" | tr / .)" ] || [ -r "$f" ] || continue
      read_key "$k" 2>/dev/null
    done
  elif [ -e "$P" ]; then
    # Unreadable keys (write-only, like net.ipv4.route.flush) print nothing, as procps.
    v=$(cat "$P" 2>/dev/null) && say "$KEY" "$v"
  elif [ $ignore = 0 ]; then
    warn "cannot stat $P: No such file or directory"
    rc=1
  fi
}

write_key() { # KEY=VALUE
  key "${1%%=*}"
  val=$(printf '%s' "${1#*=}" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
  if [ ! -e "$P" ] && [ ! -f "$V/$KEY" ]; then
    if [ $ignore = 0 ]; then
      warn "cannot stat $P: No such file or directory"
      rc=1
    fi
    return
  fi
  if [ -d "$P" ]; then
    warn "setting key \"$KEY\": Is a directory"
    rc=1
    return
  fi
  # A key the kernel never lets anyone write: procps reports it and still exits 0.
  if [ -e "$P" ] && [ $(($(stat -c %a "$P") / 100 & 2)) = 0 ]; then
    warn "setting key \"$KEY\": Invalid argument"
    return
  fi
  printf '%s\n' "$val" | tr ' ' '\t' | tr -s '\t' >"$V/$KEY"
  [ $quiet = 1 ] || say "$KEY" "$val"
}

load_file() {
  if [ ! -r "$1" ]; then
    warn "cannot open \"$1\": No such file or directory"
    rc=1
    return
  fi
  ln=0
  while IFS= read -r line || [ -n "$line" ]; do
    ln=$((ln + 1))
    line=$(printf '%s' "$line" | sed 's/^[[:space:]]*//')
    case $line in "" | "#"* | ";"*) continue ;; esac
    # procps 4.0.2 strips a leading '-' but still reports the key and fails.
    line=${line#-}
    case $line in
      *=*) write_key "$line" ;;
      *) warn "$1($ln): invalid syntax, continuing..." ;;
    esac
  done <"$1"
}

if [ $system = 1 ]; then
  # procps' order: *.conf from these directories, the first of each name wins, sorted by name;
  # /etc/sysctl.conf last.
  seen=" "
  list=""
  for d in /etc/sysctl.d /run/sysctl.d /usr/local/lib/sysctl.d /usr/lib/sysctl.d /lib/sysctl.d; do
    for f in "$d"/*.conf; do
      [ -e "$f" ] || continue
      b=${f##*/}
      case $seen in *" $b "*) continue ;; esac
      seen="$seen$b "
      list="$list$b $f
"
    done
  done
  for f in $(printf '%s' "$list" | LC_ALL=C sort -k1,1 | cut -d' ' -f2); do
    [ $quiet = 1 ] || echo "* Applying $f ..."
    load_file "$f"
  done
  if [ -f /etc/sysctl.conf ]; then
    [ $quiet = 1 ] || echo "* Applying /etc/sysctl.conf ..."
    load_file /etc/sysctl.conf
  fi
  exit $rc
fi

if [ $load = 1 ]; then
  files=0
  for a; do
    case $a in
      -p?*) load_file "${a#-p}"; files=1 ;;
      --load=*) load_file "${a#--load=}"; files=1 ;;
      -*) ;;
      *) load_file "$a"; files=1 ;;
    esac
  done
  [ $files = 1 ] || load_file /etc/sysctl.conf
  exit $rc
fi

n=0
for a; do
  case $a in -*) continue ;; esac
  n=$((n + 1))
  case $a in
    *=*) write_key "$a" ;;
    *)
      if [ $write = 1 ]; then
        warn "\"$a\" must be of the form name=value"
        rc=1
      else
        read_key "$a"
      fi
      ;;
  esac
done
if [ $n = 0 ]; then
  echo "sysctl (testbed stand-in): give KEY, KEY=VALUE, -p or --system (-a is not supported)" >&2
  exit 2
fi
exit $rc
STANDIN

for p in systemctl modprobe sysctl; do
  chmod 0755 "/usr/local/sbin/$p.new"
  mv -f "/usr/local/sbin/$p.new" "/usr/local/sbin/$p"
done

# /sys is this kernel's sysfs, read-only: a tmpfs over /sys/module takes the stand-in modprobe's
# directories, starting with one per module the kernel has (loaded or built in).
if [ "$(stat -f -c %T /sys/module)" != tmpfs ]; then
  mods=$(ls /sys/module)
  mount -t tmpfs -o mode=0755,size=16m,nosuid,nodev,noexec gpuforge-testbed-modules /sys/module
  for m in $mods; do mkdir -p "/sys/module/$m"; done
fi

echo "standins: systemctl, modprobe and sysctl stand-ins in /usr/local/sbin; state in $S"
