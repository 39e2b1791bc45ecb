#!/usr/bin/env bash
# Times gpuforge commands (`lint` and `estimate` by default; `render` and `plan --offline` on
# request) on synthetic inventories of 512 to 4096 nodes (4096 to 32768 GPUs) and prints, per
# size and command, the median wall time, the CPU time, the ratio to the smallest size and per
# 4x nodes, the peak RSS, and a peer for context: PyYAML parsing the same file (parsing only;
# gpuforge also resolves the model and analyses every link). See bench/README.md.
#
# Usage: bench/scale.sh [GPUFORGE_BINARY]      (default: build/gpuforge under the repo root)
# Environment: SIZES="512 1024 2048 4096"  RUNS=5  WARMUP=1  COMMANDS="lint estimate"
# (any of lint, estimate, render, plan; render adds rows for a second render onto the same tree
# and for `cp -a` of the tree, its peer)  GEN_ARGS="" (extra gen_inventory.py arguments, e.g.
# "--switch-ports 128" for 16384 nodes)  KEEP=dir (keep inventories, outputs and hyperfine
# JSON there instead of a temporary directory). Nothing here uses the network.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
bin="${1:-$root/build/gpuforge}"
sizes="${SIZES:-512 1024 2048 4096}"
runs="${RUNS:-5}"
warmup="${WARMUP:-1}"
commands="${COMMANDS:-lint estimate}"
read -r -a gen_args <<<"${GEN_ARGS:-}"

die() { echo "scale.sh: $*" >&2; exit 2; }

[[ -x "$bin" ]] || die "no gpuforge binary at '$bin' (pass its path as the first argument)"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
command -v hyperfine >/dev/null || die "hyperfine is not installed (Debian package 'hyperfine')"
command -v python3 >/dev/null || die "python3 is not installed"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (Debian package 'time')"
for c in $commands; do
  case "$c" in lint | estimate | render | plan) ;; *) die "COMMANDS: unknown command '$c'" ;; esac
done

if [[ -n "${KEEP:-}" ]]; then
  work="$KEEP"
  mkdir -p "$work"
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/gpuforge-bench.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi

peer_cmd=""
if python3 -c 'import yaml' 2>/dev/null; then
  peer_cmd="python3 -c 'import yaml,sys; yaml.safe_load(open(sys.argv[1]))'"
fi

# One hyperfine run of one command; the JSON lands in $work/<tag>.json, the peak RSS (KiB, GNU
# time's %M, "Maximum resident set size" of -v) of a first, untimed run in $work/<tag>.rss.
# gpuforge lint (and plan --offline) exit 1 when the design has findings to report; that is not
# a failure of the run, so each command is run once first: exit statuses 0 and 1 are accepted
# (then hyperfine is told to ignore the status), anything else (a usage error, a crash, a
# sanitizer report) stops the benchmark with the command's output. PREPARE, when set, runs
# before each run (hyperfine --prepare) and before the first one.
time_one() {
  local tag="$1" cmd="$2" rc=0
  [[ -z "${PREPARE:-}" ]] || bash -c "$PREPARE"
  /usr/bin/time -f '%M' -o "$work/$tag.rss" bash -c "$cmd" >"$work/$tag.out" 2>&1 || rc=$?
  if (( rc > 1 )); then
    echo "scale.sh: '$cmd' exited with $rc:" >&2
    head -n 20 "$work/$tag.out" >&2
    exit 1
  fi
  local extra=()
  (( rc == 0 )) || extra+=(--ignore-failure)
  [[ -z "${PREPARE:-}" ]] || extra+=(--prepare "$PREPARE")
  hyperfine --style none --warmup "$warmup" --runs "$runs" "${extra[@]}" \
    --export-json "$work/$tag.json" "$cmd" >/dev/null
}

