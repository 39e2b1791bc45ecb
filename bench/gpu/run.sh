#!/usr/bin/env bash
# gpuforge's GPU probes side by side with PyTorch, on the machine it runs on.
#
#   bench/gpu/run.sh [--dry-run] [--out DIR] [--gpuforge PATH] [--runs N] [--budget SECONDS]
#                    [--no-validate]
#
# a. nvidia-smi: the card's name, driver, memory, clocks and power before and after (read only;
#    nothing here changes a setting).
# b. gpuforge agent probes, --runs times each (default 3), in rounds (copy, h2d, d2h, gemm,
#    compute, nccl.allreduce, then again): gpu.copy 1GiB, gpu.h2d and gpu.d2h 256MiB, gpu.gemm
#    dim 8192 and 16384, gpu.compute (fp32 FMA) 65536 loops (each warmup 5, iters 20, repeats
#    5), nccl.allreduce 64MiB..2GiB x2 (warmup 5, iters 20); gpu.health once, first.
# c. bench/gpu/torch_ref.py: the same quantities with PyTorch, measured the same way.
# d. bench/gpu/compare.py: the table (quantity | gpuforge | PyTorch | ratio | target | met?).
# e. bench/gpu/node_checks.sh (unless --no-validate): a one-node inventory of this machine,
#    facts, the rendered NCCL topology file tried on NCCL, nccl-tests (carry/nccl-tests, from
#    pack.sh --nccl-tests), validate --local in every output format, compute-sanitizer over
#    gpuforge's kernels, deliberate faults; its steps are rows of the table.
#
# gpuforge: --gpuforge PATH, else bench/gpu/carry/gpuforge (with carry/lib, from pack.sh), else
# build-bench/gpuforge, else build/gpuforge, else a Release build into build/ (which fails
# where yaml-cpp, libssh, fmt, spdlog or CLI11 are missing: the PyTorch side still runs and the
# exit status is 77). libcublasLt and libnccl come from PyTorch's wheels (nvidia/*/lib), so
# both sides load the same libraries; libcuda and libnvidia-ml from the driver.
#
# Writes into DIR (default $OUT, else /tmp/gpuforge-bench-gpu) at most 8 files: env.txt,
# gpuforge.jsonl (every probe line), torch_ref.json, run.log, table.md, table.json and
# node.tar.gz (everything node_checks.sh wrote). The table is printed last.
#
# --dry-run: for a machine without a GPU: everything runs (the probes SKIP, PyTorch may be
# absent), nccl_topo_check.sh runs on its recorded fixtures, nothing is built.
# --budget: seconds for the whole run (default 420); each step's timeout is cut to fit, and
# steps left without time are reported as not run.
#
# Exit status: 0 every target met; 1 a target missed; 77 nothing could be compared (no GPU,
# no gpuforge binary, or no PyTorch); 2 usage.

set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/bench/gpu"
DRY=0
OUTDIR="${OUT:-/tmp/gpuforge-bench-gpu}"
GPUFORGE=""
RUNS=3
BUDGET_S=420
VALIDATE=1
PY="${PYTHON:-python3}"
NODE="gpunode"

# What both sides measure (torch_ref.py gets the same numbers).
WARMUP=5 ITERS=20 REPEATS=5
COPY_SIZE=1GiB PCIE_SIZE=256MiB GEMM_DIMS="8192 16384" FMA_LOOPS=65536
NCCL_MIN=64MiB NCCL_MAX=2GiB NCCL_FACTOR=2 NCCL_WARMUP=5 NCCL_ITERS=20
NCCL_SIZES="67108864,134217728,268435456,536870912,1073741824,2147483648"

usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --out) OUTDIR="$2"; shift ;;
    --gpuforge) GPUFORGE="$2"; shift ;;
    --runs) RUNS="$2"; shift ;;
    --budget) BUDGET_S="$2"; shift ;;
    --no-validate) VALIDATE=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
case "$RUNS$BUDGET_S" in *[!0-9]*) echo "run: --runs and --budget take whole numbers" >&2; exit 2 ;; esac

START="$(date +%s)"
mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
LOG="$OUTDIR/run.log"
JSONL="$OUTDIR/gpuforge.jsonl"
ENVF="$OUTDIR/env.txt"
TORCH_JSON="$OUTDIR/torch_ref.json"
INVENTORY="$OUTDIR/inventory.yaml"
VJSON="$OUTDIR/validate.json"
for f in "$LOG" "$JSONL" "$ENVF" "$TORCH_JSON" "$INVENTORY" "$VJSON" "$OUTDIR/table.md" "$OUTDIR/table.json"; do
  rm -f "$f"
