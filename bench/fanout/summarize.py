#!/usr/bin/python3
"""Medians, ratios and the memory fit from run.sh's CSV files; markdown on stdout.

    summarize.py OUT_DIR

Reads OUT_DIR/raw.csv, mem.csv, curve.csv and env.txt. Memory figures are MiB (2^20 bytes).
The memory curve is an ordinary least-squares line through every (hosts, peak RSS) sample of
gpuforge run --fanout hosts, evaluated at 1024 connections. Standard library only.
"""

import csv
import os
import statistics
import sys

TARGET_MIB_1024 = 200


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def mib(kib):
    return float(kib) / 1024


def fit(points):
    """Least squares y = a + b x; returns a, b, r^2."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    b = sxy / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for _, y in points)
    ss_res = sum((y - (a + b * x)) ** 2 for x, y in points)
    return a, b, (1 - ss_res / ss_tot) if ss_tot > 0 else 1.0


def main(out):
    raw = read(os.path.join(out, "raw.csv"))
    mem = read(os.path.join(out, "mem.csv"))
    curve = read(os.path.join(out, "curve.csv"))
    print("# gpuforge run vs pdsh, clush, ansible (bench/fanout)\n")
    env = os.path.join(out, "env.txt")
    if os.path.exists(env):
        print("```")
        print(open(env).read().rstrip())
        print("```\n")

    counts = sorted({int(r["hosts"]) for r in raw})
    tools = list(dict.fromkeys(r["tool"] for r in raw))
    med = {}
    if raw:
        print("## Wall time and memory (median of the rounds)\n")
        print("Wall: seconds from start to exit of the tool. `largest` is GNU time's %M (ru_maxrss")
        print("of the biggest single process in the tree, exact). `tree PSS` and `tree RSS` are the")
        print("peak sums over the tool's whole process tree (ssh children, Ansible's forks) from one")
        print("separate sampled run (50 ms; short-lived processes can be missed, so lower bounds);")
        print("RSS double-counts shared pages, PSS does not. `ctl CPU s`: user + system seconds of the")
        print("tool and its children (GNU time %U + %S; the controller side only, not the sshds).\n")
        print("| hosts | fanout | tool | wall s (median) | min | max | ctl CPU s | largest MiB | tree PSS MiB | tree RSS MiB | procs |")
        print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in counts:
            for t in tools:
                rows = [r for r in raw if int(r["hosts"]) == n and r["tool"] == t]
                if not rows:
                    continue
                walls = [float(r["wall_s"]) for r in rows]
                rss = [mib(r["max_rss_kib"]) for r in rows]
                med[(n, t)] = statistics.median(walls)
                m = [r for r in mem if int(r["hosts"]) == n and r["tool"] == t]
                pss = f"{mib(m[0]['peak_pss_sum_kib']):.0f}" if m else "-"
                tree = f"{mib(m[0]['peak_rss_sum_kib']):.0f}" if m else "-"
                procs = m[0]["peak_procs"] if m else "-"
                cpus = [float(r["cpu_s"]) for r in rows if r.get("cpu_s")]
                cpu = f"{statistics.median(cpus):.2f}" if cpus else "-"
                print(f"| {n} | {rows[0]['fanout']} | {t} | {statistics.median(walls):.2f} | {min(walls):.2f} "
                      f"| {max(walls):.2f} | {cpu} | {statistics.median(rss):.1f} | {pss} | {tree} | {procs} |")
        print()
        print("## Ratios (median wall)\n")
        print("| hosts | gpuforge/pdsh | gpuforge/clush | ansible/gpuforge |")
        print("|---:|---:|---:|---:|")
        for n in counts:
            g = med.get((n, "gpuforge"))

            def ratio(a, b):
                return f"{a / b:.2f}" if a and b else "-"

            print(f"| {n} | {ratio(g, med.get((n, 'pdsh')))} | {ratio(g, med.get((n, 'clush')))} "
                  f"| {ratio(med.get((n, 'ansible')), g)} |")
        print()
        print("Targets: gpuforge/pdsh <= 1.00 (no slower than pdsh); ansible/gpuforge >= 5.\n")

    if curve:
        print("## gpuforge memory curve (--fanout = hosts: every connection open at once)\n")
        print("| hosts = connections | peak RSS MiB (median) | samples | wall s (median) |")
        print("|---:|---:|---|---:|")
        points = []
        for n in sorted({int(r["hosts"]) for r in curve}):
            rows = [r for r in curve if int(r["hosts"]) == n]
            rss = [mib(r["max_rss_kib"]) for r in rows]
            points += [(n, x) for x in rss]
            walls = [float(r["wall_s"]) for r in rows]
            print(f"| {n} | {statistics.median(rss):.1f} | {', '.join(f'{x:.1f}' for x in rss)} "
                  f"| {statistics.median(walls):.2f} |")
        print()
        if len({x for x, _ in points}) >= 2:
            a, b, r2 = fit(points)
            at = a + b * 1024
            print(f"Least-squares line through all {len(points)} samples: RSS = {a:.1f} MiB + "
                  f"{b * 1024:.1f} KiB x connections (r^2 = {r2:.4f}).")
            print(f"Extrapolated to 1024 connections: **{at:.0f} MiB** ({at * 1.048576:.0f} MB); "
                  f"target under {TARGET_MIB_1024} MB: {'met' if at * 1.048576 < TARGET_MIB_1024 else 'NOT met'}.")
            print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
