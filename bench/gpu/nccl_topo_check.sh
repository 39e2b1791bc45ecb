#!/usr/bin/env bash
# Does NCCL accept the topology file gpuforge renders for a real machine?
#
#   bench/gpu/nccl_topo_check.sh [--dry-run] [--fixtures DIR] [--keep DIR] [GPUFORGE]
#
# 1. Finds gpuforge (GPUFORGE, else build/gpuforge under the repository, else builds that).
# 2. Reads THIS machine's GPUs (nvidia-smi --query-gpu, nvidia-smi -q -x, nvidia-smi topo -m),
#    CPUs (lscpu) and RDMA NICs (sysfs) and writes a one-node inventory with their PCI bus ids
#    and NUMA nodes, the keys render needs before it writes a topology file.
# 3. Runs `gpuforge render` and checks the topology XML holds every GPU's bus id.
# 4. Runs an all-reduce with NCCL_TOPO_FILE set to that file and NCCL_DEBUG=INFO (nccl-tests'
#    all_reduce_perf if found, else PyTorch's NCCL backend on one GPU, else a small C program
#    against libnccl built with nvcc) and checks from the log that NCCL loaded the file and
#    printed no WARN about it.
#
# --dry-run: steps 1-3 only, on the recorded nvidia-smi and lscpu output in --fixtures DIR
# (default tests/data/facts/nvidia-h200-1gpu), for machines without a GPU.
# Environment: SYSFS_ROOT (default /sys; a fake tree for tests), NCCL_TESTS_DIR (where
# all_reduce_perf is), NCCL_CHECK_TIMEOUT (seconds for the all-reduce, default 120).
#
# Exit status: 0 pass, 1 fail, 77 skip (no NVIDIA GPU here, or render declined the file).

set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DRY=0
FIXTURES="$REPO/tests/data/facts/nvidia-h200-1gpu"
KEEP=""
GPUFORGE=""
NODE="gpunode"
SYSFS_ROOT_SET="${SYSFS_ROOT+set}"
SYSFS_ROOT="${SYSFS_ROOT:-/sys}"
TIMEOUT_S="${NCCL_CHECK_TIMEOUT:-120}"

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --fixtures) FIXTURES="$2"; shift ;;
    --keep) KEEP="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "nccl_topo_check: unknown option $1" >&2; usage >&2; exit 1 ;;
    *) GPUFORGE="$1" ;;
  esac
  shift
done

say() { echo "nccl_topo_check: $*"; }
fail() { say "FAIL: $*"; exit 1; }
skip() { say "SKIP: $*"; exit 77; }

if [ -n "$KEEP" ]; then
  WORK="$KEEP"
  mkdir -p "$WORK" || fail "cannot create $WORK"
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/nccl-topo-check.XXXXXX")" || fail "cannot create a work directory"
  trap 'rm -rf "$WORK"' EXIT
fi

# --- where the facts come from -----------------------------------------------------------
if [ "$DRY" = 1 ]; then
  [ -r "$FIXTURES/query-gpu.csv" ] || fail "no fixtures in $FIXTURES (query-gpu.csv)"
  smi() {  # the recorded answers to the calls below
    case "$*" in
      --query-gpu=*) cat "$FIXTURES/query-gpu.csv" ;;
      "-q -x") cat "$FIXTURES/nvidia-smi-q.xml" ;;
      "topo -m") cat "$FIXTURES/topo-m.txt" ;;
      *) return 2 ;;
    esac
  }
  cpuinfo() { cat "$FIXTURES/lscpu.txt"; }
  # This machine's sysfs describes other devices than the fixtures'.
  [ -n "$SYSFS_ROOT_SET" ] || SYSFS_ROOT="$WORK/no-sysfs"
  say "dry run on the fixtures in $FIXTURES"
else
  command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi on this machine: no NVIDIA GPU to test on"
  nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi finds no usable NVIDIA GPU: $(nvidia-smi -L 2>&1 | head -1)"
  smi() { nvidia-smi "$@"; }
  cpuinfo() { LC_ALL=C lscpu; }
fi

