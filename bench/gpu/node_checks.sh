#!/usr/bin/env bash
# What bench/gpu/run.sh checks on the GPU machine beyond the probe-against-PyTorch table:
# gpuforge used as an operator would use it on this one node, the embedded kernels under
# compute-sanitizer, nccl-tests beside nccl.allreduce, and deliberate faults.
#
#   bench/gpu/node_checks.sh --gpuforge CMD --out DIR [--nccl-tests DIR] [--budget SECONDS]
#                            [--dry-run]
#
# CMD is a gpuforge that runs here (run.sh passes its wrapper, which sets LD_LIBRARY_PATH,
# GPUFORGE_TEMPLATES and GPUFORGE_VALIDATION_DATA). NCCL_TESTS_LD_LIBRARY_PATH, when set, is
# all_reduce_perf's library path (run.sh gives it gpuforge's, so both load the same libnccl). DIR receives every output and
# checks.jsonl: one {"check", "state", "detail", "expect"} line per step, state PASS, FAIL,
# SKIP or ERROR, which compare.py turns into rows. Steps:
#
#  1. inventory: a one-node inventory of this machine (inventory.yaml) from nvidia-smi (GPU
#     model, count, bus ids), sysfs (each GPU's NUMA node), lscpu and /proc/meminfo; `lint` on it.
#  2. facts: `facts --local --save DIR/facts`, then `facts --local --check --format json`
#     (drift against the inventory written from the same machine: none expected but versions).
#  3. render: `render --facts DIR/facts` writes the NCCL topology file from the measured PCI tree.
#  4. topology: nccl_topo_check.sh --topo <the rendered file> (NCCL without and with it), and
#     --topo dump (NCCL's own dump fed back) as the control. Needs all_reduce_perf.
#  5. nccl-tests: all_reduce_perf -b 64M -e 2G -f 2 -g 1 -w 5 -n 20 -c 1, three times
#     (nccl-tests.txt), for compare.py's gpuforge-against-nccl-tests rows.
#  6. validate --local --checks gpu,nccl in every output format: text (validate.txt), JSON
#     (validate.json) with --junit, --report (HTML), --prometheus and --save-results beside it.
#  7. compute-sanitizer memcheck, racecheck, synccheck and initcheck over the kernels gpuforge
#     embeds (--kernel-name kns=gpuforge_: gpuforge_fma_fp32 through gpu.compute,
#     gpuforge_nccl_fill / gpuforge_nccl_verify through nccl.allreduce); NVIDIA's own kernels
#     (cuBLASLt, NCCL) are not gpuforge's and are left out by the filter.
#  8. faults, each expected to be a SKIP or ERROR with a code, never ok: no visible GPU
#     (CUDA_VISIBLE_DEVICES empty) for gpu.copy, gpu.gemm, nccl.allreduce and validate;
#     sizes over the parameters' limits (a 1 TiB copy and all-reduce, a GEMM dimension out of
#     range); sizes within them that the GPU cannot hold while PyTorch keeps the rest of its
#     memory (a 2 x 32 GiB copy, a 2 x 16 GiB all-reduce).
#
# --dry-run: every step that needs a GPU or a tool this machine lacks is written as SKIP with
# the reason (nothing is faked); the inventory uses a recorded H200's answers.
# Exit status: 0 every step ran and met its expectation, 1 otherwise, 2 usage.

set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GF=""
OUTDIR=""
NCCL_TESTS=""
BUDGET_S=240
DRY=0
NODE="gpunode"

usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --gpuforge) GF="$2"; shift ;;
    --out) OUTDIR="$2"; shift ;;
    --nccl-tests) NCCL_TESTS="$2"; shift ;;
    --budget) BUDGET_S="$2"; shift ;;
    --dry-run) DRY=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "node_checks: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[ -n "$GF" ] && [ -n "$OUTDIR" ] || { usage >&2; exit 2; }
case "$BUDGET_S" in ''|*[!0-9]*) echo "node_checks: --budget takes whole seconds" >&2; exit 2 ;; esac

START="$(date +%s)"
mkdir -p "$OUTDIR" || exit 2
OUTDIR="$(cd "$OUTDIR" && pwd)"
CHECKS="$OUTDIR/checks.jsonl"
: >"$CHECKS"
PY="${PYTHON:-python3}"

