#!/usr/bin/python3
"""Check that one tool's run succeeded on every host with the expected output.

    check.py TOOL HOSTS_FILE EXPECTED_FILE STDOUT_FILE STDERR_FILE EXIT_STATUS

TOOL is gpuforge, pdsh, clush or ansible. HOSTS_FILE has one host name a line, EXPECTED_FILE
the command's output on one host (taken over plain ssh). Exit 0 and no output when every host
answered exactly EXPECTED; otherwise exit 1 with what was wrong. A timing of a run that failed
on some host is worthless, so run.sh stops on the first failure.
"""

import re
import sys


def lines(text):
    return [line.rstrip() for line in text.rstrip("\n").split("\n")] if text.strip() else []


def per_host_prefixed(stdout):
    """pdsh and clush (without -b): every output line is 'host: line'."""
    got, junk = {}, []
    for line in stdout.rstrip("\n").split("\n") if stdout else []:
        m = re.match(r"^(\S+?): ?(.*)$", line)
        if m:
            got.setdefault(m.group(1), []).append(m.group(2).rstrip())
        else:
            junk.append(line)
    return got, junk


def check(tool, hosts, expected, stdout, stderr, rc):
    problems = []
    if rc != 0:
        problems.append(f"exit status {rc}")
    n = len(hosts)
    if tool == "gpuforge":
        want = f"run: {n} ok, 0 failed, 0 unreachable, {n} nodes in "
        if want not in stderr:
            problems.append(f"summary line is not '{want}...'")
        # Folded blocks: rule, 'NODES (COUNT)', rule, text.
        rule = "-" * 15
        parts = stdout.split(rule + "\n")
        total, bad = 0, []
        # parts: ['', header, text, header, text, ...]
        if parts and parts[0] == "":
            parts = parts[1:]
        if len(parts) % 2 != 0:
            problems.append("cannot parse the folded output")
        for header, text in zip(parts[0::2], parts[1::2]):
            m = re.match(r"^(.*) \((\d+)\)\n$", header)
            if not m:
                problems.append(f"bad group header {header!r}")
                continue
            total += int(m.group(2))
            if lines(text) != expected:
                bad.append(f"{m.group(1)} ({m.group(2)}): {lines(text)[:3]}")
        if total != n:
            problems.append(f"output for {total} hosts, want {n}")
        if bad:
            problems.append("unexpected output from " + "; ".join(bad[:5]))
    elif tool in ("pdsh", "clush"):
        got, junk = per_host_prefixed(stdout)
        missing = [h for h in hosts if h not in got]
        extra = [h for h in got if h not in set(hosts)]
        wrong = [h for h in hosts if h in got and got[h] != expected]
        if missing:
            problems.append(f"no output from {len(missing)} hosts: {missing[:5]}")
        if extra:
            problems.append(f"output from unknown hosts {extra[:5]}")
        if wrong:
            problems.append(f"unexpected output from {len(wrong)} hosts, e.g. {wrong[0]}: {got[wrong[0]]}")
        if junk:
            problems.append(f"unparsed lines: {junk[:3]}")
    elif tool == "ansible":
        header = re.compile(r"^(\S+) \| (\S+!?) \| rc=(-?\d+) >>$")
        blocks, current, junk = {}, None, []
        for line in stdout.rstrip("\n").split("\n") if stdout else []:
            m = header.match(line)
            if m:
                current = m.group(1)
                blocks[current] = {"state": m.group(2), "rc": int(m.group(3)), "out": []}
            elif current is not None:
                blocks[current]["out"].append(line.rstrip())
            else:
                junk.append(line)
        missing = [h for h in hosts if h not in blocks]
        failed = [h for h in hosts if h in blocks and (blocks[h]["state"] != "CHANGED" or blocks[h]["rc"] != 0)]
        wrong = [h for h in hosts if h in blocks and h not in failed and lines("\n".join(blocks[h]["out"])) != expected]
        if missing:
            problems.append(f"no 'CHANGED | rc=0' block from {len(missing)} hosts: {missing[:5]}")
        if failed:
            problems.append(f"failed on {len(failed)} hosts: {failed[:5]}")
        if wrong:
            problems.append(f"unexpected output from {len(wrong)} hosts, e.g. {wrong[0]}: {blocks[wrong[0]]['out']}")
        if junk:
            problems.append(f"unparsed lines: {junk[:3]}")
    else:
        problems.append(f"unknown tool {tool}")
    return problems


def main(argv):
    if len(argv) != 6:
        sys.exit(__doc__)
    tool, hosts_file, expected_file, out_file, err_file, rc = argv
    hosts = [h for h in open(hosts_file).read().split() if h]
    expected = lines(open(expected_file).read())
    stdout = open(out_file, errors="replace").read()
    stderr = open(err_file, errors="replace").read()
    problems = check(tool, hosts, expected, stdout, stderr, int(rc))
    if problems:
        print(f"check: {tool} on {len(hosts)} hosts FAILED:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        tail = stderr.strip().split("\n")[-8:]
        if any(tail):
            print("  stderr (last lines):", file=sys.stderr)
            for line in tail:
                print(f"    {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