# --- 1. gpuforge -------------------------------------------------------------------------
if [ -z "$GPUFORGE" ]; then
  GPUFORGE="$REPO/build/gpuforge"
  if [ ! -x "$GPUFORGE" ]; then
    say "building gpuforge in $REPO/build (pass a built binary to skip this)"
    cmake -S "$REPO" -B "$REPO/build" -DCMAKE_BUILD_TYPE=Release -DGPUFORGE_TESTS=OFF >"$WORK/build.log" 2>&1 &&
      cmake --build "$REPO/build" --target gpuforge -j"$(nproc)" >>"$WORK/build.log" 2>&1 ||
      { tail -n 30 "$WORK/build.log"; fail "cannot build gpuforge (log above)"; }
  fi
fi
[ -x "$GPUFORGE" ] || fail "gpuforge binary $GPUFORGE is not executable"

# --- 2. this machine's inventory ---------------------------------------------------------
smi --query-gpu=index,name,pci.bus_id,memory.total,power.limit --format=csv >"$WORK/query-gpu.csv" ||
  fail "nvidia-smi --query-gpu failed"
smi -q -x >"$WORK/nvidia-smi-q.xml" || fail "nvidia-smi -q -x failed"
smi topo -m >"$WORK/topo-m.txt" 2>/dev/null || : >"$WORK/topo-m.txt"
cpuinfo >"$WORK/lscpu.txt" || fail "lscpu failed"

# Columns by header name: the real nvidia-smi answers exactly what was asked, a recorded
# answer may hold more columns.
awk -F', *' '
  NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/ \[.*$/, "", h); col[h] = i }; next }
  NF > 1 { print $col["index"] "|" $col["name"] "|" $col["pci.bus_id"] "|" $col["memory.total"] "|" $col["power.limit"] }
' "$WORK/query-gpu.csv" >"$WORK/gpus.txt"
[ -s "$WORK/gpus.txt" ] || fail "nvidia-smi --query-gpu listed no GPU"

# NCCL names a device by its lower-case bus id with a 4-digit domain ("0000:18:00.0");
# nvidia-smi prints an 8-digit one ("00000000:18:00.0").
busid() { echo "$1" | tr 'A-F' 'a-f' | sed -E 's/^0{4}([0-9a-f]{4}:)/\1/'; }

# The -q -x answer names the same GPUs: a cross-check that both read the same machine.
xml_ids="$(grep -o '<gpu id="[^"]*"' "$WORK/nvidia-smi-q.xml" | sed 's/<gpu id="//; s/"$//' | while read -r b; do busid "$b"; done | sort)"

# NUMA node of the device at bus id $1, else the "NUMA Affinity" column of `nvidia-smi topo -m`
# for GPU index $2, else 0 on a machine with one NUMA node.
numa_nodes="$(sed -n 's/^NUMA node(s): *//p' "$WORK/lscpu.txt")"
numa_of_gpu() {
  local n
  n="$(cat "$SYSFS_ROOT/bus/pci/devices/$1/numa_node" 2>/dev/null)"
  if [ -z "$n" ] || [ "$n" -lt 0 ] 2>/dev/null; then
    n="$(sed 's/\x1b\[[0-9;]*m//g' "$WORK/topo-m.txt" | awk -F'\t' -v gpu="GPU$2" '
      !h && /NUMA Affinity/ { for (i = 1; i <= NF; i++) if ($i == "NUMA Affinity") c = i; h = 1; next }
      h && $1 == gpu && c { print $c; exit }')"
  fi
  case "$n" in
    ''|N/A|*[!0-9]*) [ "${numa_nodes:-1}" = 1 ] && n=0 || n="" ;;
  esac
  echo "$n"
}