echo "gpuforge: $("$bin" --version 2>/dev/null | head -1) ($bin)"
echo "work dir: $work"
for n in $sizes; do
  inv="$work/inv-$n.yaml"
  python3 "$here/gen_inventory.py" --nodes "$n" "${gen_args[@]}" --out "$inv"
  echo "timing $n nodes ($(( n * 8 )) GPUs, $(wc -c <"$inv") bytes)..." >&2
  for c in $commands; do
    case "$c" in
      lint) time_one "lint-$n" "'$bin' lint '$inv'" ;;
      estimate) time_one "estimate-$n" "'$bin' estimate '$inv'" ;;
      render) PREPARE="rm -rf '$work/out-$n'" time_one "render-$n" "'$bin' render '$inv' --out '$work/out-$n'"
        find "$work/out-$n" -type f | wc -l >"$work/render-$n.files"
        # Again onto the tree it just wrote (an unchanged inventory: nothing to rewrite), and the
        # peer: cp -a of that tree, the same directories and files made with no rendering.
        time_one "rerender-$n" "'$bin' render '$inv' --out '$work/out-$n'"
        PREPARE="rm -rf '$work/copy-$n'" time_one "cp-$n" "cp -a '$work/out-$n' '$work/copy-$n'"
        rm -rf "$work/out-$n" "$work/copy-$n" ;;
      plan) time_one "plan-$n" "'$bin' plan '$inv' --offline" ;;
    esac
  done
  if [[ -n "$peer_cmd" ]]; then
    time_one "peer-$n" "$peer_cmd '$inv'"
  fi
  wc -c <"$inv" >"$work/inv-$n.bytes"
done

# The table: medians from hyperfine's JSON.
table_commands="${commands/render/render rerender cp}"
python3 - "$work" "$sizes" "$table_commands" "${peer_cmd:+yes}" <<'EOF'
import json, math, os, sys

work, sizes, commands = sys.argv[1], [int(s) for s in sys.argv[2].split()], sys.argv[3].split()
peer = sys.argv[4] == "yes"

def result(tag):
    with open(os.path.join(work, tag + ".json")) as f:
        return json.load(f)["results"][0]

def median(tag):
    return result(tag)["median"]

def cpu(tag):
    # Mean user + system CPU seconds: steadier than wall time on a shared machine.
    r = result(tag)
    return r["user"] + r["system"]

def rss_mib(tag):
    with open(os.path.join(work, tag + ".rss")) as f:
        return int(f.read().split()[-1]) / 1024

def per4x(now, before, n, m):
    # The growth for 4x the nodes: (now / before) ^ (log 4 / log(n / m)); 4.0 is linear.
    return (now / before) ** (math.log(4) / math.log(n / m))

base = sizes[0]
rows = []
for c in commands + (["peer"] if peer else []):
    for i, n in enumerate(sizes):
        tag = f"{c}-{n}"
        t, ct = median(tag), cpu(tag)
        row = [str(n), str(n * 8), f"{int(open(os.path.join(work, f'inv-{n}.bytes')).read()) / 1e6:.2f}", c,
               f"{t:.3f}", f"{ct:.3f}", f"{t / median(f'{c}-{base}'):.2f}",
               "-" if i == 0 else f"{per4x(t, median(f'{c}-{sizes[i - 1]}'), n, sizes[i - 1]):.2f}",
               "-" if i == 0 else f"{per4x(ct, cpu(f'{c}-{sizes[i - 1]}'), n, sizes[i - 1]):.2f}",
               f"{rss_mib(tag):.0f}"]
        if peer:
            row += ["-" if c == "peer" else f"{t / median(f'peer-{n}'):.2f}"]
        rows.append(row)

head = ["nodes", "GPUs", "MB", "cmd", "wall s", "cpu s", "x", "per 4x", "cpu 4x", "peak MiB"]
if peer:
    head += ["/peer"]
widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
fmt = lambda cells: "  ".join(c.rjust(w) if i != 3 else c.ljust(w)
                              for i, (c, w) in enumerate(zip(cells, widths)))
print()
print(fmt(head))
for r in rows:
    print(fmt(r))
print()
print(f"'wall s': hyperfine median; 'cpu s': mean user+system seconds; 'x': wall median over the "
      f"{base}-node one; 'per 4x', 'cpu 4x': growth of wall and CPU per 4x nodes from the size "
      "above (4.0 = linear); 'peak MiB': GNU time's maximum RSS of one run; 'MB': inventory size.")
files = [f"{n}: {open(os.path.join(work, f'render-{n}.files')).read().strip()}" for n in sizes
         if os.path.exists(os.path.join(work, f"render-{n}.files"))]
if files:
    print("render: files written per size: " + ", ".join(files))
    print("rerender: render again onto the tree it wrote (unchanged inventory); cp: cp -a of that "
          "tree into a new directory, the same directories and files with no rendering (the peer "
          "for render's file system work)")
if peer:
    print("peer: python3 yaml.safe_load on the same file (PyYAML, parsing only); '/peer': wall "
          "over the peer's wall")
else:
    print("peer: not installed (Debian python3-yaml)")
EOF
