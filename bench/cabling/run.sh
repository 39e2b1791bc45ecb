#!/usr/bin/env bash
# Times `gpuforge cabling` (#31) on a synthetic rail-optimized InfiniBand fabric of NODES nodes
# (default 2,048: 16,384 node cables and as many leaf-spine ones, 35,000 iblinkinfo lines) read
# from a saved iblinkinfo file, with no SSH. Peers side by side, on the same files: `gpuforge
# lint` of the same inventory (the load every command pays) and `grep -c` over the iblinkinfo
# file (reading it at all). Prints hyperfine's medians and the ratios. See bench/README.md.
#
# Usage: bench/cabling/run.sh [GPUFORGE_BINARY]   (default build/gpuforge)
# Environment: NODES=2048 RUNS=7 KEEP=dir
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-$root/build/gpuforge}"
nodes="${NODES:-2048}"
runs="${RUNS:-7}"
[[ -x "$bin" ]] || { echo "run.sh: no gpuforge binary at '$bin'" >&2; exit 2; }
command -v hyperfine >/dev/null || { echo "run.sh: hyperfine is not installed" >&2; exit 2; }
work="${KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/gpuforge-cabling.XXXXXX")}"
mkdir -p "$work"
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT
python3 "$here/gen_fabric.py" --nodes "$nodes" "$work/inv.yaml" "$work/iblinkinfo.txt"
echo "fabric: $nodes nodes, $(wc -l <"$work/iblinkinfo.txt") iblinkinfo lines, $(du -h "$work/iblinkinfo.txt" | cut -f1)"
# The run must find the planted miswires: exit 1 and SWAPPED cables, or the timing means nothing.
set +e
"$bin" cabling "$work/inv.yaml" --no-ssh --iblinkinfo "$work/iblinkinfo.txt" --format json >"$work/out.json" 2>"$work/err.txt"
rc=$?
set -e
[[ $rc == 1 ]] || { echo "run.sh: cabling exited $rc, expected 1 (the planted miswires)" >&2; cat "$work/err.txt" >&2; exit 1; }
cat "$work/err.txt"
hyperfine -N --warmup 1 --runs "$runs" -i --export-json "$work/h.json" \
  -n cabling "$bin cabling $work/inv.yaml --no-ssh --iblinkinfo $work/iblinkinfo.txt -q --format json" \
  -n lint "$bin lint $work/inv.yaml -q --format json" \
  -n grep "grep -c Active $work/iblinkinfo.txt" >/dev/null
python3 - "$work/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
med = {k: v["median"] for k, v in r.items()}
for k in ("cabling", "lint", "grep"):
    print(f"{k:8s} median {med[k]:.3f} s  (min {r[k]['min']:.3f}, max {r[k]['max']:.3f}, {len(r[k]['times'])} runs)")
print(f"cabling/lint {med['cabling']/med['lint']:.2f}   cabling/grep {med['cabling']/med['grep']:.1f}")
PY