say() { echo "node_checks: $*"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
# record CHECK STATE DETAIL [EXPECT]
record() {
  "$PY" -c 'import json, sys
print(json.dumps({"check": sys.argv[1], "state": sys.argv[2], "detail": sys.argv[3][:2000],
                  "expect": sys.argv[4]}))' "$1" "$2" "$3" "${4:-}" >>"$CHECKS"
  say "$1: $2 $(printf '%s' "$3" | head -c 300)"
}
# summarize KIND FILE: one line about a JSON document gpuforge wrote, "NOT-JSON ..." when it is
# not one. drift: facts --check's codes; counts: validate's verdict and states counted; codes:
# validate's verdict and each state with its code.
summarize() {
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
kind, path = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except (OSError, ValueError) as e:
    print("NOT-JSON", e)
    sys.exit()
if kind == "drift":
    fs = d.get("drift") or []
    print("; ".join("%s %s" % (x.get("code"), x.get("subject", "")) for x in fs if isinstance(x, dict))[:1500]
          or "none")
elif kind == "counts":
    c = {}
    for r in d.get("results", []):
        c[r.get("state")] = c.get(r.get("state"), 0) + 1
    print(d.get("verdict"), " ".join("%s=%s" % (k, v) for k, v in sorted(c.items())))
else:
    print(d.get("verdict"), "; ".join(sorted({"%s %s" % (r.get("state"), r.get("code")) for r in d.get("results", [])})))
PYEOF
}
# t WANT: WANT seconds or what is left of the budget, whichever is less (at least 5)
t() { local l; l="$(left)"; [ "$l" -lt "$1" ] && echo $((l > 5 ? l : 5)) || echo "$1"; }
out_of_time() { [ "$(left)" -lt "$1" ]; }

GPU_OK=1
GPU_WHY=""
if [ "$DRY" = 1 ]; then
  GPU_OK=0; GPU_WHY="dry run: no GPU is used"
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  GPU_OK=0; GPU_WHY="no nvidia-smi on this machine"
elif ! nvidia-smi -L >/dev/null 2>&1; then
  GPU_OK=0; GPU_WHY="nvidia-smi finds no usable GPU: $(nvidia-smi -L 2>&1 | head -n 1)"
fi

# --- 1. the one-node inventory ---------------------------------------------------------------
INV="$OUTDIR/inventory.yaml"
if [ "$GPU_OK" = 1 ]; then
  nvidia-smi --query-gpu=name,pci.bus_id --format=csv,noheader >"$OUTDIR/gpus.csv" 2>&1
else
  printf 'NVIDIA H200, 00000000:00:06.0\n' >"$OUTDIR/gpus.csv"  # the H200 run.sh first ran on
fi
"$PY" - "$OUTDIR/gpus.csv" "$INV" "$NODE" <<'EOF'
import os, re, subprocess, sys
csv, out, node = sys.argv[1], sys.argv[2], sys.argv[3]
models, buses, numas = [], [], []
for line in open(csv):
    if "," not in line:
        continue
    name, bus = [x.strip() for x in line.split(",", 1)]
    # nvidia-smi prints an 8-digit PCI domain; the inventory and sysfs use 4.
    bus = bus.lower()
    m = re.fullmatch(r"0*([0-9a-f]{1,4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", bus)
    if not m:
        sys.exit(f"node_checks: cannot read the bus id {bus!r} from nvidia-smi")
    bus = f"{int(m.group(1), 16):04x}:{m.group(2)}:{m.group(3)}.{m.group(4)}"
    models.append(re.sub(r"^NVIDIA\s+", "", name).split()[0])
    buses.append(bus)
    try:
        n = int(open(f"/sys/bus/pci/devices/{bus}/numa_node").read().strip())
    except (OSError, ValueError):
        n = -1
    numas.append(max(n, 0))
if not models:
    sys.exit("node_checks: nvidia-smi listed no GPU")
# lscpu's socket, core and thread counts, as facts reads them (the inventory's cpu keys).
cpu = {"Socket(s)": "1", "Core(s) per socket": str(os.cpu_count() or 1), "Thread(s) per core": "1",
       "Model name": "unknown"}
try:
    for line in subprocess.run(["lscpu"], capture_output=True, text=True, timeout=20).stdout.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in cpu and v.strip():
            cpu[k.strip()] = v.strip()
except (OSError, subprocess.SubprocessError):
    pass
cpu_model = re.sub(r"[^A-Za-z0-9 ._+@()/-]", " ", cpu["Model name"])[:120].strip() or "unknown"
sockets, cores, threads = (int(cpu[k]) if cpu[k].isdigit() else 1
                           for k in ("Socket(s)", "Core(s) per socket", "Thread(s) per core"))
mem_kib = 0
for line in open("/proc/meminfo"):
    if line.startswith("MemTotal:"):
        mem_kib = int(line.split()[1])
mem_mib = max(1, mem_kib // 1024)
model = models[0]
quoted = ", ".join(f'"{b}"' for b in buses)
with open(out, "w") as f:
    f.write(f"""# One-node inventory of the machine bench/gpu/node_checks.sh ran on, written from
# nvidia-smi (GPU model and bus ids), sysfs (NUMA), os.cpu_count() and /proc/meminfo.
version: 1
cluster:
  name: benchgpu
  site: {{rack_power_limit: 20kW, cooling: air}}
racks:
  r01: {{power_limit: 20kW, cooling: air}}
profiles:
  this:
    gpus:
      model: {model}
      count: {len(models)}
      pci: [{quoted}]
      numa: {numas}
    cpu: {{model: "{cpu_model}", sockets: {sockets}, cores_per_socket: {cores}, threads_per_core: {threads}}}
    memory: {mem_mib}MiB
nodes:
  - {{name: {node}, address: 127.0.0.1, rack: r01, profile: this}}
software:
  nccl:
    topo_file: /etc/nccl/topo.xml
""")
print(f"{len(models)} x {model}, {mem_mib} MiB, {sockets}x{cores}x{threads} CPUs")
EOF
if [ -s "$INV" ]; then
  "$GF" lint "$INV" >"$OUTDIR/lint.txt" 2>&1
  rc=$?
  [ "$rc" = 0 ] && record inventory PASS "one-node inventory written and linted (lint exit 0)" \
    || record inventory FAIL "lint exit $rc: $(tail -n 5 "$OUTDIR/lint.txt")"
else
  record inventory ERROR "no inventory written"
fi

# --- 2. facts ---------------------------------------------------------------------------------
"$GF" facts "$INV" --local --nodes "$NODE" --save "$OUTDIR/facts" >"$OUTDIR/facts.txt" 2>&1
rc=$?
[ "$rc" = 0 ] && record facts.gather PASS "$(head -n 1 "$OUTDIR/facts.txt")" \
  || record facts.gather FAIL "facts --local exit $rc: $(tail -n 5 "$OUTDIR/facts.txt")"
"$GF" facts "$INV" --local --nodes "$NODE" --check --format json >"$OUTDIR/facts-check.json" \
  2>"$OUTDIR/facts-check.err"
rc=$?
drift="$(summarize drift "$OUTDIR/facts-check.json" 2>&1)"
# The inventory is this machine's own: only what it leaves unset may differ. Reported, not judged.
record facts.check "$([ "$rc" -le 1 ] && echo PASS || echo ERROR)" "exit $rc; drift: $drift" \
  "runs; drift is shown, not judged"

# --- 3. render the NCCL topology file from the measured PCI tree -------------------------------
"$GF" render "$INV" --out "$OUTDIR/render" --facts "$OUTDIR/facts" >"$OUTDIR/render.txt" 2>&1
rc=$?
TOPO="$OUTDIR/render/$NODE/etc/nccl/topo.xml"
if [ "$rc" = 0 ] && [ -s "$TOPO" ]; then
  # NCCL adds each <gpu> itself under the GPU's <pci> (class 0x03...); the file gives the tree.
  record render.topo PASS "rendered $(grep -c 'class="0x03' "$TOPO") GPU(s) into etc/nccl/topo.xml"
elif [ "$GPU_OK" = 0 ]; then
  record render.topo SKIP "$GPU_WHY; render said: $(tail -n 2 "$OUTDIR/render.txt")"
else
  record render.topo FAIL "render exit $rc, no topology file: $(tail -n 3 "$OUTDIR/render.txt")"
fi

# --- 4 and 5. NCCL with and without the file; nccl-tests beside nccl.allreduce -----------------
ARP=""
for d in "$NCCL_TESTS" "${NCCL_TESTS_DIR:-}"; do
  [ -n "$d" ] && [ -x "$d/all_reduce_perf" ] && ARP="$d/all_reduce_perf" && break
done
topo_check() {  # topo_check NAME FILE
  if [ "$GPU_OK" = 0 ]; then record "$1" SKIP "$GPU_WHY"; return; fi
  if [ -z "$ARP" ]; then record "$1" SKIP "no all_reduce_perf (pack.sh --nccl-tests SRC)"; return; fi
  if [ "$2" != dump ] && [ ! -s "$2" ]; then record "$1" SKIP "no topology file to try"; return; fi
  LD_LIBRARY_PATH="${NCCL_TESTS_LD_LIBRARY_PATH:-${LD_LIBRARY_PATH:-}}" \
    NCCL_TESTS_DIR="$(dirname "$ARP")" NCCL_CHECK_TIMEOUT=60 timeout -k 5 "$(t 150)" \
    bash "$HERE/nccl_topo_check.sh" --topo "$2" --keep "$OUTDIR/$1" >"$OUTDIR/$1.txt" 2>&1
  local rc=$?
  case "$rc" in
    0) record "$1" PASS "$(grep -E "channels|bandwidth|algbw|PASS" "$OUTDIR/$1.txt" | tr '\n' ' ')" ;;
    77) record "$1" SKIP "$(tail -n 1 "$OUTDIR/$1.txt")" ;;
    *) record "$1" FAIL "exit $rc: $(grep -E 'worse|FAIL|channels|bandwidth' "$OUTDIR/$1.txt" | tr '\n' ' ')" ;;
  esac
}
topo_check topo.rendered "$TOPO"
topo_check topo.dump dump  # the control: NCCL's own dump fed back to it

