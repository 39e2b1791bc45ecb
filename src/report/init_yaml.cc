#include "gpuforge/report/init_yaml.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/text.h"

namespace gpuforge::report {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Text from a node in a comment: one line of printable ASCII, so nothing a node sends can end
// the comment and become YAML.
std::string C(std::string_view s, std::size_t max = 160) {
  return text::Printable(s, text::Shown{.max = max, .other = '?', .newline = '\0', .drop_line_ends = false, .cut = "..."});
}

// A double-quoted YAML scalar. Every value quoted here passed an inventory alphabet (names,
// versions, bus ids, the CPU model's), none of which has '"' or '\'.
std::string Q(std::string_view s) { return fmt::format("\"{}\"", s); }

template <typename T, typename F>
std::string List(const std::vector<T>& v, F f) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + f(v[i]);
  return s + "]";
}

void Profile(std::string& y, const facts::DraftProfile& p) {
  y += fmt::format("  # {} node{}: {}\n", p.nodes.size(), p.nodes.size() == 1 ? "" : "s", C(hostlist::Fold(p.nodes), 400));
  if (!p.outlier_of.empty()) {
    y += fmt::format("  # OUTLIER: differs from {}, which most nodes of its kind have:\n", p.outlier_of);
    for (const std::string& d : p.differences) y += fmt::format("  #   {}\n", C(d));
    y += "  # Fix the node, or keep this profile if the difference is meant.\n";
  }
  y += fmt::format("  {}:\n", p.name);
  if (p.gpus) {
    const facts::DraftGpus& g = *p.gpus;
    // The loader's bounds: 0..64 GPUs; a model outside the catalogue needs memory and tdp.
    const bool writable = g.count <= 64 && (g.in_catalogue || (g.memory_bytes >= (1u << 20) && g.tdp_w >= 1));
    const std::string pad = writable ? "    " : "    # ";
    if (!writable) {
      y += "    # TODO gpus: more than 64 GPUs, or a model gpuforge's catalogue does not know whose memory and\n"
           "    # power limit the node did not say; write them (docs/inventory.md#profilesnamegpus).\n";
    }
    y += pad + "gpus:\n";
    y += fmt::format("{}  model: {}  # {}: {}{}\n", pad, g.model, C(g.source), C(g.reported),
                     g.in_catalogue ? "" : "; not in gpuforge's catalogue");
    if (!g.in_catalogue && writable) {
      y += fmt::format("{}  memory: {}MiB  # nvidia-smi memory.total\n", pad, g.memory_bytes >> 20);
      y += fmt::format("{}  tdp: {:.0f}W  # nvidia-smi -q: max power limit\n", pad, g.tdp_w);
    }
    y += fmt::format("{}  count: {}\n", pad, g.count);
    if (!g.pci.empty()) y += fmt::format("{}  pci: {}  # bus ids in GPU index order\n", pad, List(g.pci, Q));
    if (!g.numa.empty()) {
      y += fmt::format("{}  numa: {}  # /sys/bus/pci/devices/BUS/numa_node\n", pad,
                       List(g.numa, [](int n) { return std::to_string(n); }));
    }
  }
  if (p.cpu) {
    const facts::DraftCpu& c = *p.cpu;
    y += fmt::format("    cpu: {{{}sockets: {}, cores_per_socket: {}, threads_per_core: {}}}  # lscpu\n",
                     c.model.empty() ? "" : "model: " + Q(c.model) + ", ", c.sockets, c.cores_per_socket,
                     c.threads_per_core);
  }
  if (p.memory_bytes > 0) {
    y += fmt::format("    memory: {}GiB  # /proc/meminfo MemTotal {} MiB{}, rounded up to a whole GiB\n",
                     p.memory_bytes / kGiB, p.memtotal_max >> 20,
                     p.memtotal_min != p.memtotal_max ? fmt::format(" (lowest {} MiB)", p.memtotal_min >> 20) : "");
  }
  if (p.nvme_count > 64) {
    y += fmt::format("    # TODO nvme: {} namespaces, more than the inventory's 64 drives a node (/sys/block/nvme*)\n",
                     p.nvme_count);
  } else if (p.nvme_count > 0) {
    std::string models;
    for (const std::string& m : p.nvme_models) models += (models.empty() ? "; " : ", ") + C(m, 60);
    y += fmt::format("    nvme: {{count: {}, size: {}}}  # /sys/block/nvme*n*/size{}\n", p.nvme_count,
                     facts::DriveSizeText(p.nvme_size), models);
    y += "    # TODO nvme read_bandwidth, write_bandwidth: from the drive's datasheet, or `validate --checks storage`.\n";
  }
  if (!p.nics.empty()) {
    y += "    nics:\n";
    for (const facts::DraftNic& n : p.nics) {
      std::string fields = fmt::format("name: {}, kind: {}, rate: {}", n.name, n.kind, facts::RateText(n.rate_gbps));
      if (n.kind != "ethernet") fields += fmt::format(", port: {}", n.port);
      if (!n.pci.empty()) fields += ", pci: " + Q(n.pci);
      if (n.numa) fields += fmt::format(", numa: {}", *n.numa);
      if (!n.netdev.empty() && n.netdev != n.name) fields += ", netdev: " + n.netdev;
      if (!n.network.empty()) fields += ", network: " + n.network;
      std::string note = C(n.rate_source);
      if (!n.pci_id.empty()) note += "; PCI id " + n.pci_id;
      if (!n.state.empty() && n.state != "ACTIVE") note += fmt::format("; port {}, so the rate may not be the link's", C(n.state, 20));
      y += fmt::format("      - {{{}}}  # {}\n", fields, note);
    }
    const bool all_networked =
        std::all_of(p.nics.begin(), p.nics.end(), [](const facts::DraftNic& n) { return !n.network.empty(); });
    y += all_networked
             ? "      # TODO each NIC's rail, on a rail-optimized fabric: docs/inventory.md#profilesnamenics\n"
             : "      # TODO each NIC's network (and rail, on a rail-optimized fabric): docs/inventory.md#profilesnamenics\n";
  }
  for (const std::string& l : p.left_out) y += fmt::format("    # note: {}\n", C(l, 240));
  y += "    # TODO power: {max: ...} or {other: ...} if the default (300 W per GPU besides the GPUs) is wrong\n";
}

