#include "gpuforge/facts/draft.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/names.h"
#include "gpuforge/base/text.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/model/switch_names.h"

namespace gpuforge::facts {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Nodes whose MemTotal lies within this share of each other have the same memory: MemTotal
// moves by a few MiB with the kernel and firmware, while one DIMM of a 16-DIMM node is 6%.
constexpr double kMemorySpread = 0.02;

// The parts of a fingerprint, in the order differences are told.
enum Part { kGpus, kNics, kNvme, kCpu, kMemory, kParts };

// A group that differs from a larger one in at most this many parts is that group's outlier;
// more, and it is other hardware (a head node beside GPU nodes).
constexpr int kOutlierParts = 2;

// The name the inventory may use for a GPU model nvidia-smi names, when the catalogue has none.
std::string ModelName(std::string_view reported) {
  std::string out;
  std::string_view s = reported;
  if (s.starts_with("NVIDIA ")) s.remove_prefix(7);
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 64) out.resize(64);  // names::CheckName's length
  return out.empty() || names::CheckName(out) ? "unknown-gpu" : out;
}

const PciDevice* FindPci(const NodeFacts& f, std::string_view bdf) {
  for (const PciDevice& d : f.pci) {
    if (d.bdf == bdf) return &d;
  }
  return nullptr;
}

std::optional<DraftGpus> GpusOf(const NodeFacts& f) {
  DraftGpus g;
  if (f.HasNvidiaDriver()) {
    g.source = "nvidia-smi";
    const Gpu& first = f.gpus.front();
    std::optional<std::uint16_t> id = first.pci_device_id;
    const model::GpuModelInfo* m = id ? model::IdentifyGpu(*id, first.memory_total_bytes) : nullptr;
    if (m == nullptr) m = model::FindGpuModel(first.name);
    g.in_catalogue = m != nullptr;
    g.model = m ? std::string(m->name) : ModelName(first.name);
    g.reported = first.name;
    if (id) g.reported += fmt::format(", PCI id 10de:{:04x}", *id);
    if (first.memory_total_bytes) g.reported += fmt::format(", {} MiB", *first.memory_total_bytes >> 20);
    g.memory_bytes = first.memory_total_bytes.value_or(0);
    if (first.detail && first.detail->max_power_limit_w) {
      g.tdp_w = *first.detail->max_power_limit_w;
    } else {
      g.tdp_w = first.power_limit_w.value_or(0);
    }
    for (const Gpu& x : f.gpus) g.pci.push_back(x.pci_bus_id);
  } else {
    // No driver answers: the PCI bus still says how many GPUs there are and which.
    const PciDevice* first = nullptr;
    for (const PciDevice& d : f.pci) {
      if (d.kind != PciKind::kGpu) continue;
      if (first == nullptr) first = &d;
      g.pci.push_back(d.bdf);
    }
    if (first == nullptr) return std::nullopt;
    g.source = "PCI bus (no NVIDIA driver answered)";
    const model::GpuModelInfo* m = model::IdentifyGpu(static_cast<std::uint16_t>(first->device), std::nullopt);
    g.in_catalogue = m != nullptr;
    g.model = m ? std::string(m->name) : fmt::format("10de-{:04x}", first->device);
    g.reported = fmt::format("PCI id 10de:{:04x}", first->device);
  }
  g.count = static_cast<int>(g.pci.size());
  for (const std::string& bdf : g.pci) {
    const PciDevice* d = FindPci(f, bdf);
    if (d == nullptr || !d->numa_node) {
      g.numa.clear();
      break;
    }
    g.numa.push_back(*d->numa_node);
  }
  // A bus id the inventory would refuse (the node's output is hostile), or one listed twice,
  // is not written; nor a NUMA node beyond the loader's bound.
  std::set<std::string> bus_ids;
  for (const std::string& bdf : g.pci) {
    if (names::CheckPciBusId(bdf) || !bus_ids.insert(bdf).second) {
      g.pci.clear();
      g.numa.clear();
      break;
    }
  }
  for (int n : g.numa) {
    if (n < 0 || n > inventory::kMaxNumaNode) {
      g.numa.clear();
      break;
    }
  }
  return g;
}

std::string PciId(const PciDevice* d) {
  return d == nullptr ? "" : fmt::format("{:04x}:{:04x}", d->vendor, d->device);
}