if [ "$GPU_OK" = 0 ]; then
  record nccl-tests SKIP "$GPU_WHY"
elif [ -z "$ARP" ]; then
  record nccl-tests SKIP "no all_reduce_perf (pack.sh --nccl-tests SRC)"
else
  : >"$OUTDIR/nccl-tests.txt"
  ok=0
  for run in 1 2 3; do
    echo "## run $run" >>"$OUTDIR/nccl-tests.txt"
    LD_LIBRARY_PATH="${NCCL_TESTS_LD_LIBRARY_PATH:-${LD_LIBRARY_PATH:-}}" NCCL_DEBUG=WARN \
      timeout -k 5 "$(t 60)" "$ARP" -b 64M -e 2G -f 2 -g 1 -w 5 -n 20 -c 1 \
      >>"$OUTDIR/nccl-tests.txt" 2>&1 && ok=$((ok + 1))
  done
  if [ "$ok" = 3 ] && [ "$(grep -c 'Out of bounds values : 0 OK' "$OUTDIR/nccl-tests.txt")" = 3 ]; then
    record nccl-tests PASS "3 runs of all_reduce_perf -b 64M -e 2G -f 2 -g 1 -w 5 -n 20 -c 1"
  else
    record nccl-tests FAIL "$ok of 3 runs ended well: $(tail -n 5 "$OUTDIR/nccl-tests.txt" | tr '\n' ' ')"
  fi