void Version(std::string& y, std::string_view indent, std::string_view key, const facts::DraftVersion& v,
             bool quote = true) {
  if (v.value.empty()) return;
  y += fmt::format("{}{}: {}  # {}", indent, key, quote ? Q(v.value) : v.value, v.source);
  if (!v.dissent.empty()) {
    std::string d;
    for (std::size_t i = 0; i < v.dissent.size() && i < 8; ++i) d += (i ? ", " : "") + C(v.dissent[i], 80);
    if (v.dissent.size() > 8) d += fmt::format(" and {} more", v.dissent.size() - 8);
    y += "; OTHERS: " + d;
  }
  y += "\n";
}

}  // namespace

std::string InitYaml(const facts::Draft& d, const InitYamlOptions& o) {
  std::string y;
  y += fmt::format("# Inventory drafted by `{}`\n", C(o.generated_by, 300));
  y += fmt::format("# on {} from {} node{} that answered", C(o.generated_at, 40), d.nodes.size(),
                   d.nodes.size() == 1 ? "" : "s");
  y += d.unreached.empty() ? ".\n" : fmt::format(" ({} did not; listed below).\n", d.unreached.size());
  y += "# Each value is what the nodes reported; the comment beside it says where it came from.\n"
       "# What no node can tell (racks, power, networks, switches, links, storage, the scheduler)\n"
       "# is a commented TODO naming the section of docs/inventory.md to read. Fill those in, then\n"
       "# run `gpuforge lint` on this file; `gpuforge facts --check` compares it with the nodes again.\n";
  std::vector<const facts::DraftProfile*> outliers;
  for (const facts::DraftProfile& p : d.profiles) {
    if (!p.outlier_of.empty()) outliers.push_back(&p);
  }
  if (!outliers.empty()) {
    y += "#\n# READ FIRST: nodes that differ from the majority of their kind\n";
    for (const facts::DraftProfile* p : outliers) {
      std::string diffs;
      for (const std::string& x : p->differences) diffs += (diffs.empty() ? "" : "; ") + x;
      y += fmt::format("#   {} (profile {}): {}\n", C(hostlist::Fold(p->nodes), 200), p->name, C(diffs, 300));
    }
  }
  if (!d.unreached.empty()) {
    y += "#\n# NOT IN THIS FILE: nodes whose facts could not be gathered\n";
    for (const facts::Draft::Unreached& u : d.unreached) y += fmt::format("#   {}: {}\n", C(u.node, 80), C(u.why, 240));
  }
  y += "\nversion: 1\n\n";
  y += fmt::format("cluster:\n  name: {}  # TODO your cluster's name (--name)\n", o.cluster_name);
  y += "  # TODO site: {rack_power_limit: ..., cooling: air|liquid, power_price_per_kwh: ...}  docs/inventory.md#clustersite\n\n";
  y += "# TODO racks: where each node sits, with its power feed and cooling (docs/inventory.md#racksname);\n"
       "# then give each node entry below a `rack:`.\n"
       "# racks:\n#   r01: {power_limit: 40kW, cooling: liquid}\n\n";

  std::string ssh;
  if (!o.ssh_user.empty()) ssh += "user: " + o.ssh_user;
  if (o.ssh_port > 0) ssh += (ssh.empty() ? "" : ", ") + fmt::format("port: {}", o.ssh_port);
  if (!o.ssh_identity_file.empty()) ssh += (ssh.empty() ? "" : ", ") + ("identity_file: " + Q(o.ssh_identity_file));
  if (!o.ssh_jump.empty()) ssh += (ssh.empty() ? "" : ", ") + ("jump: " + Q(o.ssh_jump));
  if (o.ssh_sudo) ssh += (ssh.empty() ? "" : ", ") + std::string("sudo: true");
  if (!ssh.empty()) y += fmt::format("defaults:\n  ssh: {{{}}}  # as init reached the nodes\n\n", ssh);

  y += "profiles:\n";
  for (const facts::DraftProfile& p : d.profiles) Profile(y, p);

  y += "\nnodes:\n";
  for (const facts::DraftProfile& p : d.profiles) {
    // One entry per profile where names (and addresses, when given) fold back in the same
    // order; else one entry per node, so a name is never zipped with another's address.
    std::vector<std::string> addrs;
    for (const std::string& n : p.nodes) {
      auto a = o.addresses.find(n);
      if (a != o.addresses.end()) addrs.push_back(a->second);
    }
    const std::string names = hostlist::Fold(p.nodes);
    const std::string folded_addrs = addrs.empty() ? "" : hostlist::Fold(addrs);
    auto same = [](const std::string& expr, const std::vector<std::string>& want) {
      Result<std::vector<std::string>> e = hostlist::Expand(expr);
      return e.ok() && *e == want;
    };
    const bool fold = same(names, p.nodes) && (addrs.empty() || (addrs.size() == p.nodes.size() && same(folded_addrs, addrs)));
    const std::string tail = p.outlier_of.empty() ? "" : fmt::format("  # OUTLIER of {}", p.outlier_of);
    if (fold) {
      y += fmt::format("  - name: {}\n", Q(names));
      if (!addrs.empty()) y += fmt::format("    address: {}\n", Q(folded_addrs));
      y += fmt::format("    profile: {}{}\n", p.name, tail);
    } else {
      for (const std::string& n : p.nodes) {
        y += fmt::format("  - name: {}\n", Q(n));
        if (auto a = o.addresses.find(n); a != o.addresses.end()) y += fmt::format("    address: {}\n", Q(a->second));
        y += fmt::format("    profile: {}{}\n", p.name, tail);
      }
    }
  }
  y += "  # TODO each entry's rack, and role where it is not compute (controller, login, storage):\n"
       "  # docs/inventory.md#nodes\n\n";

  const std::optional<facts::DraftFabric>& fab = d.fabric;
  const bool fabric = fab && !fab->cables.empty();
  if (fabric) {
    y += "networks:\n";
    y += fmt::format("  {}: {{role: compute, kind: infiniband, rate: {}}}  # the subnet {} listed ({} cable{})\n",
                     fab->network, facts::RateText(fab->rate_gbps), C(fab->source, 80), fab->cables.size(),
                     fab->cables.size() == 1 ? "" : "s");
    y += "  # TODO role (compute is a guess: a storage fabric is `storage`), topology, and the other networks:\n"
         "  # docs/inventory.md#networksname\n\n";
    y += "switches:\n";
    for (const facts::DraftSwitch& sw : fab->switches) {
      y += fmt::format("  # {}: {} ports listed, {} cabled; tier from its cables ({})\n",
                       C(sw.desc.empty() ? sw.guid : sw.desc, 80), sw.ports, sw.cabled,
                       sw.tier == "leaf" ? "to nodes" : sw.tier == "spine" ? "to leaves" : "to switches only");
      std::string fields = fmt::format("name: {}", sw.name);
      if (!sw.model.empty()) fields += ", model: " + sw.model;
      fields += fmt::format(", tier: {}, network: {}, ports: {}, port_rate: {}", sw.tier, fab->network, sw.ports,
                            facts::RateText(sw.port_rate_gbps));
      if (!sw.guid.empty()) fields += ", aliases: [" + Q(sw.guid) + "]";
      y += fmt::format("  - {{{}}}\n", fields);
    }
    y += "  # TODO Ethernet switches, and `ports` where a switch has more than the subnet listed (docs/inventory.md#switches)\n\n";
    y += fmt::format("links:\n  # The subnet's cables ({}), one per line; `gpuforge cabling` checks the fabric against them.\n",
                     C(fab->source, 80));
    for (const facts::DraftCable& c : fab->cables) y += fmt::format("  - {{from: {}, to: {}}}\n", Q(c.from), Q(c.to));
  } else {
    y += "# TODO networks: one per fabric, then name it in each NIC's `network` (docs/inventory.md#networksname).\n"
         "# networks:\n#   ib: {role: compute, kind: infiniband, rate: 400Gb/s, topology: fat-tree}\n\n";
    y += "# TODO switches: each leaf and spine with its ports (docs/inventory.md#switches).\n"
         "# switches:\n#   - {name: \"leaf[1-4]\", tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}\n\n";
  }
  if (fab) {
    for (std::size_t i = 0; i < fab->notes.size() && i < 64; ++i) y += fmt::format("# note: {}\n", C(fab->notes[i], 300));
    if (fab->notes.size() > 64) y += fmt::format("# note: and {} more like these\n", fab->notes.size() - 64);
    if (!fab->notes.empty() && !fabric) y += "\n";
  }
  if (d.links.empty()) {
    if (!fabric) {
      y += "# TODO links: every cable, node NIC to switch port (docs/inventory.md#links); `gpuforge cabling`\n"
           "# then checks the fabric against them. No node reported an LLDP neighbour on an inventory NIC, and\n"
           "# no subnet was read (init --subnet-from NODE reads InfiniBand's).\n"
           "# links:\n#   - {from: \"gpu001:mlx5_[0-7]\", to: \"leaf1:[1-8]\"}\n\n";
    } else {
      y += "\n";
    }
  } else {
    y += "# TODO links: the LLDP neighbours the nodes reported (lldpctl), as cables. Uncomment them once\n"
         "# `switches:` declares each switch under the name below (or with it in `aliases`); a neighbour\n"
         "# whose port name has no number is left for you to write (docs/cabling.md#names).\n";
    if (!fabric) y += "# links:\n";
    for (const facts::DraftLink& l : d.links) {
      // Comment text only: the chassis and port names are a switch's, and checked by nothing yet.
      if (l.port) {
        y += fmt::format("#   - {{from: \"{}:{}\", to: \"{}:{}\"}}  # port id {}\n", C(l.node, 80), C(l.nic, 40),
                         C(l.chassis, 80), *l.port, C(l.port_id, 80));
      } else {
        y += fmt::format("#   {}:{} -> {} port {}\n", C(l.node, 80), C(l.nic, 40), C(l.chassis, 80), C(l.port_id, 80));
      }
    }
    y += "\n";
  }
  y += "# TODO storage: the tiers the cluster reads data and writes checkpoints to (docs/inventory.md#storage).\n\n";

  const facts::DraftSoftware& s = d.software;
  const bool known_distro = s.distro.value == "ubuntu" || s.distro.value == "debian" || s.distro.value == "rhel" ||
                            s.distro.value == "rocky" || s.distro.value == "almalinux";
  y += "software:\n";
  if (known_distro) {
    y += "  os:\n";
    Version(y, "    ", "distro", s.distro, false);
    Version(y, "    ", "version", s.os_version);
  } else if (!s.distro.value.empty()) {
    y += fmt::format("  # os: the nodes run {}, which gpuforge does not render for (docs/inventory.md#softwareos)\n",
                     C(s.distro.value, 40));
  }
  if (!s.driver.value.empty()) {
    y += "  driver:\n";
    Version(y, "    ", "version", s.driver);
  }
  Version(y, "  ", "cuda", s.cuda);
  if (!s.nccl.value.empty()) {
    y += "  nccl:\n";
    Version(y, "    ", "version", s.nccl);
  }
  bool rdma_nics = false;
  for (const facts::DraftProfile& p : d.profiles) {
    for (const facts::DraftNic& n : p.nics) rdma_nics |= n.kind != "ethernet";
  }
  if (rdma_nics && (!s.ofed.value.empty() || !s.rdma_core.value.empty())) {
    y += "  rdma:\n";
    if (!s.ofed.value.empty()) {
      y += "    kind: mlnx-ofed  # ofed_info answered; TODO doca-ofed if this is DOCA-OFED\n";
      Version(y, "    ", "version", s.ofed);
    } else {
      y += "    kind: rdma-core\n";
      Version(y, "    ", "version", s.rdma_core);
    }
  }
  if (!s.slurm.value.empty()) {
    y += fmt::format("  # TODO scheduler: slurmd {} answers on the nodes; name the controller and partitions\n",
                     C(s.slurm.value, 40));
  } else {
    y += "  # TODO scheduler: slurm or kubernetes, its controller and partitions\n";
  }
  y += "  #   (docs/inventory.md#softwarescheduler)\n";
  return y;
}

}  // namespace gpuforge::report
