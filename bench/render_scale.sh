#!/usr/bin/env bash
# Time and peak memory of `gpuforge render` and `gpuforge plan --offline` on the synthetic
# inventories of bench/gen_inventory.py (8 H200 per node, rail-optimized fat tree), and the
# ratio per doubling of the node count: 2.0 is linear, 4.0 quadratic. Issue #14 "Scale" asks
# for 1024, 4096 and 8192 nodes with a Release build. See bench/README.md.
#
# Usage: bench/render_scale.sh [GPUFORGE_BINARY]   (default: build/gpuforge)
# Environment: SIZES="1024 4096 8192"  RUNS=3 (median of RUNS)  KEEP=dir (keep inventories and
# outputs there). Nothing here uses the network.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
bin="${1:-$root/build/gpuforge}"
sizes="${SIZES:-1024 4096 8192}"
runs="${RUNS:-3}"

die() { echo "render_scale.sh: $*" >&2; exit 2; }
[[ -x "$bin" ]] || die "no gpuforge binary at '$bin' (pass its path as the first argument)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (Debian package 'time')"
command -v python3 >/dev/null || die "python3 is not installed"

if [[ -n "${KEEP:-}" ]]; then work="$KEEP"; mkdir -p "$work"; else
  work="$(mktemp -d "${TMPDIR:-/tmp}/gpuforge-render-scale.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
fi

# One measurement: "seconds peak_kib" of the command, which must succeed.
measure() {
  local out="$work/time.txt"
  /usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>"$work/stderr.txt" ||
    die "failed: $* ($(tail -3 "$work/stderr.txt"))"
  cat "$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "gpuforge: $("$bin" --version 2>/dev/null | head -1) ($bin)"
printf '%6s  %-6s  %8s  %10s  %9s  %9s  %8s\n' nodes cmd "s" "peak MiB" "files" "s ratio" "MiB ratio"
declare -A prev_s prev_m prev_n
for n in $sizes; do
  inv="$work/inv-$n.yaml"
  [[ -f "$inv" ]] || python3 "$here/gen_inventory.py" --nodes "$n" --out "$inv"
  for cmd in render plan; do
    secs=() mems=()
    for ((r = 0; r < runs; r++)); do
      rm -rf "$work/out-$n"
      if [[ $cmd == render ]]; then
        read -r s m < <(measure "$bin" render "$inv" --out "$work/out-$n")
      else
        read -r s m < <(measure "$bin" plan "$inv" --offline)
      fi
      secs+=("$s") mems+=("$m")
    done
    s=$(printf '%s\n' "${secs[@]}" | median)
    m=$(printf '%s\n' "${mems[@]}" | median)
    mib=$(awk -v k="$m" 'BEGIN {printf "%.0f", k / 1024}')
    files="-"
    [[ $cmd == render ]] && files=$(find "$work/out-$n" -type f | wc -l)
    sr="-" mr="-"
    if [[ -n "${prev_s[$cmd]:-}" ]]; then
      # Per doubling: (ratio)^(1 / doublings), so 1024 -> 4096 (two doublings) is comparable.
      d=$(awk -v a="${prev_n[$cmd]}" -v b="$n" 'BEGIN {print log(b / a) / log(2)}')
      sr=$(awk -v a="${prev_s[$cmd]}" -v b="$s" -v d="$d" 'BEGIN {printf "%.2f", (b / a) ^ (1 / d)}')
      mr=$(awk -v a="${prev_m[$cmd]}" -v b="$m" -v d="$d" 'BEGIN {printf "%.2f", (b / a) ^ (1 / d)}')
    fi
    printf '%6s  %-6s  %8s  %10s  %9s  %9s  %8s\n' "$n" "$cmd" "$s" "$mib" "$files" "$sr" "$mr"
    prev_s[$cmd]=$s prev_m[$cmd]=$m prev_n[$cmd]=$n
  done
done
