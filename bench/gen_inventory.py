#!/usr/bin/env python3
"""Writes a synthetic gpuforge inventory: N nodes x 8 H200, rail-optimized InfiniBand fat tree.

The shape is the usual NDR scalable-unit design, every switch a QM9700 with P ports (--switch-ports,
64 or 128); half of each switch's ports go down and half up, so every tier is 1:1:

  * P = 64 (the default): the QM9700's 64 NDR ports at 400 Gb/s, NICs at 400 Gb/s (NDR400);
  * P = 128: the same QM9700 with its 32 OSFP cages split into 128 NDR200 ports at 200 Gb/s
    (NVIDIA's "64 x 400 Gb/s or 128 x 200 Gb/s"), NICs at 200 Gb/s (ConnectX-7 at NDR200).
    Twice the radix, so three tiers reach 8x the nodes (up to 32,768 here), at half the
    bandwidth per NIC (8 x 200 Gb/s = 1.6 Tb/s per node);
  * a scalable unit (SU) is P/2 nodes; each SU has 8 leaves, one per rail, and NIC mlx5_R of
    every node in the SU goes to the SU's rail-R leaf (P/2 ports down);
  * every leaf sends its other P/2 ports up, so leaves are 1:1;
  * up to one pod (P/16 SUs: 4 at 64 ports, 8 at 128) that is two tiers: leaf uplinks spread
    evenly over leaves/2 spines;
  * above that, pods of P/16 SUs: P/2 leaves and P/2 spines per pod, leaf i of a pod to every
    spine of the pod; each spine sends P/2 ports up to its core group (spine j of every pod to
    core group j), spread evenly over pods/2 cores. Spines are 1:1 too; cores are fully used.

So with 64 ports N is 32, 64 or 128 (two tiers), or 128 x 2^k up to 8192 (three tiers); with
128 ports N is 64 to 512 (two tiers) or 512 x 2^k up to 32768 (1024, 4096 and 16384 are all
three tiers). Racks hold 4 nodes at 40 kW liquid-cooled; each node also has a 100 GbE storage
NIC. Links are written with hostlists, as a person would ("gpu[0001-0032]:mlx5_0" to
"leaf0001:[1-32]"); --explicit-links writes one line per cable instead, as a cabling database
export would. Names have 4 digits, or 5 from 10,000 nodes or switches.

Standard library only; nothing is fetched.
"""

import argparse
import os
import sys

# The examples' public munge key (plan refuses a Slurm cluster without one), by absolute path
# since the inventory is written elsewhere.
EXAMPLE_MUNGE_KEY = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "inventories", "examples",
                                 "munge.key.example"))
RAILS = 8
NODES_PER_RACK = 4
# Port count -> port (and NIC) rate: the QM9700 as 64 NDR ports, or split into 128 NDR200 ports.
PORT_RATES = {64: "400Gb/s", 128: "200Gb/s"}
WIDTH = 4               # digits in node and switch names; 5 from 10,000 (set by Shape)


def name(prefix, i):
    return f"{prefix}{i:0{WIDTH}d}"


def rng(lo, hi, width=0):
    """A hostlist range: 'lo' alone, or '[lo-hi]'."""
    if lo == hi:
        return f"{lo:0{width}d}"
    return f"[{lo:0{width}d}-{hi:0{width}d}]"


def hosts(prefix, lo, hi):
    return prefix + rng(lo, hi, WIDTH)


def address(k):
    """Node k (0-based) from 198.18.16.0 up within 198.18.0.0/15: 128 hosts per /24, never .0
    or .255."""
    block = 16 + k // 128
    return f"198.{18 + block // 256}.{block % 256}.{k % 128 + 1}"


