#!/usr/bin/python3
"""Medians and ratios from bench/apply/run.sh's raw.csv; markdown on stdout.

    summarize.py OUT_DIR

Reads OUT_DIR/raw.csv and OUT_DIR/env.txt. Ratios are Ansible's median over gpuforge's, per
phase, for wall time and for the controller's CPU. Standard library only.
"""

import csv
import os
import statistics
import sys

TARGET = 5.0
PHASES = [
    ("first", "fresh hosts", "apply --yes", "ansible-playbook"),
    ("rerun-check", "converged hosts, dry run", "plan", "ansible-playbook --check --diff"),
    ("rerun-plain", "converged hosts, for real", "apply --yes (no change)", "ansible-playbook"),
]


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def med(rows, key):
    vals = [float(r[key]) for r in rows if r.get(key)]
    return statistics.median(vals) if vals else None


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a, b):
    return a / b if a is not None and b else None


def main(out):
    raw = read(os.path.join(out, "raw.csv"))
    print("# gpuforge plan/apply vs an Ansible playbook (bench/apply)\n")
    env = os.path.join(out, "env.txt")
    if os.path.exists(env):
        print("```")
        print(open(env).read().rstrip())
        print("```\n")
    if not raw:
        print("No timed runs.")
        return
    hosts = raw[0]["hosts"]
    fanout = raw[0]["fanout"]
    rounds = len({r["round"] for r in raw})
    tools = list(dict.fromkeys(r["tool"] for r in raw))
    print(f"## Medians of {rounds} rounds ({hosts} hosts, fanout {fanout})\n")
    print("Wall: seconds from start to exit of the tool. `ctl CPU`: GNU time's %U + %S (the tool and")
    print("the children it waited for). `tree CPU`: the run's cpuacct cgroup, every process the tool")
    print("started, detached ones included (Ansible's ControlPersist masters), until it exited. Both")
    print("are the controller side only, not the test hosts' sshds. `RSS`: GNU time's %M, the largest")
    print("single process.\n")
    print("| phase | tool | command | wall s (median) | min | max | ctl CPU s | tree CPU s | RSS MiB |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    m = {}
    for phase, _, gcmd, acmd in PHASES:
        for t in tools:
            rows = [r for r in raw if r["tool"] == t and r["phase"] == phase]
            if not rows:
                continue
            walls = [float(r["wall_s"]) for r in rows]
            m[(phase, t)] = {k: med(rows, k) for k in ("wall_s", "cpu_s", "tree_cpu_s")}
            rss = med(rows, "max_rss_kib")
            cmd = gcmd if t == "gpuforge" else acmd
            print(f"| {phase} | {t} | `{cmd}` | {statistics.median(walls):.2f} | {min(walls):.2f} "
                  f"| {max(walls):.2f} | {fmt(m[(phase, t)]['cpu_s'])} | {fmt(m[(phase, t)]['tree_cpu_s'])} "
                  f"| {fmt(rss / 1024 if rss else None, 1)} |")
    print()
    if "gpuforge" in tools and "ansible" in tools:
        print("## Ratios, Ansible / gpuforge (medians)\n")
        print("| phase | wall | ctl CPU | tree CPU | wall target >= 5 |")
        print("|---|---:|---:|---:|---|")
        for phase, desc, _, _ in PHASES:
            g, a = m.get((phase, "gpuforge")), m.get((phase, "ansible"))
            if not g or not a:
                continue
            w = ratio(a["wall_s"], g["wall_s"])
            verdict = "-" if phase == "first" else ("met" if w is not None and w >= TARGET else "NOT met")
            print(f"| {phase}: {desc} | {fmt(w)} | {fmt(ratio(a['cpu_s'], g['cpu_s']), 0)} "
                  f"| {fmt(ratio(a['tree_cpu_s'], g['tree_cpu_s']), 0)} | {verdict} |")
        print()
        print("Target (issue): at least 5x faster than Ansible on the rerun (wall time).\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