void NicsOf(const NodeFacts& f, std::vector<DraftNic>& out, std::vector<std::string>& left_out) {
  std::set<std::string> rdma_netdevs;
  for (const IbDevice& dev : f.ib) {
    if (names::CheckDeviceName(dev.name)) {
      left_out.push_back(fmt::format("RDMA device {}: a name the inventory refuses; not written", text::Quote(dev.name, 40)));
      continue;
    }
    if (dev.ports.empty()) continue;
    const IbPort* port = &dev.ports.front();
    for (const IbPort& p : dev.ports) {
      if (p.state == "ACTIVE") {
        port = &p;
        break;
      }
    }
    DraftNic n;
    n.name = dev.name;
    n.kind = port->link_layer == "Ethernet" ? "roce" : "infiniband";
    n.port = port->port;
    n.state = port->state;
    if (!port->rate_gbps || *port->rate_gbps <= 0) {
      left_out.push_back(fmt::format("{}: port {} reports no rate; not written", dev.name, port->port));
      continue;
    }
    n.rate_gbps = *port->rate_gbps;
    n.rate_source = fmt::format("/sys/class/infiniband/{}/ports/{}/rate: {}", dev.name, port->port, port->rate);
    for (const std::string& nd : dev.netdevs) rdma_netdevs.insert(nd);
    if (!dev.netdevs.empty() && !names::CheckDeviceName(dev.netdevs.front())) n.netdev = dev.netdevs.front();
    for (const PciDevice& d : f.pci) {
      if (std::find(d.rdma_devices.begin(), d.rdma_devices.end(), dev.name) != d.rdma_devices.end()) {
        n.pci = d.bdf;
        n.numa = d.numa_node;
        n.pci_id = PciId(&d);
        break;
      }
    }
    out.push_back(std::move(n));
  }
  for (const PciDevice& d : f.pci) {
    if (d.kind != PciKind::kNic || !d.rdma_devices.empty() || d.netdevs.empty()) continue;
    const std::string& nd = d.netdevs.front();
    if (rdma_netdevs.count(nd) != 0) continue;
    if (names::CheckDeviceName(nd)) {
      left_out.push_back(fmt::format("interface {}: a name the inventory refuses; not written", text::Quote(nd, 40)));
      continue;
    }
    auto speed = f.net_speed_mbps.find(nd);
    if (speed == f.net_speed_mbps.end()) {
      left_out.push_back(fmt::format("{} ({}): no link, so no speed to write; add it by hand", nd, d.bdf));
      continue;
    }
    DraftNic n;
    n.name = nd;
    n.kind = "ethernet";
    n.rate_gbps = static_cast<double>(speed->second) / 1000.0;
    n.rate_source = fmt::format("/sys/class/net/{}/speed: {}", nd, speed->second);
    n.pci = d.bdf;
    n.numa = d.numa_node;
    n.netdev = nd;
    n.pci_id = PciId(&d);
    out.push_back(std::move(n));
  }
  // What the loader would refuse is not written: a port beyond its bound, a rate no NIC has, a
  // NUMA node beyond its bound, a bus id it cannot read or that two NICs share, a name twice.
  std::set<std::string> names_seen, bus_seen;
  std::vector<DraftNic> kept;
  for (DraftNic& n : out) {
    if (n.port < 1 || n.port > inventory::kMaxNicPort || !(n.rate_gbps >= 0.001 && n.rate_gbps <= 100000) ||
        !names_seen.insert(n.name).second) {
      left_out.push_back(fmt::format("{}: port {}, rate {:g} Gb/s: not a NIC the inventory can hold; not written",
                                     n.name, n.port, n.rate_gbps));
      continue;
    }
    if (n.numa && (*n.numa < 0 || *n.numa > inventory::kMaxNumaNode)) n.numa.reset();
    if (!n.pci.empty() && (names::CheckPciBusId(n.pci) || !bus_seen.insert(n.pci).second)) n.pci.clear();
    kept.push_back(std::move(n));
  }
  out = std::move(kept);
}

std::optional<DraftCpu> CpuOf(const NodeFacts& f) {
  if (!f.cpu || !f.cpu->sockets || !f.cpu->cores_per_socket) return std::nullopt;
  DraftCpu c;
  c.sockets = *f.cpu->sockets;
  c.cores_per_socket = *f.cpu->cores_per_socket;
  c.threads_per_core = f.cpu->threads_per_core.value_or(1);
  if (c.sockets < 1 || c.sockets > 16 || c.cores_per_socket < 1 || c.cores_per_socket > 1024 ||
      c.threads_per_core < 1 || c.threads_per_core > 8) {
    return std::nullopt;
  }
  if (!names::CheckCpuModel(f.cpu->model)) c.model = f.cpu->model;
  return c;
}

