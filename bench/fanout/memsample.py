#!/usr/bin/python3
"""Run a command and sample the memory of its whole process tree.

    memsample.py [--interval S] [--pss] --report FILE -- COMMAND...

Every S seconds (default 0.05) it walks /proc for the command's descendants and adds up their
resident set sizes (and, with --pss, their proportional set sizes from smaps_rollup). It writes
one line to FILE:

    peak_rss_sum_kib peak_pss_sum_kib peak_procs max_single_rss_kib

peak_rss_sum double-counts pages shared between processes (the ssh binary and libraries of 64
ssh children, Python's pages shared copy-on-write between Ansible's forks); peak_pss_sum
divides each shared page among the processes that map it, so it is the honest total, but
reading smaps_rollup costs CPU. A process that lives shorter than the interval can be missed,
so these are lower bounds; max_single_rss is ru_maxrss from wait4 (the largest single
process of the tree, exact, what GNU time's %M prints). stdin, stdout and stderr are the
command's; the exit status is the command's (128+N for a signal).

Standard library only. Sampling costs CPU on the machine it measures: use it for memory
passes, not for the timed runs.
"""

import os
import signal
import sys
import time


def children_map():
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The comm field may hold spaces and parentheses; the ppid follows the last ')'.
        rest = stat[stat.rfind(b")") + 2:].split()
        kids.setdefault(int(rest[1]), []).append(int(name))
    return kids


def descendants(root, kids):
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, IndexError, ValueError):
        return 0


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def main(argv):
    interval, pss, report = 0.05, False, None
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--interval":
            interval = float(argv[i + 1])
            i += 2
        elif argv[i] == "--pss":
            pss = True
            i += 1
        elif argv[i] == "--report":
            report = argv[i + 1]
            i += 2
        else:
            sys.exit(f"memsample: unknown option {argv[i]}")
    cmd = argv[i + 1:]
    if not cmd or report is None:
        sys.exit(__doc__)

    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)

    peak_rss = peak_pss = peak_procs = 0
    status = rusage = None
    while True:
        done, st, ru = os.wait4(pid, os.WNOHANG)
        if done == pid:
            status, rusage = st, ru
            break
        tree = descendants(pid, children_map())
        peak_procs = max(peak_procs, len(tree))
        peak_rss = max(peak_rss, sum(rss_kib(p) for p in tree))
        if pss:
            peak_pss = max(peak_pss, sum(pss_kib(p) for p in tree))
        time.sleep(interval)

    with open(report, "w") as f:
        f.write(f"{peak_rss} {peak_pss} {peak_procs} {rusage.ru_maxrss}\n")
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child gets it from the terminal
    sys.exit(main(sys.argv[1:]))
