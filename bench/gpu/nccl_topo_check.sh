#!/usr/bin/env bash
# Does a topology file make NCCL worse on this machine? Runs NCCL twice, without and with the
# file, and compares what NCCL made of the machine.
#
#   bench/gpu/nccl_topo_check.sh [--topo FILE|dump] [--keep DIR]
#   bench/gpu/nccl_topo_check.sh --compare DIR_WITHOUT DIR_WITH
#   bench/gpu/nccl_topo_check.sh --dry-run
#
# --topo FILE: the file under test (gpuforge's NCCL_TOPO_FILE rendered from this node's measured
#   facts, or a vendor's). --topo dump (the default): NCCL's own NCCL_TOPO_DUMP_FILE of the run
#   without a file, fed back to it; a file NCCL cannot take back unchanged is a NCCL or
#   comparison problem, not a gpuforge one.
# Each run: all_reduce_perf from nccl-tests over every GPU (NCCL_TESTS_DIR, PATH, or
#   /opt/nccl-tests/build), NCCL_DEBUG=INFO, NCCL_TOPO_DUMP_FILE. Compared, with-file against
#   without (FAIL when the file makes any of them worse):
#   - NCCL's topology dump: every GPU and NIC under the same chain of <pci> parents;
#   - "GPU Direct RDMA Enabled" lines (NCCL src/graph/paths.cc ncclTopoCheckGdr): no fewer,
#     and no more "GPU Direct RDMA Disabled";
#   - channels ("N coll channels", NCCL src/init.cc; else the "Channel NN/MM" lines): no fewer;
#   - "# Avg bus bandwidth" of all_reduce_perf, and the out-of-place algbw of its largest size
#     (the one bandwidth a single GPU has): not below (1 - NCCL_CHECK_BW_TOLERANCE), 0.05.
# --compare: only the comparison, on two directories holding nccl.log and dump.xml each.
# --dry-run: the comparison on the recorded runs in tests/data/nccl-topo-check (no GPU needed).
#
# Exit status: 0 pass, 1 fail, 77 skip (no NVIDIA GPU, no nccl-tests, or nothing to compare).

set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOPO="dump"
KEEP=""
MODE="run"
A="" B=""
TOL="${NCCL_CHECK_BW_TOLERANCE:-0.05}"
TIMEOUT_S="${NCCL_CHECK_TIMEOUT:-300}"

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) MODE="dry" ;;
    --topo) TOPO="${2:-}"; shift ;;
    --keep) KEEP="${2:-}"; shift ;;
    --compare) MODE="compare"; A="${2:-}"; B="${3:-}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "nccl_topo_check: unknown argument $1" >&2; usage >&2; exit 1 ;;
  esac
  shift
done