// One node's draft before grouping, and its fingerprint, part by part.
struct Seen {
  std::string node;
  const NodeFacts* facts = nullptr;
  DraftProfile profile;  // nodes empty
  std::string parts[kParts];
  std::string key;
};

std::string GpusPart(const std::optional<DraftGpus>& g) {
  if (!g) return "none";
  std::string s = fmt::format("{} x {}", g->count, g->model);
  std::string slots;
  for (std::size_t i = 0; i < g->pci.size(); ++i) {
    slots += fmt::format(" {}@{}", g->pci[i], i < g->numa.size() ? std::to_string(g->numa[i]) : "?");
  }
  return s + " |" + slots;
}

std::string NicsPart(const std::vector<DraftNic>& nics) {
  std::string s;
  for (const DraftNic& n : nics) {
    s += fmt::format("{} {} {} port {} {} {}@{} netdev {};", n.name, n.kind, RateText(n.rate_gbps), n.port, n.pci_id,
                     n.pci, n.numa ? std::to_string(*n.numa) : "?", n.netdev);
  }
  return s.empty() ? "none" : s;
}

// How part `p` of `a` differs from `b`'s, in words for the comment.
std::string Describe(Part p, const DraftProfile& a, const DraftProfile& b) {
  switch (p) {
    case kGpus: {
      const int ac = a.gpus ? a.gpus->count : 0, bc = b.gpus ? b.gpus->count : 0;
      if (ac != bc) return fmt::format("{} GPUs where {} has {}", ac, b.name, bc);
      if (a.gpus && b.gpus && a.gpus->model != b.gpus->model) {
        return fmt::format("GPU model {} where {} has {}", a.gpus->model, b.name, b.gpus->model);
      }
      return fmt::format("GPUs in other slots or NUMA nodes than {}'s", b.name);
    }
    case kNics: {
      if (a.nics.size() != b.nics.size()) {
        return fmt::format("{} NIC{} where {} has {}", a.nics.size(), a.nics.size() == 1 ? "" : "s", b.name,
                           b.nics.size());
      }
      for (std::size_t i = 0; i < a.nics.size(); ++i) {
        const DraftNic &x = a.nics[i], &y = b.nics[i];
        if (x.name != y.name) return fmt::format("NIC {} where {} has {}", x.name, b.name, y.name);
        if (x.rate_gbps != y.rate_gbps) {
          return fmt::format("{} at {} where {} has {}", x.name, RateText(x.rate_gbps), b.name, RateText(y.rate_gbps));
        }
        if (x.kind != y.kind) return fmt::format("{} is {} where {} has {}", x.name, x.kind, b.name, y.kind);
        if (x.pci_id != y.pci_id) return fmt::format("{} is PCI id {} where {} has {}", x.name, x.pci_id, b.name, y.pci_id);
        if (x.pci != y.pci) return fmt::format("{} in slot {} where {} has {}", x.name, x.pci, b.name, y.pci);
        if (x.port != y.port || x.numa != y.numa || x.netdev != y.netdev) {
          return fmt::format("{}'s port, NUMA node or interface differs from {}'s", x.name, b.name);
        }
      }
      return "NICs differ";
    }
    case kNvme:
      return fmt::format("{} NVMe drives of {} where {} has {} of {}", a.nvme_count, DriveSizeText(a.nvme_size), b.name,
                         b.nvme_count, DriveSizeText(b.nvme_size));
    case kCpu:
      if (!a.cpu || !b.cpu) return fmt::format("CPU {} where {}'s is {}", a.cpu ? "known" : "unknown", b.name, b.cpu ? "known" : "unknown");
      return fmt::format("CPU {} x {} cores x {} threads{} where {} has {} x {} x {}{}", a.cpu->sockets,
                         a.cpu->cores_per_socket, a.cpu->threads_per_core,
                         a.cpu->model.empty() ? "" : " (" + a.cpu->model + ")", b.name, b.cpu->sockets,
                         b.cpu->cores_per_socket, b.cpu->threads_per_core,
                         b.cpu->model.empty() ? "" : " (" + b.cpu->model + ")");
    case kMemory:
      return fmt::format("{} GiB of memory (MemTotal) where {} has {} GiB", a.memtotal_max / kGiB, b.name,
                         b.memtotal_max / kGiB);
    case kParts:
      break;
  }
  return "";
}