model="" gpu_pci="" gpu_numa="" count=0 mem_mib="" tdp=""
while IFS='|' read -r idx name bus mem power; do
  b="$(busid "$bus")"
  n="$(numa_of_gpu "$b" "$idx")"
  [ -n "$n" ] || skip "cannot tell the NUMA node of GPU $idx ($b): sysfs, nvidia-smi topo -m and lscpu do not say"
  m="$(echo "$name" | sed -E 's/[^A-Za-z0-9_.-]+/-/g; s/^-+//; s/-+$//')"
  [ -z "$model" ] || [ "$model" = "$m" ] || skip "GPUs of two models ($model, $m): one profile holds one kind here"
  model="$m"
  gpu_pci="$gpu_pci${gpu_pci:+, }\"$b\""
  gpu_numa="$gpu_numa${gpu_numa:+, }$n"
  count=$((count + 1))
  mem_mib="$(echo "$mem" | sed -E 's/[^0-9].*//')"
  tdp="$(echo "$power" | sed -E 's/^([0-9]+)(\.[0-9]+)?.*/\1/; /^[0-9]+$/!d')"
done <"$WORK/gpus.txt"
query_ids="$(tr -d ' ' <"$WORK/gpus.txt" | cut -d'|' -f3 | while read -r b; do busid "$b"; done | sort)"
[ "$query_ids" = "$xml_ids" ] || fail "nvidia-smi --query-gpu ($query_ids) and -q -x ($xml_ids) disagree on the GPUs"

lscpu_field() { sed -n "s/^$1: *//p" "$WORK/lscpu.txt" | head -1; }
sockets="$(lscpu_field 'Socket(s)')"
cores="$(lscpu_field 'Core(s) per socket')"
threads="$(lscpu_field 'Thread(s) per core')"
cpu_model="$(lscpu_field 'Model name' | sed -E 's/[^A-Za-z0-9 ._+@()\/-]//g' | cut -c1-128)"
case "$sockets$cores$threads" in *[!0-9]*|'') fail "lscpu gives no socket/core/thread counts" ;; esac

# RDMA NICs: every device under /sys/class/infiniband (InfiniBand or RoCE), with the bus id
# and NUMA node of its PCI function.
nics=""
for dev in "$SYSFS_ROOT"/class/infiniband/*; do
  [ -e "$dev/device" ] || continue
  name="$(basename "$dev")"
  pci="$(basename "$(readlink -f "$dev/device")")"
  n="$(cat "$dev/device/numa_node" 2>/dev/null)"
  case "$n" in ''|-*) [ "${numa_nodes:-1}" = 1 ] && n=0 || { say "NIC $name: NUMA node unknown, left out"; continue; } ;; esac
  layer="$(cat "$dev/ports/1/link_layer" 2>/dev/null)"
  [ "$layer" = "Ethernet" ] && kind=roce || kind=infiniband
  rate="$(sed -E 's/^([0-9]+).*/\1/' "$dev/ports/1/rate" 2>/dev/null)"
  nics="$nics      - {name: \"$name\", kind: $kind, rate: ${rate:-100}Gb/s, pci: \"$(busid "$pci")\", numa: $n}
"
done

{
  echo "# Written by bench/gpu/nccl_topo_check.sh from this machine's nvidia-smi, lscpu and sysfs."
  echo "version: 1"
  echo "cluster: {name: nccl-topo-check}"
  echo "profiles:"
  echo "  this-machine:"
  echo "    gpus: {model: \"$model\", count: $count, pci: [$gpu_pci], numa: [$gpu_numa]${mem_mib:+, memory: ${mem_mib}MiB}${tdp:+, tdp: ${tdp}W}}"
  echo "    cpu: {model: \"$cpu_model\", sockets: $sockets, cores_per_socket: $cores, threads_per_core: $threads}"
  if [ -n "$nics" ]; then
    echo "    nics:"
    printf '%s' "$nics"
  fi
  echo "nodes:"
  echo "  - {name: $NODE, profile: this-machine}"
  echo "software:"
  echo "  nccl: {topo_file: /etc/nccl-topology.xml}"
} >"$WORK/inventory.yaml"
say "inventory: $count x $model, $sockets socket(s) x $cores cores x $threads threads, $(printf '%s' "$nics" | grep -c name:) RDMA NIC(s)"

# --- 3. render ---------------------------------------------------------------------------
"$GPUFORGE" render "$WORK/inventory.yaml" --out "$WORK/render" --templates "$REPO/templates" >"$WORK/render.log" 2>&1 ||
  { cat "$WORK/render.log"; cat "$WORK/inventory.yaml"; fail "gpuforge render failed"; }