class Shape:
    def __init__(self, nodes, ports=64):
        global WIDTH
        if ports not in PORT_RATES:
            raise ValueError(f"--switch-ports {ports}: use 64 (NDR400) or 128 (NDR200 split ports)")
        self.ports = ports
        self.rate = PORT_RATES[ports]
        self.half = ports // 2                        # ports down per switch; as many go up
        self.nodes_per_su = self.half                 # one leaf port per node and rail
        self.sus_per_pod = self.half // RAILS         # 4 at 64 ports, 8 at 128
        self.pod_switches = self.sus_per_pod * RAILS  # leaves (and spines) per pod: P/2
        pod_nodes = self.nodes_per_su * self.sus_per_pod
        two_tier = [self.nodes_per_su << k for k in range(self.sus_per_pod.bit_length())]
        # 198.18.0.0/15 holds 512 /24s of 128 nodes, 16 of them left to the head node.
        most = min(pod_nodes * ports, (512 - 16) * 128)
        most -= most % pod_nodes
        most = 1 << (most.bit_length() - 1)
        if nodes in two_tier:
            self.pods = 1
            self.sus = nodes // self.nodes_per_su
            self.leaves = self.sus * RAILS
            self.spines = self.leaves // 2
            self.cores = 0
        else:
            pods = nodes // pod_nodes
            ok = (nodes % pod_nodes == 0 and 2 <= pods <= ports and pods & (pods - 1) == 0
                  and nodes <= most)
            if not ok:
                raise ValueError(
                    f"--nodes {nodes} with --switch-ports {ports}: use "
                    f"{', '.join(map(str, two_tier))}, or {pod_nodes} x a power of two up to {most} "
                    f"({2 * pod_nodes}, {4 * pod_nodes}, ..., {most}), so every switch stays 1:1 "
                    "and fully cabled")
            self.pods = pods
            self.sus = nodes // self.nodes_per_su
            self.leaves = self.sus * RAILS
            self.spines = pods * self.pod_switches
            self.core_group = pods // 2          # cores per core group
            self.cores = self.pod_switches * self.core_group
        self.nodes = nodes
        WIDTH = max(4, len(str(max(nodes, self.leaves, self.spines, self.cores))))


def links(shape):
    """Yields (from, to) endpoint pairs, compact (hostlist) form."""
    down = shape.half              # ports toward the tier below; as many go up
    up = shape.ports - down
    per_su = shape.nodes_per_su
    pod_sw = shape.pod_switches
    # Nodes to rail leaves.
    for su in range(shape.sus):
        first = su * per_su + 1
        for rail in range(RAILS):
            leaf = su * RAILS + rail + 1
            yield (f"{hosts('gpu', first, first + per_su - 1)}:mlx5_{rail}",
                   f"{name('leaf', leaf)}:[1-{down}]")
    if shape.cores == 0:
        # Two tiers: leaf i's uplink u goes to spine u % S, at port i * (P/2 / S) + u // S + 1.
        s = shape.spines
        per = up // s
        for i in range(shape.leaves):
            for r in range(per):
                yield (f"{name('leaf', i + 1)}:{rng(down + 1 + r * s, down + r * s + s)}",
                       f"{hosts('spine', 1, s)}:{i * per + r + 1}")
        return
    # Leaves to the spines of their pod: leaf l's port P/2 + 1 + s goes to spine s's port l + 1.
    for p in range(shape.pods):
        base = p * pod_sw
        for l in range(pod_sw):
            yield (f"{name('leaf', base + l + 1)}:[{down + 1}-{shape.ports}]",
                   f"{hosts('spine', base + 1, base + pod_sw)}:{l + 1}")
    # Spine j of pod p to core group j: uplink u to core u % G, at port p * (P/2 / G) + u // G + 1.
    g = shape.core_group
    per = up // g
    for p in range(shape.pods):
        for j in range(pod_sw):
            spine = p * pod_sw + j + 1
            cores = (j * g + 1, j * g + g)
            for r in range(per):
                yield (f"{name('spine', spine)}:{rng(down + 1 + r * g, down + r * g + g)}",
                       f"{hosts('core', *cores)}:{p * per + r + 1}")


def expand_simple(expr):
    """Expands the one-bracket-per-side forms links() writes: 'a[01-03]b:c' style."""
    dev, port = expr.rsplit(":", 1)

    def one(s):
        if "[" not in s:
            return [s]
        pre, rest = s.split("[", 1)
        body, post = rest.split("]", 1)
        lo, hi = body.split("-")
        w = len(lo)
        return [f"{pre}{i:0{w}d}{post}" for i in range(int(lo), int(hi) + 1)]

    return [f"{d}:{p}" for d in one(dev) for p in one(port)]