fi

# --- 6. validate --local, every output format --------------------------------------------------
if out_of_time 40; then
  record validate SKIP "the time budget (--budget $BUDGET_S) is spent"
else
  "$GF" validate "$INV" --local --nodes "$NODE" --checks gpu,nccl --color never \
    >"$OUTDIR/validate.txt" 2>&1
  rc_text=$?
  mkdir -p "$OUTDIR/results"
  "$GF" validate "$INV" --local --nodes "$NODE" --checks gpu,nccl --format json \
    --junit "$OUTDIR/validate.junit.xml" --report "$OUTDIR/validate.html" \
    --prometheus "$OUTDIR/validate.prom" --save-results "$OUTDIR/results" \
    >"$OUTDIR/validate.json" 2>"$OUTDIR/validate.err"
  rc_json=$?
  state="$(summarize counts "$OUTDIR/validate.json" 2>&1)"
  missing=""
  for f in validate.junit.xml validate.html validate.prom; do [ -s "$OUTDIR/$f" ] || missing="$missing $f"; done
  ls "$OUTDIR/results/"*.json >/dev/null 2>&1 || missing="$missing results/*.json"
  detail="text exit $rc_text, json exit $rc_json; $state; $(grep -E '^Verdict' "$OUTDIR/validate.txt" | head -n 1)"
  if [ "$GPU_OK" = 0 ]; then
    record validate SKIP "$GPU_WHY; $detail"
  elif [ -n "$missing" ]; then
    record validate FAIL "not written:$missing; $detail"
  else
    case "$state" in
      PASS*) record validate PASS "$detail" ;;
      *) record validate FAIL "$detail" ;;
    esac
  fi