TOPO="$WORK/render/$NODE/etc/nccl-topology.xml"
if [ ! -f "$TOPO" ]; then
  cat "$WORK/render.log"
  skip "gpuforge did not render a topology file for this machine (reason above)"
fi
for b in $query_ids; do
  grep -q "<pci busid=\"$b\" class=\"0x030200\"" "$TOPO" || { cat "$TOPO"; fail "the topology file has no GPU $b"; }
done
grep -q "^NCCL_TOPO_FILE=/etc/nccl-topology.xml$" "$WORK/render/$NODE/etc/nccl.conf" ||
  fail "nccl.conf does not point at the topology file"
say "rendered $TOPO with GPU(s) $(echo $query_ids)"

if [ "$DRY" = 1 ]; then
  say "PASS (dry run: inventory and render only; NCCL was not run)"
  exit 0
fi

# --- 4. NCCL with the file ---------------------------------------------------------------
LOG="$WORK/nccl.log"
DUMP="$WORK/nccl-topo-dump.xml"
export NCCL_TOPO_FILE="$TOPO" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH NCCL_TOPO_DUMP_FILE="$DUMP"
# Keep this user's ~/.nccl.conf out. NCCL still reads /etc/nccl.conf, but the environment wins
# over it, and the topology file is set in the environment.
export NCCL_CONF_FILE=/dev/null

runner=""
for d in "${NCCL_TESTS_DIR:-}" "$(dirname "$(command -v all_reduce_perf 2>/dev/null || echo /nonexistent/x)")" \
         /usr/local/bin /opt/nccl-tests/build /usr/local/nccl-tests/build; do
  if [ -n "$d" ] && [ -x "$d/all_reduce_perf" ]; then runner="nccl-tests $d/all_reduce_perf"; break; fi
done
if [ -z "$runner" ] && command -v python3 >/dev/null 2>&1 &&
   python3 -c 'import torch, torch.distributed as d; assert torch.cuda.is_available() and d.is_nccl_available()' 2>/dev/null; then
  runner="pytorch"
fi
if [ -z "$runner" ] && command -v nvcc >/dev/null 2>&1; then
  runner="nvcc"
fi
[ -n "$runner" ] || fail "no way to run NCCL here: no all_reduce_perf, no PyTorch with CUDA and NCCL, no nvcc"
say "all-reduce with ${runner%% *}"

case "$runner" in
  nccl-tests*)
    timeout "$TIMEOUT_S" "${runner#nccl-tests }" -b 8 -e 8M -f 4 -g 1 -n 5 -w 2 -c 1 >"$LOG" 2>&1
    rc=$?
    [ $rc -eq 0 ] && grep -q "Out of bounds values : 0 OK" "$LOG" && ok=1 || ok=0
    ;;
  pytorch)
    cat >"$WORK/allreduce.py" <<'EOF'
import torch
import torch.distributed as dist

torch.cuda.set_device(0)
try:  # device_id (PyTorch 2.3+) creates the NCCL communicator at once
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
except TypeError:
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
x = torch.full((1 << 20,), 2.0, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
assert bool((x == 2.0).all()), "wrong all-reduce result"
print("ALLREDUCE OK nccl", ".".join(map(str, torch.cuda.nccl.version())), flush=True)
dist.destroy_process_group()
EOF
    timeout "$TIMEOUT_S" python3 "$WORK/allreduce.py" >"$LOG" 2>&1
    rc=$?
    [ $rc -eq 0 ] && grep -q "ALLREDUCE OK" "$LOG" && ok=1 || ok=0
    ;;
  nvcc)
    inc="" lib=""
    for d in /usr/include /usr/local/include /usr/local/cuda/include; do [ -f "$d/nccl.h" ] && inc="$d"; done
    [ -n "$inc" ] || fail "nvcc found but no nccl.h"
    cat >"$WORK/allreduce.cu" <<'EOF'
