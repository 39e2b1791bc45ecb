#!/usr/bin/env python3
"""A synthetic rail-optimized InfiniBand fabric for bench/cabling/run.sh (#31).

Writes INVENTORY (NODES nodes x 8 NDR NICs, NIC k of each 32-node scalable unit on that
unit's rail-k leaf, each leaf's 32 uplinks spread over 8 spines) and IBLINKINFO, the fabric as `iblinkinfo` (default
format, laid out like tests/data/fabric/iblinkinfo/hdr-quantum-22hca.txt) would print it, every
cable as designed except MISWIRES pairs of rail cables exchanged, so the run has something to
find. Nothing here is a real fabric.
"""
import argparse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=2048)
    ap.add_argument("--miswires", type=int, default=4)
    ap.add_argument("inventory")
    ap.add_argument("iblinkinfo")
    a = ap.parse_args()
    n = a.nodes
    if n % 32:
        raise SystemExit("--nodes must be a multiple of 32")
    units = n // 32
    leaves = units * 8
    groups = (leaves + 63) // 64  # 64 leaves a group; uplink q of each goes to the group's spine q
    spines = 32 * groups
    width = max(4, len(str(n)))
    lw = max(3, len(str(leaves)))
    node = lambda i: f"gpu{i:0{width}d}"
    spine_of = lambda l, q: q + 1 + 32 * ((l - 1) // 64)
    leaf = lambda i: f"leaf{i:0{lw}d}"
    with open(a.inventory, "w") as f:
        f.write("version: 1\ncluster: {name: bench-cabling}\nprofiles:\n  hgx:\n    nics:\n")
        f.write('      - {name: "mlx5_[0-7]", kind: infiniband, rate: 400Gb/s, network: ib, '
                "rail: [0, 1, 2, 3, 4, 5, 6, 7]}\n")
        f.write("networks:\n  ib: {role: compute, kind: infiniband, rate: 400Gb/s, topology: rail-optimized}\n")
        f.write("switches:\n")
        f.write(f'  - {{name: "leaf[{1:0{lw}d}-{leaves:0{lw}d}]", tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}}\n')
        f.write(f'  - {{name: "spine[1-{spines}]", tier: spine, network: ib, ports: 64, port_rate: 400Gb/s}}\n')
        f.write("links:\n")
        for u in range(units):
            for r in range(8):
                f.write(f'  - {{from: "gpu[{u*32+1:0{width}d}-{u*32+32:0{width}d}]:mlx5_{r}", '
                        f'to: "{leaf(u*8+r+1)}:[1-32]"}}\n')
        for l in range(1, leaves + 1):
            for q in range(32):
                f.write(f'  - {{from: "{leaf(l)}:{33 + q}", to: "spine{spine_of(l, q)}:{(l - 1) % 64 + 1}"}}\n')
        f.write("nodes:\n")
        for u in range(units):  # 32 nodes an entry, each with its own addresses
            f.write(f'  - {{name: "gpu[{u*32+1:0{width}d}-{u*32+32:0{width}d}]", '
                    f'address: "10.{u // 200}.{u % 200}.[1-32]", profile: hgx}}\n')

    # Cables: (node, rail) -> (leaf index, port); leaf index -> port -> (node, rail).
    cab = {}
    for u in range(units):
        for r in range(8):
            for k in range(32):
                cab[(u * 32 + k + 1, r)] = (u * 8 + r + 1, k + 1)
    # Miswires: node 1+7i's rail 3 and rail 5 cables exchanged (a crossed pair across leaves).
    for i in range(a.miswires):
        nd = 1 + 7 * i
        cab[(nd, 3)], cab[(nd, 5)] = cab[(nd, 5)], cab[(nd, 3)]
    at_leaf = {}
    for (nd, r), (l, p) in cab.items():
        at_leaf[(l, p)] = (nd, r)
    guid = lambda kind, i: f"0x{kind:04x}{i:012x}"
    lid_node = lambda nd, r: 1 + (nd - 1) * 8 + r
    lid_leaf = lambda l: 20000 + l  # above the nodes' LIDs (8 per node)
    lid_spine = lambda s: 40000 + s
    port = "==( 4X        106.25 Gbps Active/  LinkUp)==>"
    with open(a.iblinkinfo, "w") as f:
        for nd in range(1, n + 1):
            for r in range(8):
                l, p = cab[(nd, r)]
                f.write(f"CA: {node(nd)} mlx5_{r}:\n")
                f.write(f"      {guid(0xa0, lid_node(nd, r))} {lid_node(nd, r):6d}    1[  ] {port} "
                        f"{lid_leaf(l):7d} {p:4d}[  ] \"MF0;{leaf(l)}:MQM9700/U1\" ( )\n")
        for l in range(1, leaves + 1):
            f.write(f"Switch: {guid(0xb0, l)} MF0;{leaf(l)}:MQM9700/U1:\n")
            for p in range(1, 65):
                if p <= 32:
                    nd, r = at_leaf[(l, p)]
                    f.write(f"      {lid_leaf(l):6d} {p:4d}[  ] {port} {lid_node(nd, r):7d}    1[  ] "
                            f"\"{node(nd)} mlx5_{r}\" ( )\n")
                else:
                    sp = spine_of(l, p - 33)
                    f.write(f"      {lid_leaf(l):6d} {p:4d}[  ] {port} {lid_spine(sp):7d} {(l - 1) % 64 + 1:4d}[  ] "
                            f"\"MF0;spine{sp}:MQM9700/U1\" ( )\n")
        for sp in range(1, spines + 1):
            f.write(f"Switch: {guid(0xc0, sp)} MF0;spine{sp}:MQM9700/U1:\n")
            g, q = (sp - 1) // 32, (sp - 1) % 32
            for k in range(64):
                l = g * 64 + k + 1
                if l > leaves:
                    break
                f.write(f"      {lid_spine(sp):6d} {k + 1:4d}[  ] {port} {lid_leaf(l):7d} {33 + q:4d}[  ] "
                        f"\"MF0;{leaf(l)}:MQM9700/U1\" ( )\n")


if __name__ == "__main__":
    main()