done
: >"$LOG"
: >"$JSONL"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpuforge-bench-gpu.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

say() { echo "run: $*" | tee -a "$LOG"; }
elapsed() { echo $(($(date +%s) - START)); }
# limit WANT RESERVE: WANT seconds, or less so that RESERVE seconds stay for what follows.
limit() {
  local left=$((BUDGET_S - $(elapsed) - $2))
  if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}
envline() { echo "$1=$2" >>"$ENVF"; }

command -v "$PY" >/dev/null 2>&1 || { echo "run: no $PY (compare.py needs it)" >&2; exit 2; }
say "$( [ "$DRY" = 1 ] && echo "dry run, " )out $OUTDIR, budget ${BUDGET_S}s, $RUNS runs per probe"

# --- the NVIDIA libraries gpuforge opens with dlopen ----------------------------------------
# PyTorch's wheels: nvidia/cu13/lib (cuBLAS and the other CUDA 13 libraries), nvidia/nccl/lib
# (NCCL), older layouts nvidia/cublas/lib. Their folders go first, so that gpuforge loads the
# libraries PyTorch loads.
nvidia_wheel_dirs() {
  "$PY" - <<'EOF' 2>/dev/null || true
import glob, os, site, sys
roots = []
for p in list(sys.path) + list(getattr(site, "getsitepackages", lambda: [])()):
    if p and os.path.isdir(os.path.join(p, "nvidia")) and p not in roots:
        roots.append(p)
dirs = []
def add(d):
    if d and os.path.isdir(d) and d not in dirs:
        dirs.append(d)
for mod in ("nvidia.cu13", "nvidia.cublas", "nvidia.nccl"):
    try:
        m = __import__(mod, fromlist=["_"])
        for p in list(getattr(m, "__path__", [])):
            add(os.path.join(p, "lib"))
    except Exception:
        pass
for want in ("libcublasLt.so.*", "libnccl.so.*"):
    for r in roots:
        for f in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib", want))):
            add(os.path.dirname(f))
print(":".join(d for d in dirs if glob.glob(os.path.join(d, "libcublasLt.so.*")) or glob.glob(os.path.join(d, "libnccl.so.*"))))
EOF
}
NV_DIRS="$(nvidia_wheel_dirs)"
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [ -d "$d" ] && NV_DIRS="${NV_DIRS:+$NV_DIRS:}$d"
done

# Where the dynamic loader would find NAME along LD_LIBRARY_PATH $2, else in ld.so's cache.
resolve_lib() {
  local d
  local IFS=:
  for d in $2; do
    [ -n "$d" ] && [ -e "$d/$1" ] && { readlink -f "$d/$1"; return; }
  done
  ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF; exit }' | grep . || echo "not found"
}

# --- gpuforge ---------------------------------------------------------------------------------
GF_LIB=""       # the carry's lib/ when the binary is the carry's
NO_GF=""        # why there is no gpuforge, when there is none
gf_env() {      # gpuforge's LD_LIBRARY_PATH (no empty entry: that would mean ".")
  local p="${GF_LIB:+$GF_LIB:}${NV_DIRS:+$NV_DIRS:}${LD_LIBRARY_PATH:-}"
  echo "${p%:}"
}
try_gpuforge() {  # try_gpuforge BINARY [LIBDIR]: is it a gpuforge that has `agent`?
  [ -x "$1" ] || return 1
  local lib="${2:-}"
  if LD_LIBRARY_PATH="${lib:+$lib:}${LD_LIBRARY_PATH:-}" "$1" agent list >"$WORK/try.out" 2>&1; then
    GPUFORGE="$1"
    GF_LIB="$lib"
    return 0
  fi
  say "$1 does not run here or has no 'agent' command: $(head -c 400 "$WORK/try.out")"
  return 1
}

if [ -n "$GPUFORGE" ]; then
  lib=""
  [ -d "$(dirname "$GPUFORGE")/lib" ] && lib="$(cd "$(dirname "$GPUFORGE")/lib" && pwd)"
  given="$GPUFORGE"
  [ -d "$(dirname "$GPUFORGE")" ] && given="$(cd "$(dirname "$GPUFORGE")" && pwd)/$(basename "$GPUFORGE")"
  GPUFORGE=""
  try_gpuforge "$given" "$lib" || NO_GF="--gpuforge $given does not run here"
