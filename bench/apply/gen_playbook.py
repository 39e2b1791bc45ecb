#!/usr/bin/python3
"""Write the Ansible side of bench/apply: a playbook that copies the files gpuforge renders.

    gen_playbook.py RENDER_DIR HOSTS_TSV KEY OUT_DIR [HAVE_DIRS]

RENDER_DIR is `gpuforge render --out` output (RENDER_DIR/<node>/<target path>); HOSTS_TSV and
KEY are the testbed's hosts.tsv and id_ed25519. Writes into OUT_DIR:

- hosts.ini: every host of HOSTS_TSV with its address, port, user root and KEY; host keys
  checked against the testbed's known_hosts (beside HOSTS_TSV), the interpreter given.
- host_vars/<node>.yml: the node's files, one list per handler group, each entry
  {src, dest, mode} with mode the rendered file's.
- site.yml: one play, gather_facts off; an ansible.builtin.file task (state directory) over the
  parent directories of the node's files that a fresh host lacks (copy does not create them;
  gpuforge apply does, with mkdir -p); then one ansible.builtin.copy task per handler group looping
  over that group's files (owner and group root, the rendered mode, backup: yes), notifying the
  handler gpuforge apply runs for those paths (src/plan/file_plan.cc, ImpactTable). A handler
  runs once per host, and only when one of its files changed: what gpuforge apply does.

Prints "NODE DIRS FILES HANDLERS" for each node on stdout (directories the play creates, files,
handlers), for the run's checks (check.py). HAVE_DIRS, a file with one directory a line, lists the directories a fresh host
already has (bench/apply/run.sh asks the first test host); without it every parent directory
gets a task. Only nodes listed in HOSTS_TSV are written; _cluster/ is not pushed (gpuforge
apply does not push it either). Standard library only.
"""

import os
import stat
import sys

# gpuforge's impact table, the rows with a handler: (prefix or exact path, handler command).
# The first matching row wins; a prefix ends with '/'.
HANDLER_ROWS = [
    ("/etc/nccl.conf", None),
    ("/etc/nccl/", None),
    ("/etc/sysctl.d/", "sysctl --system"),
    ("/etc/security/limits.d/", None),
    ("/etc/modules-load.d/", None),
    ("/etc/slurm/slurm.conf", "scontrol reconfigure"),
    ("/etc/slurm/topology.conf", "scontrol reconfigure"),
    ("/etc/slurm/gres.conf", "systemctl restart slurmd"),
    ("/etc/slurm/cgroup.conf", "systemctl restart slurmd"),
]
# Handler order is the table's (gpuforge runs them in this order, Ansible in definition order).
HANDLERS = ["sysctl --system", "scontrol reconfigure", "systemctl restart slurmd"]


def handler_for(path):
    for prefix, handler in HANDLER_ROWS:
        if (path.startswith(prefix) if prefix.endswith("/") else path == prefix):
            return handler
    return None


def group_key(handler):
    return "gf_files" if handler is None else "gf_files_" + handler.replace(" ", "_").replace("-", "_")


def yaml_str(s):
    # Paths here come from gpuforge's safe alphabets; double-quote them anyway.
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__)
    render, hosts_tsv, key, out = argv[:4]
    have_dirs = set()
    if len(argv) == 5:
        have_dirs = {line.strip() for line in open(argv[4]) if line.strip()}
    render = os.path.abspath(render)
    known_hosts = os.path.join(os.path.dirname(os.path.abspath(hosts_tsv)), "known_hosts")
    hosts = []
    for line in open(hosts_tsv):
        if line.startswith("#") or not line.strip():
            continue
        name, addr, port = line.rstrip("\n").split("\t")[:3]
        hosts.append((name, addr, port))
    os.makedirs(os.path.join(out, "host_vars"), exist_ok=True)

    with open(os.path.join(out, "hosts.ini"), "w") as f:
        f.write("[tb]\n")
        for name, addr, port in hosts:
            f.write(f"{name} ansible_host={addr} ansible_port={port} ansible_user=root "
                    f"ansible_ssh_private_key_file={key}\n")
        f.write("[tb:vars]\n")
        f.write(f"ansible_ssh_common_args='-o UserKnownHostsFile={known_hosts} "
                "-o StrictHostKeyChecking=yes -o BatchMode=yes'\n")
        f.write("ansible_python_interpreter=/usr/bin/python3\n")

    groups_used = set()
    any_dirs = False
    for name, _, _ in hosts:
        root = os.path.join(render, name)
        if not os.path.isdir(root):
            sys.exit(f"gen_playbook.py: no rendered files for {name} in {render}")
        groups = {}
        dirs = set()
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for fn in sorted(filenames):
                src = os.path.join(dirpath, fn)
                dest = "/" + os.path.relpath(src, root)
                mode = stat.S_IMODE(os.stat(src).st_mode)
                groups.setdefault(handler_for(dest), []).append((src, dest, mode))
                d = os.path.dirname(dest)
                while d not in ("/", "") and d not in have_dirs:
                    dirs.add(d)
                    d = os.path.dirname(d)
        with open(os.path.join(out, "host_vars", name + ".yml"), "w") as f:
            # Sorted, so a parent comes before its children.
            f.write("gf_dirs:\n" if dirs else "gf_dirs: []\n")
            for d in sorted(dirs):
                f.write(f"  - {yaml_str(d)}\n")
            any_dirs = any_dirs or bool(dirs)
            for handler in [None] + HANDLERS:
                files = groups.get(handler, [])
                f.write(f"{group_key(handler)}:\n" if files else f"{group_key(handler)}: []\n")
                for src, dest, mode in files:
                    f.write(f"  - {{src: {yaml_str(src)}, dest: {yaml_str(dest)}, mode: \"{mode:04o}\"}}\n")
        groups_used.update(h for h in groups)
        nfiles = sum(len(v) for v in groups.values())
        nhandlers = sum(1 for h in groups if h is not None)
        print(f"{name} {len(dirs)} {nfiles} {nhandlers}")

    with open(os.path.join(out, "site.yml"), "w") as f:
        f.write("# Generated by bench/apply/gen_playbook.py: the files `gpuforge render` wrote for each\n"
                "# node, copied as gpuforge apply writes them (root:root, the rendered mode, a backup of\n"
                "# any file replaced), with the handler gpuforge runs for the same paths.\n")
        f.write("- hosts: all\n  gather_facts: false\n  tasks:\n")
        if any_dirs:
            f.write("    - name: parent directories\n")
            f.write("      ansible.builtin.file: {path: \"{{ item }}\", state: directory}\n")
            f.write("      loop: \"{{ gf_dirs }}\"\n")
        for handler in [None] + HANDLERS:
            if handler not in groups_used:
                continue
            key_ = group_key(handler)
            f.write(f"    - name: files{'' if handler is None else ' (' + handler + ')'}\n")
            f.write("      ansible.builtin.copy:\n")
            f.write("        src: \"{{ item.src }}\"\n        dest: \"{{ item.dest }}\"\n")
            f.write("        owner: root\n        group: root\n        mode: \"{{ item.mode }}\"\n")
            f.write("        backup: yes\n")
            f.write(f"      loop: \"{{{{ {key_} }}}}\"\n")
            f.write("      loop_control: {label: \"{{ item.dest }}\"}\n")
            if handler is not None:
                f.write(f"      notify: {yaml_str(handler)}\n")
        used = [h for h in HANDLERS if h in groups_used]
        if used:
            f.write("  handlers:\n")
            for handler in used:
                f.write(f"    - name: {yaml_str(handler)}\n")
                f.write(f"      ansible.builtin.command: {yaml_str(handler)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