def write(shape, out, explicit):
    n = shape.nodes
    gpus = n * RAILS
    racks = (n + NODES_PER_RACK - 1) // NODES_PER_RACK
    w = out.write
    ndr = "NDR400" if shape.ports == 64 else "NDR200"
    split = "" if shape.ports == 64 else " (split NDR200)"
    w(f"# Synthetic benchmark inventory from bench/gen_inventory.py: {n} nodes x 8 H200 = {gpus} GPUs,\n"
      f"# rail-optimized {ndr} fat tree: {shape.leaves} leaves, {shape.spines} spines, {shape.cores} cores\n"
      f"# (QM9700, {shape.ports} ports{split}, 1:1 everywhere). Not a real site; addresses are in 198.18.0.0/15.\n")
    w("version: 1\n\n")
    w("cluster:\n  name: bench-" + str(n) + "\n"
      "  site: {rack_power_limit: 40kW, cooling: liquid, power_price_per_kwh: 0.12, pue: 1.2}\n"
      "  economics: {gpu_unit_price: 35000, rent_per_gpu_hour: 3.5}\n\n")
    w(f"racks:\n  \"{hosts('r', 1, racks)}\": {{power_limit: 40kW, cooling: liquid}}\n"
      "  rmgmt: {power_limit: 10kW, cooling: air}\n\n")
    w("defaults:\n  ssh: {user: ops}\n\n")
    pci_gpu = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
               "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]
    pci_nic = ["0000:19:00.0", "0000:2b:00.0", "0000:3b:00.0", "0000:5e:00.0",
               "0000:9b:00.0", "0000:ac:00.0", "0000:bb:00.0", "0000:dc:00.0"]
    q = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"
    w("profiles:\n"
      "  hgx-h200:\n"
      "    gpus:\n"
      "      model: H200\n"
      "      count: 8\n"
      f"      pci: {q(pci_gpu)}\n"
      "      numa: [0, 0, 0, 0, 1, 1, 1, 1]\n"
      "    cpu: {model: \"Xeon Platinum 8480+\", sockets: 2, cores_per_socket: 56, threads_per_core: 2}\n"
      "    memory: 2TB\n"
      "    nvme: {count: 8, size: 3.84TB, read_bandwidth: 7GB/s, write_bandwidth: 4GB/s}\n"
      "    power: {other: 2.4kW}\n"
      "    nics:\n"
      "      - name: mlx5_[0-7]\n"
      "        kind: infiniband\n"
      f"        rate: {shape.rate}\n"
      "        network: ib\n"
      "        rail: [0, 1, 2, 3, 4, 5, 6, 7]\n"
      "        numa: [0, 0, 0, 0, 1, 1, 1, 1]\n"
      f"        pci: {q(pci_nic)}\n"
      "      - {name: mlx5_8, kind: ethernet, rate: 100Gb/s, network: data, netdev: ens9f0, numa: 0}\n"
      "  head:\n"
      "    cpu: {model: \"EPYC 9124\", sockets: 1, cores_per_socket: 16, threads_per_core: 2}\n"
      "    memory: 256GB\n"
      "    nics:\n"
      "      - {name: eth0, kind: ethernet, rate: 100Gb/s, network: data, netdev: eth0}\n\n")
    w("nodes:\n"
      "  - {name: head01, address: 198.18.0.10, rack: rmgmt, profile: head, role: controller}\n")
    for r in range(racks):
        lo = r * NODES_PER_RACK
        hi = min(n, lo + NODES_PER_RACK) - 1
        a, b = address(lo), address(hi)
        prefix = a.rsplit(".", 1)[0]
        addr = f"{prefix}.[{a.rsplit('.', 1)[1]}-{b.rsplit('.', 1)[1]}]"
        w(f"  - {{name: \"{hosts('gpu', lo + 1, hi + 1)}\", address: \"{addr}\", "
          f"rack: {name('r', r + 1)}, profile: hgx-h200}}\n")
    w("\nnetworks:\n"
      f"  ib:   {{role: compute, kind: infiniband, rate: {shape.rate}, topology: rail-optimized}}\n"
      "  data: {role: storage, kind: ethernet, rate: 100Gb/s, topology: spine-leaf}\n\n")
    w("switches:\n"
      f"  - {{name: \"{hosts('leaf', 1, shape.leaves)}\", tier: leaf, network: ib, model: QM9700, "
      f"ports: {shape.ports}, port_rate: {shape.rate}}}\n"
      f"  - {{name: \"{hosts('spine', 1, shape.spines)}\", tier: spine, network: ib, model: QM9700, "
      f"ports: {shape.ports}, port_rate: {shape.rate}}}\n")
    if shape.cores:
        w(f"  - {{name: \"{hosts('core', 1, shape.cores)}\", tier: core, network: ib, model: QM9700, "
          f"ports: {shape.ports}, port_rate: {shape.rate}}}\n")
    w("\nlinks:\n")
    for a, b in links(shape):
        if explicit:
            for x, y in zip(expand_simple(a), expand_simple(b)):
                w(f"  - {{from: {x}, to: {y}}}\n")
        else:
            w(f"  - {{from: \"{a}\", to: \"{b}\"}}\n")
    tb = 1e12
    w("\nstorage:\n"
      "  dataset: 1PB\n"
      "  tiers:\n"
      "    - {name: scratch, kind: local-nvme, role: hot, read_bandwidth: 56GB/s, write_bandwidth: 32GB/s,\n"
      "       latency: 100us, capacity: 30TB, mount: /scratch}\n"
      f"    - {{name: lustre, kind: lustre, role: warm, read_bandwidth: {n * 2:g}GB/s, "
      f"write_bandwidth: {max(n, 64):g}GB/s,\n"
      f"       latency: 300us, capacity: {n * 50 * tb / 1e15:g}PB, network: data, mount: /lustre, checkpoints: true}}\n"
      "    - {name: archive, kind: object, role: cold, read_bandwidth: 20GB/s, latency: 20ms, capacity: 20PB}\n\n")
    hca = ",".join(f"mlx5_{i}:1" for i in range(RAILS))
    w("software:\n"
      "  os: {distro: ubuntu, version: \"24.04\"}\n"
      "  driver: {branch: \"560\", version: \"560.35.03\"}\n"
      "  cuda: \"12.6\"\n"
      "  nccl:\n"
      "    version: \"2.21.5\"\n"
      "    topo_file: /etc/nccl-topology.xml\n"
      "    env:\n"
      f"      NCCL_IB_HCA: \"{hca}\"\n"
      "      NCCL_IB_TIMEOUT: 22\n"
      "      NCCL_IB_RETRY_CNT: 7\n"
      "      NCCL_SOCKET_IFNAME: ens9f0\n"
      "  rdma: {kind: doca-ofed, version: \"2.9.1\"}\n"
      "  scheduler:\n"
      "    kind: slurm\n"
      "    controller: head01\n"
      f"    munge_key: {EXAMPLE_MUNGE_KEY}\n"
      "    gres_autodetect: off\n"
      "    partitions:\n"
      f"      - {{name: gpu, nodes: \"{hosts('gpu', 1, n)}\", default: true, max_time: 14d}}\n\n")
    # 405B with tensor 8 inside a node and pipeline 8 across nodes; data fills the rest.
    w("workload:\n"
      "  params: 405B\n"
      "  precision: bf16\n"
      "  optimizer: adamw\n"
      f"  parallelism: {{data: {gpus // 64}, tensor: 8, pipeline: 8}}\n"
      "  checkpoint_interval: 1h\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, required=True, help="node count (8 GPUs each)")
    ap.add_argument("--out", required=True, help="output file, or - for stdout")
    ap.add_argument("--explicit-links", action="store_true",
                    help="one line per cable instead of hostlist ranges")
    ap.add_argument("--switch-ports", type=int, choices=sorted(PORT_RATES), default=64,
                    help="64: QM9700 NDR400 ports (up to 8192 nodes); 128: the same switch "
                         "with split NDR200 ports and NICs at 200 Gb/s (up to 32768 nodes)")
    args = ap.parse_args(argv)
    try:
        shape = Shape(args.nodes, args.switch_ports)
    except ValueError as e:
        ap.error(str(e))
    if args.out == "-":
        write(shape, sys.stdout, args.explicit_links)
    else:
        with open(args.out, "w", encoding="ascii") as f:
            write(shape, f, args.explicit_links)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