fi

# --- 7. compute-sanitizer over gpuforge's kernels ----------------------------------------------
SAN="$(command -v compute-sanitizer || true)"
[ -n "$SAN" ] || { [ -x /usr/local/cuda/bin/compute-sanitizer ] && SAN=/usr/local/cuda/bin/compute-sanitizer; }
: >"$OUTDIR/sanitizer.txt"
for tool in memcheck racecheck synccheck initcheck; do
  if [ "$GPU_OK" = 0 ]; then record "sanitizer.$tool" SKIP "$GPU_WHY"; continue; fi
  if [ -z "$SAN" ]; then record "sanitizer.$tool" SKIP "no compute-sanitizer here"; continue; fi
  if out_of_time 30; then record "sanitizer.$tool" SKIP "the time budget is spent"; continue; fi
  errors=0
  summary=""
  for probe in "gpu.compute --param loops=256 --param warmup=1 --param iters=2 --param repeats=1" \
               "nccl.allreduce --param min_bytes=1MiB --param max_bytes=4MiB --param warmup=1 --param iters=2 --param nccl_debug=WARN"; do
    echo "## $tool: $probe" >>"$OUTDIR/sanitizer.txt"
    # shellcheck disable=SC2086
    timeout -k 5 "$(t 60)" "$SAN" --tool "$tool" --kernel-name kns=gpuforge_ --error-exitcode 99 \
      --print-limit 20 $( [ "$tool" = racecheck ] && echo --racecheck-report all ) \
      "$GF" agent run $probe >"$OUTDIR/san.out" 2>&1
    rc=$?
    cat "$OUTDIR/san.out" >>"$OUTDIR/sanitizer.txt"
    outcome="$(grep '^{' "$OUTDIR/san.out" | tail -n 1 | "$PY" -c 'import json, sys
print(json.loads(sys.stdin.read() or "{}").get("outcome", "none"))' 2>/dev/null)"
    sum="$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUTDIR/san.out" | tail -n 1 | sed 's/^=* *//')"
    # memcheck also reports CUDA API calls that returned an error. NCCL makes some on purpose:
    # on the H200 (NCCL 2.28.9) ncclInitKernelsForDevice (enqueue.cc:52-54) asks
    # cudaFuncGetAttributes of kernels built for other architectures and gets
    # cudaErrorNoKernelImageForDevice, 8 times. Those are NCCL's own, not gpuforge's: an error is
    # ours unless the first host frame under it is in libnccl.
    total="$(printf '%s' "$sum" | sed -n 's/.*SUMMARY: \([0-9][0-9]*\) error.*/\1/p')"
    nccl_api="$(awk '/Program hit/ { hit = 1; next } hit && /Host Frame/ { if ($0 ~ /libnccl\.so/) n++; hit = 0 } END { print n + 0 }' "$OUTDIR/san.out")"
    ours=$(( ${total:-0} - nccl_api ))
    summary="$summary ${probe%% *}: exit $rc, probe $outcome, ${sum:-no summary}"
    [ "$nccl_api" -gt 0 ] && summary="$summary ($nccl_api of them CUDA API errors inside libnccl, not counted)"
    summary="$summary;"
    if [ "$outcome" != ok ] || [ -z "$sum" ] || [ "$ours" -gt 0 ]; then
      errors=$((errors + 1))
    elif [ "$rc" != 0 ] && [ "$rc" != 99 ]; then
      errors=$((errors + 1))
    fi
  done
  [ "$errors" = 0 ] && record "sanitizer.$tool" PASS "$summary" || record "sanitizer.$tool" FAIL "$summary"
done