#include <nccl.h>
#include <stdio.h>
#include <cuda_runtime.h>
#define CK(x, ok) do { if (!(ok)) { fprintf(stderr, "%s failed\n", #x); return 1; } } while (0)
int main(void) {
  ncclComm_t comm;
  int dev = 0;
  float* buf;
  float host[1024];
  cudaStream_t s;
  CK(cudaSetDevice, cudaSetDevice(0) == cudaSuccess);
  CK(ncclCommInitAll, ncclCommInitAll(&comm, 1, &dev) == ncclSuccess);
  CK(cudaMalloc, cudaMalloc(&buf, sizeof host) == cudaSuccess);
  for (int i = 0; i < 1024; ++i) host[i] = 2.0f;
  CK(cudaMemcpy, cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
  CK(cudaStreamCreate, cudaStreamCreate(&s) == cudaSuccess);
  CK(ncclAllReduce, ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, s) == ncclSuccess);
  CK(cudaStreamSynchronize, cudaStreamSynchronize(s) == cudaSuccess);
  CK(cudaMemcpy, cudaMemcpy(host, buf, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int i = 0; i < 1024; ++i) CK(result, host[i] == 2.0f);
  ncclCommDestroy(comm);
  printf("ALLREDUCE OK\n");
  return 0;
}
EOF
    nvcc -O2 -I"$inc" -o "$WORK/allreduce" "$WORK/allreduce.cu" -lnccl >"$WORK/nvcc.log" 2>&1 ||
      { cat "$WORK/nvcc.log"; fail "cannot build the NCCL all-reduce program"; }
    timeout "$TIMEOUT_S" "$WORK/allreduce" >"$LOG" 2>&1
    rc=$?
    [ $rc -eq 0 ] && grep -q "ALLREDUCE OK" "$LOG" && ok=1 || ok=0
    ;;
esac

# --- 5. what NCCL said -------------------------------------------------------------------
problems=()
[ "$ok" = 1 ] || problems+=("the all-reduce did not complete correctly (exit status $rc)")
grep -qF "NCCL_TOPO_FILE set by environment to $TOPO" "$LOG" ||
  problems+=("NCCL never logged 'NCCL_TOPO_FILE set by environment to $TOPO'")
grep -qF "Loading topology file $TOPO" "$LOG" ||
  problems+=("NCCL never logged 'Loading topology file $TOPO'")
grep -q "Could not open XML topology file" "$LOG" &&
  problems+=("NCCL could not open the topology file")
# NCCL's WARN lines about the file: its XML, versions, PCI devices, CPUs and NUMA nodes.
topo_warns="$(grep -E 'NCCL WARN' "$LOG" | grep -iE 'topo|xml|pci|busid|cpu|numa|affinity|attribute' || true)"
other_warns="$(grep -E 'NCCL WARN' "$LOG" | grep -viE 'topo|xml|pci|busid|cpu|numa|affinity|attribute' || true)"
[ -z "$topo_warns" ] || problems+=("NCCL warned about the topology: $topo_warns")
# The dump of what NCCL ended up with must hold each GPU once, under our pci entry (a bus id
# NCCL did not match would leave our entry empty and a second one from sysfs).
if [ -f "$DUMP" ]; then
  for b in $query_ids; do
    c="$(grep -c "busid=\"$b\"" "$DUMP")"
    [ "$c" = 1 ] || problems+=("NCCL's topology dump lists $b $c times")
  done
fi

echo "--- NCCL log (topology lines) ---"
grep -E 'NCCL_TOPO_FILE|topology|Topology|WARN|ALLREDUCE|Out of bounds|NCCL version' "$LOG" | head -n 40
[ -z "$other_warns" ] || { echo "--- other NCCL warnings (not about the topology file) ---"; echo "$other_warns"; }
if [ ${#problems[@]} -gt 0 ]; then
  echo "--- last lines of the NCCL log ($LOG) ---"
  tail -n 40 "$LOG"
  for p in "${problems[@]}"; do say "problem: $p"; done
  fail "NCCL did not accept the rendered topology file cleanly"
fi
say "PASS: NCCL loaded $TOPO, ran the all-reduce, and warned about nothing in it"
exit 0
