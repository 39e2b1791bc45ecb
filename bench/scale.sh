#!/usr/bin/env bash
# Times `gpuforge lint` and `gpuforge estimate` on synthetic inventories of 512 to 4096 nodes
# (4096 to 32768 GPUs) and prints the median per size, its ratio to the 512-node case, and a
# peer for context: PyYAML parsing the same file (parsing only; gpuforge also resolves the
# model and analyses every link). See bench/README.md.
#
# Usage: bench/scale.sh [GPUFORGE_BINARY]      (default: build/gpuforge under the repo root)
# Environment: SIZES="512 1024 2048 4096"  RUNS=5  WARMUP=1  KEEP=dir (keep inventories and
# hyperfine JSON there instead of a temporary directory). Nothing here uses the network.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
bin="${1:-$root/build/gpuforge}"
sizes="${SIZES:-512 1024 2048 4096}"
runs="${RUNS:-5}"
warmup="${WARMUP:-1}"

die() { echo "scale.sh: $*" >&2; exit 2; }

[[ -x "$bin" ]] || die "no gpuforge binary at '$bin' (pass its path as the first argument)"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
command -v hyperfine >/dev/null || die "hyperfine is not installed (Debian package 'hyperfine')"
command -v python3 >/dev/null || die "python3 is not installed"

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

# One hyperfine run of one command; the JSON lands in $work/<tag>.json.
# gpuforge lint exits non-zero when it has findings to report; that is not a failure of the
# run, so each command is run once first: exit statuses 0 and 1 are accepted (then hyperfine
# is told to ignore the status), anything else (a usage error, a crash, a sanitizer report)
# stops the benchmark with the command's output.
time_one() {
  local tag="$1" cmd="$2" rc=0
  bash -c "$cmd" >"$work/$tag.out" 2>&1 || rc=$?
  if (( rc > 1 )); then
    echo "scale.sh: '$cmd' exited with $rc:" >&2
    head -n 20 "$work/$tag.out" >&2
    exit 1
  fi
  local ignore=()
  (( rc == 0 )) || ignore=(--ignore-failure)
  hyperfine --style none --warmup "$warmup" --runs "$runs" "${ignore[@]}" \
    --export-json "$work/$tag.json" "$cmd" >/dev/null
}

echo "gpuforge: $bin"
echo "work dir: $work"
for n in $sizes; do
  inv="$work/inv-$n.yaml"
  python3 "$here/gen_inventory.py" --nodes "$n" --out "$inv"
  echo "timing $n nodes ($(( n * 8 )) GPUs, $(wc -c <"$inv") bytes)..." >&2
  time_one "lint-$n" "'$bin' lint '$inv'"
  time_one "estimate-$n" "'$bin' estimate '$inv'"
  if [[ -n "$peer_cmd" ]]; then
    time_one "peer-$n" "$peer_cmd '$inv'"
  fi
done

# The table: medians from hyperfine's JSON.
python3 - "$work" "$sizes" "${peer_cmd:+yes}" <<'EOF'
import json, os, sys

work, sizes, peer = sys.argv[1], [int(s) for s in sys.argv[2].split()], sys.argv[3] == "yes"

def result(tag):
    with open(os.path.join(work, tag + ".json")) as f:
        return json.load(f)["results"][0]

def median(tag):
    return result(tag)["median"]

def cpu(tag):
    # Mean user + system CPU seconds: steadier than wall time on a shared machine.
    r = result(tag)
    return r["user"] + r["system"]

base = sizes[0]
rows = []
for n in sizes:
    lint, est = median(f"lint-{n}"), median(f"estimate-{n}")
    row = [str(n), str(n * 8), f"{lint:.3f}", f"{cpu(f'lint-{n}'):.3f}",
           f"{lint / median(f'lint-{base}'):.2f}", f"{est:.3f}", f"{cpu(f'estimate-{n}'):.3f}",
           f"{est / median(f'estimate-{base}'):.2f}", f"{n / base:.0f}"]
    if peer:
        p = median(f"peer-{n}")
        row += [f"{p:.3f}", f"{lint / p:.2f}"]
    rows.append(row)

head = ["nodes", "GPUs", "lint s", "lint cpu", "lint x", "estimate s", "est cpu", "estimate x",
        "size x"]
if peer:
    head += ["peer s", "lint/peer"]
widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
fmt = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))
print()
print(fmt(head))
for r in rows:
    print(fmt(r))
print()
print(f"'s' columns: median wall seconds; 'cpu': mean user+system seconds; 'x' columns: wall "
      f"median over the {base}-node one (linear growth keeps them near 'size x').")
if peer:
    print("peer: python3 yaml.safe_load on the same file (PyYAML, parsing only)")
else:
    print("peer: not installed (Debian python3-yaml)")
EOF