say() { echo "nccl_topo_check: $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() { say "SKIP: $*"; exit 77; }

# --- the comparison ------------------------------------------------------------------------
count() { local n; n="$(grep -c -- "$1" "$2" 2>/dev/null)"; echo "${n:-0}"; }

# Channels NCCL built: "N coll channels" (2.19+), else the highest MM of "Channel NN/MM".
channels() {
  local n
  n="$(sed -n 's/.* \([0-9][0-9]*\) coll channels.*/\1/p' "$1" | sort -n | tail -n 1)"
  [ -n "$n" ] || n="$(sed -n 's/.*Channel [0-9][0-9]*\/\([0-9][0-9]*\) :.*/\1/p' "$1" | sort -n | tail -n 1)"
  echo "${n:-}"
}

busbw() { sed -n 's/^# Avg bus bandwidth *: *\([0-9.][0-9.]*\).*/\1/p' "$1" | tail -n 1; }

# "SIZE ALGBW": the out-of-place algbw of the largest size all_reduce_perf printed (its data
# lines are "size count type redop root time algbw busbw #wrong ...", nccl-tests src/util.cu).
# With one GPU busbw is 0 by definition (2(n-1)/n), so this is the only bandwidth that can
# tell a worse file from a good one there; first seen on the H200 (#36), where the busbw
# comparison read "without 0, with 0".
top_algbw() {
  awk '$1 ~ /^[0-9]+$/ && NF >= 13 && $7 ~ /^[0-9.]+$/ { size = $1; bw = $7 } END { if (size != "") print size, bw }' "$1"
}

# Every GPU (class 0x03...) and NIC (0x02...) <pci> of a dump, with the chain of <pci> busids
# above it and its <cpu numaid>: "busid cpu=N parent>parent>...".
chains() {
  python3 - "$1" <<'EOF'
import sys, xml.etree.ElementTree as ET
def walk(node, cpu, chain):
    for c in node:
        if c.tag == "cpu":
            walk(c, c.get("numaid"), [])
        elif c.tag == "pci":
            cls = c.get("class", "")
            if cls.startswith("0x03") or cls.startswith("0x02"):
                print(c.get("busid"), "cpu=%s" % cpu, ">".join(chain))
            walk(c, cpu, chain + [c.get("busid")])
walk(ET.parse(sys.argv[1]).getroot(), None, [])
EOF
}

compare() {  # $1 without, $2 with
  local a="$1" b="$2" problems=()
  [ -s "$a/nccl.log" ] || fail "no $a/nccl.log"
  [ -s "$b/nccl.log" ] || fail "no $b/nccl.log"
  local ea eb da db
  ea="$(count "GPU Direct RDMA Enabled" "$a/nccl.log")"; eb="$(count "GPU Direct RDMA Enabled" "$b/nccl.log")"
  da="$(count "GPU Direct RDMA Disabled" "$a/nccl.log")"; db="$(count "GPU Direct RDMA Disabled" "$b/nccl.log")"
  say "GPU Direct RDMA Enabled lines: without $ea, with $eb; Disabled: without $da, with $db"
  [ "$eb" -ge "$ea" ] || problems+=("GPUDirect RDMA enabled for fewer GPU/NIC pairs with the file ($eb < $ea)")
  [ "$db" -le "$da" ] || problems+=("GPUDirect RDMA disabled for more GPU/NIC pairs with the file ($db > $da)")

  local ca cb
  ca="$(channels "$a/nccl.log")"; cb="$(channels "$b/nccl.log")"
  say "channels: without ${ca:-?}, with ${cb:-?}"
  if [ -n "$ca" ] && [ -z "$cb" ]; then
    problems+=("NCCL printed no channel line with the file")
  elif [ -n "$ca" ] && [ "$cb" -lt "$ca" ]; then
    problems+=("fewer channels with the file ($cb < $ca)")
  fi

  local ba bb
  ba="$(busbw "$a/nccl.log")"; bb="$(busbw "$b/nccl.log")"
  say "all-reduce bus bandwidth (GB/s): without ${ba:-?}, with ${bb:-?} (tolerance $TOL)"
  if [ -n "$ba" ] && [ -z "$bb" ]; then
    problems+=("no all-reduce bandwidth with the file (the run failed?)")
  elif [ -n "$ba" ] && awk -v a="$ba" -v b="$bb" -v t="$TOL" 'BEGIN { exit !(b < a * (1 - t)) }'; then
    problems+=("all-reduce bus bandwidth fell from $ba to $bb GB/s with the file")
  fi

  local ta tb
  ta="$(top_algbw "$a/nccl.log")"; tb="$(top_algbw "$b/nccl.log")"
  if [ -n "$ta" ]; then
    say "out-of-place algbw at ${ta%% *} bytes (GB/s): without ${ta#* }, with ${tb#* } (tolerance $TOL)"
    if [ -z "$tb" ]; then
      problems+=("no all-reduce data line with the file (the run failed?)")
    elif [ "${ta%% *}" != "${tb%% *}" ]; then
      problems+=("the runs' largest sizes differ (${ta%% *} and ${tb%% *} bytes): not comparable")
    elif awk -v a="${ta#* }" -v b="${tb#* }" -v t="$TOL" 'BEGIN { exit !(b < a * (1 - t)) }'; then
      problems+=("out-of-place algbw at ${ta%% *} bytes fell from ${ta#* } to ${tb#* } GB/s with the file")
    fi
  fi

  if [ -s "$a/dump.xml" ] && [ -s "$b/dump.xml" ]; then
    if command -v python3 >/dev/null 2>&1; then
      local xa xb
      xa="$(chains "$a/dump.xml")" || problems+=("cannot read $a/dump.xml")
      xb="$(chains "$b/dump.xml")" || problems+=("cannot read $b/dump.xml")
      while read -r busid rest; do
        [ -n "$busid" ] || continue
        local other
        other="$(printf '%s\n' "$xb" | awk -v id="$busid" '$1 == id { $1 = ""; sub(/^ /, ""); print }')"
        if [ -z "$other" ]; then
          problems+=("$busid is in NCCL's topology without the file, not with it")
        elif [ "$other" != "$rest" ]; then
          problems+=("$busid moved in NCCL's topology: without the file '$rest', with it '$other'")
        fi
      done <<<"$xa"
      say "topology dumps: $(printf '%s\n' "$xa" | grep -c .) GPUs/NICs compared"
    else
      say "topology dumps not compared: no python3 (the other comparisons still count)"
    fi
  else
    problems+=("no NCCL_TOPO_DUMP_FILE output in $a or $b (set by this script; NCCL too old?)")
  fi

  if [ ${#problems[@]} -gt 0 ]; then
    for p in "${problems[@]}"; do say "worse: $p"; done
    fail "the topology file makes NCCL worse on this machine"
  fi
  say "PASS: with the file NCCL is no worse (same tree, GDR, channels, bandwidth)"
  exit 0
}

case "$MODE" in
  compare)
    [ -n "$A" ] && [ -n "$B" ] || fail "--compare needs two directories"
    compare "$A" "$B"
    ;;
  dry)
    say "dry run: comparing the recorded runs in tests/data/nccl-topo-check (NCCL was not run)"
    compare "$REPO/tests/data/nccl-topo-check/without" "$REPO/tests/data/nccl-topo-check/with-same"
    ;;
esac

# --- the real runs -------------------------------------------------------------------------
command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi on this machine: no NVIDIA GPU to test on"
nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi finds no usable NVIDIA GPU: $(nvidia-smi -L 2>&1 | head -1)"
NGPUS="$(nvidia-smi -L | grep -c '^GPU ')"
runner=""
for d in "${NCCL_TESTS_DIR:-}" "$(dirname "$(command -v all_reduce_perf 2>/dev/null || echo /nonexistent/x)")" \
         /usr/local/bin /opt/nccl-tests/build /usr/local/nccl-tests/build; do
  if [ -n "$d" ] && [ -x "$d/all_reduce_perf" ]; then runner="$d/all_reduce_perf"; break; fi
done
[ -n "$runner" ] || skip "no all_reduce_perf (nccl-tests) here: set NCCL_TESTS_DIR"
if [ "$TOPO" != dump ] && [ ! -r "$TOPO" ]; then fail "cannot read the topology file $TOPO"; fi

if [ -n "$KEEP" ]; then
  WORK="$KEEP"
  mkdir -p "$WORK" || fail "cannot create $WORK"
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/nccl-topo-check.XXXXXX")" || fail "cannot create a work directory"
  trap 'rm -rf "$WORK"' EXIT
fi

one_run() {  # $1 directory, $2 topology file or "" for none
  mkdir -p "$1"
  # NCCL_CONF_FILE keeps this user's ~/.nccl.conf out; NCCL_TOPO_FILE set empty overrides a
  # path /etc/nccl.conf might give (the environment wins over the file).
  env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET,ENV NCCL_CONF_FILE=/dev/null \
    NCCL_TOPO_FILE="$2" NCCL_TOPO_DUMP_FILE="$1/dump.xml" \
    timeout "$TIMEOUT_S" "$runner" -b 8 -e 256M -f 2 -g "$NGPUS" -n 20 -w 5 -c 1 >"$1/nccl.log" 2>&1
  local rc=$?
  grep -q "Out of bounds values : 0 OK" "$1/nccl.log" || { tail -n 30 "$1/nccl.log"; fail "all_reduce_perf failed in $1 (exit $rc)"; }
}

say "$NGPUS GPU(s), $runner"
one_run "$WORK/without" ""
[ "$TOPO" = dump ] && TOPO="$WORK/without/dump.xml"
[ -s "$TOPO" ] || fail "NCCL wrote no topology dump to compare with"
cp "$TOPO" "$WORK/file-under-test.xml"
one_run "$WORK/with" "$WORK/file-under-test.xml"
grep -qF "Loading topology file $WORK/file-under-test.xml" "$WORK/with/nccl.log" ||
  fail "NCCL never logged 'Loading topology file': it did not read the file"
compare "$WORK/without" "$WORK/with"