else
  try_gpuforge "$HERE/carry/gpuforge" "$HERE/carry/lib" ||
    try_gpuforge "$REPO/build-bench/gpuforge" ||
    try_gpuforge "$REPO/build/gpuforge" || true
  if [ -z "$GPUFORGE" ]; then
    if [ "$DRY" = 1 ]; then
      NO_GF="no gpuforge binary (carry/, build-bench/, build/) and a dry run builds nothing"
    else
      t="$(limit 240 200)"
      say "no usable gpuforge binary: building build/ (Release, no tests; at most ${t}s)"
      : >"$WORK/build.log"
      if [ "$t" -gt 30 ] &&
         timeout "$t" cmake -S "$REPO" -B "$REPO/build" -DCMAKE_BUILD_TYPE=Release -DGPUFORGE_TESTS=OFF \
           >"$WORK/build.log" 2>&1 &&
         t="$(limit 240 200)" && [ "$t" -gt 10 ] &&
         timeout "$t" cmake --build "$REPO/build" --target gpuforge -j"$(nproc)" \
           >>"$WORK/build.log" 2>&1 &&
         try_gpuforge "$REPO/build/gpuforge"; then
        say "built $GPUFORGE"
      else
        tail -n 25 "$WORK/build.log" 2>/dev/null | tee -a "$LOG" || true
        NO_GF="gpuforge could not be built here (build log above); run bench/gpu/pack.sh where it builds and carry bench/gpu/carry"
      fi
    fi
  fi
fi
if [ -n "$GPUFORGE" ]; then
  # The binary's compiled-in source directory is not this copy's: name the data it reads.
  cat >"$WORK/gpuforge" <<EOF
#!/bin/sh
LD_LIBRARY_PATH='$(gf_env)' GPUFORGE_TEMPLATES='$REPO/templates' GPUFORGE_VALIDATION_DATA='$REPO/inventories/validation/gpu-models.yaml' exec '$GPUFORGE' "\$@"
EOF
  chmod +x "$WORK/gpuforge"
  GF="$WORK/gpuforge"
  say "gpuforge: $GPUFORGE ($("$GF" --version 2>/dev/null | head -n 1 || echo "version unknown"))"
else
  GF=""
  say "no gpuforge: $NO_GF"
fi

# --- a. the machine -------------------------------------------------------------------------
SMI_FIELDS="name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.draw"
SMI_MORE="$SMI_FIELDS,clocks.mem,power.limit,temperature.gpu,pstate,clocks_event_reasons.active,pci.bus_id"
smi_state() {  # smi_state LABEL
  echo "## nvidia-smi, $1"
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "nvidia-smi: absent"
    return 0
  fi
  timeout 20 nvidia-smi --query-gpu="$SMI_MORE" --format=csv 2>/dev/null ||
    timeout 20 nvidia-smi --query-gpu="$SMI_FIELDS" --format=csv 2>&1 || echo "nvidia-smi failed"
}
{
  echo "# written by bench/gpu/run.sh"
  envline date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  envline host "$(uname -n) $(uname -r) $(uname -m)"
  envline os "$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')"
  envline cpus "$(nproc)"
  envline mode "$( [ "$DRY" = 1 ] && echo dry-run || echo gpu )"
  envline gpuforge "${GPUFORGE:-absent: $NO_GF}"
  [ -n "$GF" ] && envline gpuforge_version "$("$GF" --version 2>/dev/null | head -n 1)"
  envline python "$(command -v "$PY") $("$PY" --version 2>&1)"
  envline gpuforge_ld_library_path "$(gf_env)"
  for n in libcuda.so.1 libnvidia-ml.so.1 libcublasLt.so.13 libnccl.so.2; do
    envline "gpuforge_loads_$n" "$(resolve_lib "$n" "$(gf_env)")"
  done
  [ -f "$HERE/carry/MANIFEST.txt" ] && [ "$GF_LIB" = "$HERE/carry/lib" ] &&
    sed 's/^/# carry: /' "$HERE/carry/MANIFEST.txt"
  smi_state "before"
} >>"$ENVF" 2>&1
sed -n '/^## nvidia-smi, before/,$p' "$ENVF" | tee -a "$LOG"

# --- b. gpuforge's probes ---------------------------------------------------------------------
# A result line the probe could not write itself (no binary, timeout, usage error).
synth() {  # synth PROBE CODE REASON
  "$PY" -c 'import json, sys
print(json.dumps({"schema": "gpuforge.probe/v1", "probe": sys.argv[1], "outcome": "error",
                  "code": sys.argv[2], "reason": sys.argv[3], "params": {}, "seconds": 0,
                  "measurements": [], "log": [], "written_by": "bench/gpu/run.sh"}))' "$@"
}