// Memory classes: MemTotal values sorted, a new class wherever one is more than kMemorySpread
// above the previous. Each value maps to its class's largest member.
std::map<std::uint64_t, std::uint64_t> MemoryClasses(std::vector<std::uint64_t> values) {
  std::sort(values.begin(), values.end());
  std::map<std::uint64_t, std::uint64_t> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= values.size(); ++i) {
    if (i == values.size() || (i > start && values[i] > values[i - 1] * (1 + kMemorySpread))) {
      for (std::size_t k = start; k < i; ++k) out[values[k]] = values[i - 1];
      start = i;
    }
  }
  return out;
}

// A profile name from the hardware: "h200x8", "cpu-32c"; `taken` makes it unique.
std::string ProfileName(const DraftProfile& p, std::set<std::string>& taken) {
  std::string base;
  if (p.gpus) {
    base = text::Lower(p.gpus->model) + "x" + std::to_string(p.gpus->count);
  } else if (p.cpu) {
    base = fmt::format("cpu-{}c", p.cpu->sockets * p.cpu->cores_per_socket);
  } else {
    base = "node";
  }
  if (base.size() > 56) base.resize(56);
  std::string name = base;
  for (int k = 2; taken.count(name) != 0; ++k) name = fmt::format("{}-{}", base, k);
  taken.insert(name);
  return name;
}

// The value most nodes report, and who reports another (nodes in the order given).
DraftVersion Majority(const std::vector<std::pair<std::string, std::string>>& seen, std::string source) {
  DraftVersion v;
  v.source = std::move(source);
  std::map<std::string, std::size_t> count;
  std::vector<std::string> order;
  for (const auto& [node, value] : seen) {
    if (value.empty()) continue;
    if (count[value]++ == 0) order.push_back(value);
  }
  std::size_t best = 0;
  for (const std::string& value : order) {
    if (count[value] > best) {
      best = count[value];
      v.value = value;
    }
  }
  for (const auto& [node, value] : seen) {
    if (!value.empty() && value != v.value) v.dissent.push_back(fmt::format("{}: {}", node, value));
  }
  // A version the inventory would refuse is not written, whoever reported it.
  if (!v.value.empty() && names::CheckVersion(v.value)) {
    v.dissent.insert(v.dissent.begin(), fmt::format("(most nodes: {}, not a version the inventory reads)",
                                                    text::Quote(v.value, 40)));
    v.value.clear();
  }
  return v;
}

}  // namespace

