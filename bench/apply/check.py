#!/usr/bin/python3
"""Check that one timed run of bench/apply did what it should on every host.

    check.py TOOL PHASE COUNTS_FILE STDOUT_FILE STDERR_FILE EXIT_STATUS

TOOL is gpuforge or ansible; PHASE is first (fresh hosts: every file created), rerun-check
(converged hosts, dry run: gpuforge plan, ansible-playbook --check --diff) or rerun-plain
(converged hosts, the real thing again: gpuforge apply, ansible-playbook). COUNTS_FILE has one
line per host, "NODE DIRS FILES HANDLERS" (gen_playbook.py's output): the parent directories a
fresh host lacks, the files, the handlers. Exit 0 and no output when the run is right;
otherwise exit 1 with what was wrong. A timing of a run that failed, or did not do the whole
job, is worthless, so run.sh stops on the first failure.
"""

import re
import sys


def read_counts(path):
    counts = {}
    for line in open(path):
        if line.strip():
            name, dirs, files, handlers = line.split()
            counts[name] = (int(dirs), int(files), int(handlers))
    return counts


def check_gpuforge(phase, counts, stdout, stderr, rc):
    problems = []
    n = len(counts)
    files = sum(f for _, f, _ in counts.values())
    both = stdout + stderr
    if rc != 0:
        problems.append(f"exit status {rc}")
    if phase == "first":
        m = re.search(r"^Apply \S+: (\d+) applied, (\d+) unchanged, (\d+) failed\.$", both, re.M)
        if not m or (int(m.group(1)), int(m.group(2)), int(m.group(3))) != (n, 0, 0):
            problems.append(f"summary is not 'Apply RUN: {n} applied, 0 unchanged, 0 failed.'")
        created = sum(int(c) * int(k) for k, c in
                      re.findall(r"\((\d+)\): applied: (\d+) created, 0 changed", stdout))
        if created != files:
            problems.append(f"{created} files created in all, want {files} "
                            "(lines 'NODES (K): applied: C created, 0 changed')")
    elif phase == "rerun-check":
        if not re.search(r"^Plan: 0 to add, 0 to change, 0 to destroy\.$", both, re.M):
            problems.append("no 'Plan: 0 to add, 0 to change, 0 to destroy.'")
        nodes = sum(int(k) for k in re.findall(r"\((\d+)\): no changes$", stdout, re.M))
        if nodes != n:
            problems.append(f"'no changes' for {nodes} nodes, want {n}")
    elif phase == "rerun-plain":
        m = re.search(r"^Apply \S+: (\d+) applied, (\d+) unchanged, (\d+) failed\.$", both, re.M)
        if not m or (int(m.group(1)), int(m.group(2)), int(m.group(3))) != (0, n, 0):
            problems.append(f"summary is not 'Apply RUN: 0 applied, {n} unchanged, 0 failed.'")
    else:
        problems.append(f"unknown phase {phase}")
    if re.search(r"^error:|failed at|refused:|unreachable", both, re.M):
        problems.append("an error, refusal or unreachable node in the output")
    return problems


def check_ansible(phase, counts, stdout, stderr, rc):
    problems = []
    if rc != 0:
        problems.append(f"exit status {rc}")
    recap = {}
    for m in re.finditer(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", stdout, re.M):
        recap[m.group(1)] = tuple(int(m.group(i)) for i in range(2, 6))
    missing = [h for h in counts if h not in recap]
    if missing:
        problems.append(f"no PLAY RECAP line for {len(missing)} hosts: {missing[:5]}")
    bad = [h for h, (_, _, unreach, failed) in recap.items() if unreach or failed]
    if bad:
        problems.append(f"unreachable or failed on {len(bad)} hosts: {bad[:5]}")
    # One 'changed: [host] => (item=...)' line per changed directory or file, one
    # 'changed: [host]' per handler run; 'ok: [host] => (item=...)' per unchanged item.
    changed, ok_items = {}, {}
    for m in re.finditer(r"^changed: \[(\S+)\]", stdout, re.M):
        changed[m.group(1)] = changed.get(m.group(1), 0) + 1
    for m in re.finditer(r"^ok: \[(\S+)\] => \(item=", stdout, re.M):
        ok_items[m.group(1)] = ok_items.get(m.group(1), 0) + 1
    wrong = []
    for h, (dirs, files, handlers) in counts.items():
        if phase == "first":
            want = (dirs + files + handlers, 0)
        else:
            want = (0, dirs + files)
        got = (changed.get(h, 0), ok_items.get(h, 0))
        if got != want:
            wrong.append(f"{h}: {got[0]} changed, {got[1]} ok items, want {want[0]} and {want[1]}")
    if wrong:
        problems.append(f"wrong counts on {len(wrong)} hosts, e.g. " + "; ".join(wrong[:3]))
    if phase != "first":
        moved = [h for h, (_, ch, _, _) in recap.items() if ch]
        if moved:
            problems.append(f"changed != 0 in the recap of {len(moved)} hosts on a rerun: {moved[:5]}")
    if phase not in ("first", "rerun-check", "rerun-plain"):
        problems.append(f"unknown phase {phase}")
    return problems


def main(argv):
    if len(argv) != 6:
        sys.exit(__doc__)
    tool, phase, counts_file, out_file, err_file, rc = argv
    counts = read_counts(counts_file)
    stdout = open(out_file, errors="replace").read()
    stderr = open(err_file, errors="replace").read()
    if tool == "gpuforge":
        problems = check_gpuforge(phase, counts, stdout, stderr, int(rc))
    elif tool == "ansible":
        problems = check_ansible(phase, counts, stdout, stderr, int(rc))
    else:
        problems = [f"unknown tool {tool}"]
    if problems:
        print(f"check: {tool} {phase} on {len(counts)} hosts FAILED:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        tail = (stdout + stderr).strip().split("\n")[-8:]
        if any(tail):
            print("  output (last lines):", file=sys.stderr)
            for line in tail:
                print(f"    {line[:300]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