# run_probe LABEL RESERVE_S WANT_S PROBE [NAME=VALUE...]
run_probe() {
  local label="$1" reserve="$2" want="$3" probe="$4"
  shift 4
  local args=() kv t rc line t0
  for kv in "$@"; do args+=(--param "$kv"); done
  if [ -z "$GF" ]; then
    synth "$probe" no_gpuforge "$NO_GF" >>"$JSONL"
    say "$label: absent (no gpuforge)"
    return 0
  fi
  t="$(limit "$want" "$reserve")"
  if [ "$t" -lt 10 ]; then
    synth "$probe" not_run "the run's time budget (--budget ${BUDGET_S}s) was spent" >>"$JSONL"
    say "$label: not run, the time budget is spent"
    return 0
  fi
  t0="$(date +%s.%N)"
  set +e
  timeout -k 10 $((t + 15)) "$GF" agent run "$probe" --timeout "$t" "${args[@]}" \
    </dev/null >"$WORK/probe.out" 2>"$WORK/probe.err"
  rc=$?
  set -e
  line="$(grep '^{' "$WORK/probe.out" | tail -n 1 || true)"
  if [ -n "$line" ]; then
    echo "$line" >>"$JSONL"
  elif grep -q "no probe '$probe'" "$WORK/probe.err"; then
    synth "$probe" no_such_probe "this gpuforge has no probe $probe" >>"$JSONL"
  else
    synth "$probe" no_result "gpuforge agent run exited $rc with no result line; stderr: $(tail -c 600 "$WORK/probe.err")" >>"$JSONL"
  fi
  [ -s "$WORK/probe.err" ] && sed "s/^/  $label stderr: /" "$WORK/probe.err" | tail -n 5 >>"$LOG"
  say "$label: $(tail -n 1 "$JSONL" | "$PY" -c 'import json, sys
r = json.loads(sys.stdin.read())
ms = r.get("measurements") or []
picked = [m for m in ms if m.get("metric") in ("bandwidth", "bf16_tflops", "fp32_tflops", "fp32_peak_fraction", "algbw", "wrong_total")][:4]
print(r.get("outcome", "?").upper(), r.get("code", "") or "",
      "; ".join("%s %s %.4g %s" % (m.get("entity"), m.get("metric"), m.get("value") or 0, m.get("unit", "")) for m in picked)
      or (r.get("reason", "") or "")[:200])') (rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s)"
}

# Time kept for the PyTorch side and the table while gpuforge's probes run.
TORCH_RESERVE=170
run_probe "gpu.health" "$TORCH_RESERVE" 60 gpu.health
for r in $(seq 1 "$RUNS"); do
  run_probe "gpu.copy run $r" "$TORCH_RESERVE" 60 gpu.copy size=$COPY_SIZE warmup=$WARMUP iters=$ITERS repeats=$REPEATS
  run_probe "gpu.h2d run $r" "$TORCH_RESERVE" 60 gpu.h2d size=$PCIE_SIZE warmup=$WARMUP iters=$ITERS repeats=$REPEATS
  run_probe "gpu.d2h run $r" "$TORCH_RESERVE" 60 gpu.d2h size=$PCIE_SIZE warmup=$WARMUP iters=$ITERS repeats=$REPEATS
  for dim in $GEMM_DIMS; do
    run_probe "gpu.gemm $dim run $r" "$TORCH_RESERVE" 60 gpu.gemm dim=$dim warmup=$WARMUP iters=$ITERS repeats=$REPEATS
  done
  run_probe "gpu.compute run $r" "$TORCH_RESERVE" 60 gpu.compute loops=$FMA_LOOPS warmup=$WARMUP iters=$ITERS repeats=$REPEATS
  run_probe "nccl.allreduce run $r" "$TORCH_RESERVE" 90 nccl.allreduce min_bytes=$NCCL_MIN max_bytes=$NCCL_MAX \
    step_factor=$NCCL_FACTOR warmup=$NCCL_WARMUP iters=$NCCL_ITERS
done

# --- c. PyTorch -------------------------------------------------------------------------------
t="$(limit 180 20)"
[ "$t" -ge 20 ] || t=20  # the reference matters more than the budget's last seconds
say "torch_ref.py (at most ${t}s)"
set +e
timeout -k 10 "$t" "$PY" "$HERE/torch_ref.py" --out "$TORCH_JSON" --runs "$RUNS" --warmup "$WARMUP" \
  --iters "$ITERS" --repeats "$REPEATS" --copy-size "$COPY_SIZE" --pcie-size "$PCIE_SIZE" \
  --gemm-dim "${GEMM_DIMS// /,}" --nccl-min "$NCCL_MIN" --nccl-max "$NCCL_MAX" --nccl-factor "$NCCL_FACTOR" \
  --nccl-warmup "$NCCL_WARMUP" --nccl-iters "$NCCL_ITERS" >/dev/null 2>"$WORK/torch.err"