# --- 8. deliberate faults ----------------------------------------------------------------------
fault() {  # fault NAME ENV PROBE [ARGS...]: expect a SKIP or ERROR with a code
  local name="$1" envset="$2" probe="$3"
  shift 3
  if [ "$GPU_OK" = 0 ] && [ "$name" != fault.gemm_dim ]; then record "$name" SKIP "$GPU_WHY"; return; fi
  local args=() kv
  for kv in "$@"; do args+=(--param "$kv"); done
  # shellcheck disable=SC2086
  env $envset timeout -k 5 "$(t 60)" "$GF" agent run "$probe" "${args[@]}" >"$OUTDIR/fault.out" 2>&1
  local rc=$? line
  line="$(grep '^{' "$OUTDIR/fault.out" | tail -n 1)"
  echo "## $name ($envset $probe $*): exit $rc" >>"$OUTDIR/faults.txt"
  cat "$OUTDIR/fault.out" >>"$OUTDIR/faults.txt"
  local got
  got="$(printf '%s' "$line" | "$PY" -c 'import json, sys
r = json.loads(sys.stdin.read() or "{}")
print(r.get("outcome", "none"), r.get("code", ""), "-", (r.get("reason") or "")[:300])' 2>&1)"
  case "$got" in
    skip\ ?*|error\ ?*)
      [ "$(echo "$got" | awk '{print $2}')" != "-" ] && record "$name" PASS "$got (exit $rc)" "SKIP or ERROR with a code" \
        || record "$name" FAIL "no code: $got (exit $rc)" "SKIP or ERROR with a code" ;;
    *) record "$name" FAIL "$got (exit $rc)" "SKIP or ERROR with a code" ;;
  esac
}
: >"$OUTDIR/faults.txt"
fault fault.no_gpu.copy "CUDA_VISIBLE_DEVICES=" gpu.copy size=64MiB
fault fault.no_gpu.gemm "CUDA_VISIBLE_DEVICES=" gpu.gemm dim=1024
fault fault.no_gpu.nccl "CUDA_VISIBLE_DEVICES=" nccl.allreduce min_bytes=1MiB max_bytes=1MiB
fault fault.copy_1tib "" gpu.copy size=1TiB warmup=1 iters=1 repeats=1
fault fault.nccl_1tib "" nccl.allreduce min_bytes=1TiB max_bytes=1TiB warmup=1 iters=1
fault fault.gemm_dim "" gpu.gemm dim=16448
# A size the parameters accept but the GPU cannot hold: another process (PyTorch) keeps all but
# ~24 GiB of the GPU's memory while gpu.copy asks for 2 x 32 GiB and nccl.allreduce for 2 x 16 GiB.
if [ "$GPU_OK" = 1 ] && "$PY" -c 'import torch' 2>/dev/null; then
  "$PY" -c 'import sys, time, torch
free, total = torch.cuda.mem_get_info()
hold = torch.empty(max(0, free - (24 << 30)), dtype=torch.uint8, device="cuda")
print("held", hold.numel() >> 30, "GiB of", total >> 30, flush=True)
time.sleep(120)' >"$OUTDIR/holder.out" 2>&1 &
  holder=$!
  for _ in $(seq 1 60); do grep -q '^held' "$OUTDIR/holder.out" 2>/dev/null && break; sleep 0.5; done
  if grep -q '^held' "$OUTDIR/holder.out"; then
    fault fault.device_oom.copy "" gpu.copy size=32GiB warmup=1 iters=1 repeats=1
    fault fault.device_oom.nccl "" nccl.allreduce min_bytes=16GiB max_bytes=16GiB warmup=1 iters=1
  else
    record fault.device_oom.copy ERROR "the memory holder did not start: $(tail -n 3 "$OUTDIR/holder.out")"
  fi
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
else
  record fault.device_oom.copy SKIP "${GPU_WHY:-no PyTorch to hold GPU memory}"
fi
if [ "$GPU_OK" = 1 ]; then
  CUDA_VISIBLE_DEVICES= timeout -k 5 "$(t 60)" "$GF" validate "$INV" --local --nodes "$NODE" \
    --checks gpu,nccl --format json >"$OUTDIR/fault-validate.json" 2>>"$OUTDIR/faults.txt"
  rc=$?
  v="$(summarize codes "$OUTDIR/fault-validate.json" 2>&1)"
  case "$v" in
    PASS*) record fault.no_gpu.validate FAIL "validate with no visible GPU: $v (exit $rc)" "not PASS" ;;
    *) [ "$rc" != 0 ] && record fault.no_gpu.validate PASS "$v (exit $rc)" "not PASS, exit not 0" \
         || record fault.no_gpu.validate FAIL "$v but exit 0" "not PASS, exit not 0" ;;
  esac
else
  record fault.no_gpu.validate SKIP "$GPU_WHY"
fi

bad="$(grep -c '"state": "\(FAIL\|ERROR\)"' "$CHECKS")"
say "done in $(($(date +%s) - START)) s; $(wc -l <"$CHECKS") steps, $bad FAIL or ERROR"
[ "$bad" = 0 ]