Draft MakeDraft(std::span<const Gathered> gathered) {
  Draft out;
  std::vector<Seen> seen;
  std::vector<std::uint64_t> memtotals;
  for (const Gathered& g : gathered) {
    if (!g.facts.ok()) {
      out.unreached.push_back({g.node, g.facts.error().message});
      continue;
    }
    Seen s;
    s.node = g.node;
    s.facts = &*g.facts;
    const NodeFacts& f = *g.facts;
    DraftProfile& p = s.profile;
    p.gpus = GpusOf(f);
    if (p.gpus && f.HasNvidiaDriver() && f.PciGpuCount() != p.gpus->count) {
      p.left_out.push_back(fmt::format("nvidia-smi lists {} GPUs, the PCI bus has {}", p.gpus->count, f.PciGpuCount()));
    }
    // A section that did not give its facts leaves a part of the fingerprint unknown: said
    // beside the profile, so "0 GPUs" from a failed nvidia-smi is not read as a node without.
    for (const Section& sec : f.sections) {
      if (sec.outcome == Outcome::kFailed || sec.outcome == Outcome::kUnparsed || sec.outcome == Outcome::kTooLarge) {
        p.left_out.push_back(fmt::format("{}: {} {} (exit {}{}), so what it reports is not known here", g.node,
                                         sec.command, ToString(sec.outcome), sec.exit_code,
                                         sec.first_line.empty() ? "" : ": " + sec.first_line));
      }
    }
    p.cpu = CpuOf(f);
    NicsOf(f, p.nics, p.left_out);
    for (const NvmeDrive& d : f.nvme) {
      ++p.nvme_count;
      p.nvme_size = p.nvme_size == 0 ? d.bytes : std::min(p.nvme_size, d.bytes);
      if (!d.model.empty() &&
          std::find(p.nvme_models.begin(), p.nvme_models.end(), d.model) == p.nvme_models.end()) {
        p.nvme_models.push_back(d.model);
      }
    }
    if (f.memory_bytes) {
      p.memtotal_min = p.memtotal_max = *f.memory_bytes;
      memtotals.push_back(*f.memory_bytes);
    }
    seen.push_back(std::move(s));
  }
  const std::map<std::uint64_t, std::uint64_t> mem_class = MemoryClasses(memtotals);
  for (Seen& s : seen) {
    const DraftProfile& p = s.profile;
    s.parts[kGpus] = GpusPart(p.gpus);
    s.parts[kNics] = NicsPart(p.nics);
    // Drives count by size class: 3.84 TB drives of two vendors differ by a few MB.
    s.parts[kNvme] = fmt::format("{} x {}", p.nvme_count, DriveSizeText(p.nvme_size));
    s.parts[kCpu] = p.cpu ? fmt::format("{}x{}x{} {}", p.cpu->sockets, p.cpu->cores_per_socket,
                                        p.cpu->threads_per_core, p.cpu->model)
                          : "unknown";
    s.parts[kMemory] = p.memtotal_max == 0 ? "unknown" : std::to_string(mem_class.at(p.memtotal_max));
    for (const std::string& part : s.parts) s.key += part + "\n";
  }

  // Groups of identical fingerprints, largest first (ties: the first node given first).
  std::map<std::string, std::vector<std::size_t>> by_key;
  std::vector<std::string> key_order;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    auto& members = by_key[seen[i].key];
    if (members.empty()) key_order.push_back(seen[i].key);
    members.push_back(i);
  }
  std::stable_sort(key_order.begin(), key_order.end(),
                   [&](const std::string& a, const std::string& b) { return by_key[a].size() > by_key[b].size(); });

  struct Group {
    std::vector<std::size_t> members;
    DraftProfile profile;
    int outlier_of = -1;
  };
  std::vector<Group> groups;
  for (const std::string& key : key_order) {
    Group g;
    g.members = by_key[key];
    g.profile = seen[g.members.front()].profile;
    g.profile.left_out.clear();
    std::set<std::string> left;
    for (std::size_t i : g.members) {
      const DraftProfile& p = seen[i].profile;
      g.profile.nodes.push_back(seen[i].node);
      g.profile.memtotal_min = std::min(g.profile.memtotal_min, p.memtotal_min);
      g.profile.memtotal_max = std::max(g.profile.memtotal_max, p.memtotal_max);
      g.profile.nvme_size = std::min(g.profile.nvme_size, p.nvme_size);
      for (const std::string& m : p.nvme_models) {
        auto& ms = g.profile.nvme_models;
        if (std::find(ms.begin(), ms.end(), m) == ms.end()) ms.push_back(m);
      }
      for (const std::string& l : p.left_out) {
        if (left.insert(l).second) g.profile.left_out.push_back(l);
      }
    }
    if (g.profile.memtotal_max > 0) {
      // The smallest whole GiB at or above every node's MemTotal: never below what a node has
      // (facts' memory.differs), and within 2% of the smallest, far above the 95% slurm.conf's
      // RealMemory takes (facts' memory.low, render/slurm.cc).
      g.profile.memory_bytes = (g.profile.memtotal_max + kGiB - 1) / kGiB * kGiB;
    }
    groups.push_back(std::move(g));
  }
  // Outliers: a smaller group differing from a larger one in at most kOutlierParts parts; the
  // largest such group is its majority.
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Seen& a = seen[groups[i].members.front()];
    for (std::size_t j = 0; j < i; ++j) {
      if (groups[j].outlier_of >= 0 || groups[j].members.size() <= groups[i].members.size()) continue;
      const Seen& b = seen[groups[j].members.front()];
      int differ = 0;
      for (int p = 0; p < kParts; ++p) differ += a.parts[p] != b.parts[p];
      if (differ <= kOutlierParts) {
        groups[i].outlier_of = static_cast<int>(j);
        break;
      }
    }
  }
  std::set<std::string> taken;
  for (Group& g : groups) {
    if (g.outlier_of < 0) g.profile.name = ProfileName(g.profile, taken);
  }
  for (Group& g : groups) {
    if (g.outlier_of < 0) continue;
    const Group& m = groups[g.outlier_of];
    std::string name = m.profile.name + "-" + g.profile.nodes.front();
    if (name.size() > 64 || names::CheckName(name)) name = m.profile.name + "-outlier";
    std::string unique = name;
    for (int k = 2; taken.count(unique) != 0; ++k) unique = fmt::format("{}-{}", name, k);
    taken.insert(unique);
    g.profile.name = unique;
    g.profile.outlier_of = m.profile.name;
    const Seen& a = seen[g.members.front()];
    const Seen& b = seen[m.members.front()];
    for (int p = 0; p < kParts; ++p) {
      if (a.parts[p] != b.parts[p]) g.profile.differences.push_back(Describe(static_cast<Part>(p), g.profile, m.profile));
    }
  }
  // Profiles: each majority, then its outliers; nodes in the order given.
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].outlier_of >= 0) continue;
    out.profiles.push_back(groups[i].profile);
    for (const Group& g : groups) {
      if (g.outlier_of == static_cast<int>(i)) out.profiles.push_back(g.profile);
    }
  }
  std::map<std::string, std::string> profile_of;
  for (const DraftProfile& p : out.profiles) {
    for (const std::string& n : p.nodes) profile_of[n] = p.name;
  }
  for (const Seen& s : seen) out.nodes.push_back({s.node, profile_of[s.node]});

  // Software: what most nodes run; the others named.
  std::vector<std::pair<std::string, std::string>> distro, os_version, driver, cuda, nccl, rdma, ofed, slurm;
  for (const Seen& s : seen) {
    const NodeFacts& f = *s.facts;
    distro.emplace_back(s.node, f.os ? f.os->id : "");
    os_version.emplace_back(s.node, f.os ? f.os->version_id : "");
    driver.emplace_back(s.node, f.DriverVersion().value_or(""));
    cuda.emplace_back(s.node, f.versions.cuda.value_or(""));
    nccl.emplace_back(s.node, f.versions.nccl.value_or(""));
    rdma.emplace_back(s.node, f.versions.rdma_core.value_or(""));
    ofed.emplace_back(s.node, f.versions.ofed.value_or(""));
    slurm.emplace_back(s.node, f.versions.slurm.value_or(""));
  }
  out.software.distro = Majority(distro, "/etc/os-release ID");
  out.software.os_version = Majority(os_version, "/etc/os-release VERSION_ID");
  out.software.driver = Majority(driver, "/proc/driver/nvidia/version");
  out.software.cuda = Majority(cuda, "nvcc --version, else /usr/local/cuda/version.json");
  out.software.nccl = Majority(nccl, "the libnccl2 package, else the library's file name");
  out.software.rdma_core = Majority(rdma, "the rdma-core package");
  out.software.ofed = Majority(ofed, "ofed_info -s");
  out.software.slurm = Majority(slurm, "slurmd -V");

  // Links: each LLDP neighbour on an interface of a NIC the draft names.
  for (const Seen& s : seen) {
    const NodeFacts& f = *s.facts;
    if (!f.lldp) continue;
    for (const LldpNeighbor& nb : f.lldp->neighbors) {
      const DraftNic* nic = nullptr;
      for (const DraftNic& n : s.profile.nics) {
        if (n.netdev == nb.local_if || n.name == nb.local_if) nic = &n;
      }
      if (nic == nullptr) continue;
      std::string chassis = nb.chassis_name.empty() ? nb.chassis_id : nb.chassis_name;
      DraftLink l{s.node, nic->name, chassis, nb.port_id, std::nullopt};
      // The port number: from the interface name where the id is one, else its description
      // (a MAC port id: sonic-buildimage #11255), as cabling reads it (docs/cabling.md#names).
      const std::string& port_name =
          (nb.port_id_type == "ifname" || nb.port_id_type == "local") ? nb.port_id : nb.port_descr;
      l.port = model::PortFromName(port_name, "", inventory::kMaxSwitchPorts);
      if (!port_name.empty() && l.port_id != port_name) l.port_id += " (" + port_name + ")";
      out.links.push_back(std::move(l));
    }
  }
  return out;
}

namespace {

// `v` with at most `decimals` places and no trailing zeros; fixed notation at any size.
std::string Fixed(double v, int decimals) {
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

std::string RateText(double gbps) { return Fixed(gbps, 3) + "Gb/s"; }

std::string DriveSizeText(std::uint64_t bytes) {
  const double tb = static_cast<double>(bytes) / 1e12;
  if (tb >= 1) return Fixed(std::floor(tb * 100) / 100, 2) + "TB";
  return Fixed(std::floor(static_cast<double>(bytes) / 1e9 * 10) / 10, 1) + "GB";
}

}  // namespace gpuforge::facts