trc=$?
set -e
sed 's/^/  /' "$WORK/torch.err" | tail -n 40 | tee -a "$LOG"
say "torch_ref.py: exit $trc$( [ "$trc" = 124 ] && echo " (timed out; what it had measured is kept)" )"

# --- e. gpuforge on this node as an operator runs it (bench/gpu/node_checks.sh) ----------------
# The inventory, facts, the rendered NCCL topology file tried on NCCL, nccl-tests, validate
# --local in every format, compute-sanitizer and deliberate faults. Everything it writes goes
# back as one file, node.tar.gz (the device tool returns at most 8 files).
NODE_DIR="$WORK/node"
CHECKS_JSONL=""
V_NOTE=""
if [ "$VALIDATE" = 0 ]; then
  V_NOTE="--no-validate"
elif [ -z "$GF" ]; then
  V_NOTE="no gpuforge"
else
  t="$(limit 300 25)"
  if [ "$t" -lt 30 ]; then
    V_NOTE="the time budget is spent"
    say "node_checks.sh: not run, $V_NOTE"
  else
    nt=()
    [ -x "$HERE/carry/nccl-tests/all_reduce_perf" ] && nt=(--nccl-tests "$HERE/carry/nccl-tests")
    say "node_checks.sh (at most ${t}s)"
    set +e
    PYTHON="$PY" NCCL_TESTS_LD_LIBRARY_PATH="$(gf_env)" timeout -k 10 "$((t + 10))" bash "$HERE/node_checks.sh" --gpuforge "$GF" \
      --out "$NODE_DIR" --budget "$t" "${nt[@]}" $( [ "$DRY" = 1 ] && echo --dry-run ) \
      </dev/null >"$WORK/node.out" 2>&1
    nrc=$?
    set -e
    sed 's/^/  /' "$WORK/node.out" | tail -n 40 | tee -a "$LOG"
    say "node_checks.sh: exit $nrc"
    [ -s "$NODE_DIR/checks.jsonl" ] && CHECKS_JSONL="$NODE_DIR/checks.jsonl"
    [ -s "$NODE_DIR/inventory.yaml" ] && cp "$NODE_DIR/inventory.yaml" "$INVENTORY"
    [ -s "$NODE_DIR/validate.json" ] && cp "$NODE_DIR/validate.json" "$VJSON"
  fi
fi

{ smi_state "after"; } >>"$ENVF" 2>&1
sed -n '/^## nvidia-smi, after/,$p' "$ENVF" | tee -a "$LOG"

# --- d. the table -----------------------------------------------------------------------------
gpu_name="$(timeout 20 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)"
{
  echo "machine=$(uname -n), $(nproc) CPUs, ${gpu_name:-no GPU seen by nvidia-smi}"
  echo "gpuforge=${GPUFORGE:-absent}"
  echo "run=$( [ "$DRY" = 1 ] && echo "dry run (no GPU expected)" || echo "on the GPU" ), $RUNS runs per probe, $(elapsed) s so far"
} >"$WORK/table-env.txt"
say "compare.py ($(elapsed) s so far)"
set +e
"$PY" "$HERE/compare.py" --gpuforge "$JSONL" --torch "$TORCH_JSON" --out "$OUTDIR" \
  --nccl-sizes "$NCCL_SIZES" --no-gpuforge "$NO_GF" --checks "$CHECKS_JSONL" \
  --nccl-tests "$NODE_DIR/nccl-tests.txt" --validate-json "$VJSON" --validate-note "$V_NOTE" \
  --env "$WORK/table-env.txt" >"$WORK/table.out" 2>&1
rc=$?
set -e
if [ -d "$NODE_DIR" ]; then
  tar -C "$WORK" -czf "$OUTDIR/node.tar.gz" node 2>>"$LOG" || say "could not pack $NODE_DIR"
  rm -f "$INVENTORY" "$VJSON"  # both are in node.tar.gz; the tool returns 8 files at most
fi
say "done in $(elapsed) s; files in $OUTDIR: $(find "$OUTDIR" -maxdepth 1 -type f -printf '%f ')"
case "$rc" in 0|1|77) ;; *) say "compare.py failed (exit $rc)"; rc=1 ;; esac
[ -n "$GF" ] || rc=77
say "exit $rc"
# The table last: the device tool returns the end of the output.
cat "$WORK/table.out"
exit "$rc"
