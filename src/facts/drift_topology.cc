#include "facts/drift_topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "facts/pci_tree.h"
#include "facts/text.h"

namespace gpuforge::facts {

namespace {

struct Out {
  const NodeFacts& f;
  std::vector<Drift> v;
  void Add(std::string_view code, std::string subject, std::string expected, std::string actual,
           std::string message) {
    v.push_back(Drift{std::string(code), f.node, std::move(subject), std::move(expected),
                      std::move(actual), std::move(message)});
  }
};

std::string Numa(std::optional<int> n) { return n ? std::to_string(*n) : std::string("none"); }

// A GPU's NUMA node: sysfs numa_node (the measured tree, else the pci section), else the NUMA
// Affinity column of nvidia-smi topo -m.
std::optional<int> GpuNuma(const NodeFacts& f, const Gpu& g) {
  if (f.pci_tree) {
    if (const model::PciEndpoint* e = f.pci_tree->Endpoint(g.pci_bus_id); e && e->numa_node) {
      return e->numa_node;
    }
  }
  for (const PciDevice& d : f.pci) {
    if (d.bdf == g.pci_bus_id && d.numa_node) return d.numa_node;
  }
  if (f.topology) {
    std::string name = fmt::format("GPU{}", g.index);
    for (const TopoRow& r : f.topology->rows) {
      if (r.device == name) return text::ToIntIn(r.numa_affinity, 0, 4095);
    }
  }
  return std::nullopt;
}

// The inventory's NUMA node for a measured GPU: by bus id where the profile lists bus ids,
// else by position (nvidia-smi index order, profile GPU order).
std::optional<int> InventoryNuma(const model::Profile& p, const Gpu& g, std::size_t position) {
  std::size_t k = 0;
  for (const model::GpuSpec& s : p.gpus) {
    for (std::size_t i = 0; i < s.numa_nodes.size(); ++i, ++k) {
      if (!s.pci_bus_ids.empty()) {
        if (i < s.pci_bus_ids.size() && s.pci_bus_ids[i] == g.pci_bus_id) return s.numa_nodes[i];
      } else if (k == position) {
        return s.numa_nodes[i];
      }
    }
  }
  return std::nullopt;
}

void CheckGpuNuma(const model::Profile& p, Out& out) {
  const NodeFacts& f = out.f;
  for (std::size_t i = 0; i < f.gpus.size(); ++i) {
    const Gpu& g = f.gpus[i];
    std::optional<int> want = InventoryNuma(p, g, i);
    std::optional<int> have = GpuNuma(f, g);
    if (!want || !have || *want == *have) continue;
    out.Add("topology.gpu_numa", fmt::format("gpu{}", g.index), std::to_string(*want),
            std::to_string(*have),
            fmt::format("gpu{} ({}) sits on NUMA node {}, the inventory says {}", g.index,
                        g.pci_bus_id, *have, *want));
  }
}

// Inventory bus ids the measured tree does not have: the file NCCL would get from them would
// name devices that are not there.
void CheckMismatch(const model::Profile& p, const model::PciTree& t, Out& out) {
  for (const model::GpuSpec& s : p.gpus) {
    for (const std::string& b : s.pci_bus_ids) {
      const model::PciEndpoint* e = t.Endpoint(b);
      if (e && e->kind == model::PciEndpointKind::kGpu) continue;
      out.Add("topology.mismatch", b, "a GPU", e ? "a NIC" : "nothing",
              fmt::format("the inventory puts a {} GPU at {}, the node's PCI tree has {} there",
                          s.model, b, e ? "a NIC" : "nothing"));
    }
  }
  for (const model::NicSpec& n : p.nics) {
    if (n.pci_bus_id.empty()) continue;
    const model::PciEndpoint* e = t.Endpoint(n.pci_bus_id);
    if (e && e->kind == model::PciEndpointKind::kNic) continue;
    out.Add("topology.mismatch", n.pci_bus_id, fmt::format("NIC {}", n.name),
            e ? "a GPU" : "nothing",
            fmt::format("the inventory puts NIC {} at {}, the node's PCI tree has {} there",
                        n.name, n.pci_bus_id, e ? "a GPU" : "nothing"));
  }
}

// Rail locality and GPUDirect distance: for each GPU the closest RDMA NIC by PCI path, as
// NCCL picks it.
void CheckRails(const model::Profile& p, const model::PciTree& t, Out& out) {
  std::vector<const model::PciEndpoint*> nics;
  for (const model::PciEndpoint& e : t.endpoints) {
    if (e.kind == model::PciEndpointKind::kNic && !e.rdma_devices.empty()) nics.push_back(&e);
  }
  if (nics.empty()) return;
  // GPUDirect RDMA is expected where the profile has RDMA NICs (InfiniBand or RoCE).
  const bool gdr = std::any_of(p.nics.begin(), p.nics.end(), [](const model::NicSpec& n) {
    return n.kind != model::NetKind::kEthernet;
  });
  for (const Gpu& g : out.f.gpus) {
    const model::PciEndpoint* gpu = t.Endpoint(g.pci_bus_id);
    if (!gpu) continue;
    const model::PciEndpoint* best = nullptr;
    std::string best_d;
    for (const model::PciEndpoint* n : nics) {
      std::optional<std::string> d = PciDistance(t, gpu->bdf, n->bdf);
      if (d && (!best || DistanceRank(*d) < DistanceRank(best_d))) {
        best = n;
        best_d = *d;
      }
    }
    if (!best) continue;
    std::string subject = fmt::format("gpu{}", g.index);
    const std::string& nic = best->rdma_devices[0];
    if (gpu->numa_node && best->numa_node && *gpu->numa_node != *best->numa_node) {
      out.Add("topology.nic_numa", subject, Numa(gpu->numa_node), Numa(best->numa_node),
              fmt::format("{} ({}, NUMA {}) has its closest RDMA NIC {} on NUMA {}: no NIC on "
                          "its socket",
                          subject, gpu->bdf, *gpu->numa_node, nic, *best->numa_node));
    }
    if (gdr && DistanceRank(best_d) > DistanceRank("PXB")) {
      out.Add("topology.gdr_distance", subject, "PXB or closer", fmt::format("{} ({})", best_d, nic),
              fmt::format("{} ({}) reaches its closest RDMA NIC {} only via {}; NCCL turns "
                          "GPUDirect RDMA off beyond PXB by default (NCCL_NET_GDR_LEVEL)",
                          subject, gpu->bdf, nic, best_d));
    }
  }
  // Inventory NUMA nodes of NICs against the measured ones.
  for (const model::NicSpec& n : p.nics) {
    if (!n.numa_node) continue;
    for (const model::PciEndpoint* e : nics) {
      bool named = std::find(e->rdma_devices.begin(), e->rdma_devices.end(), n.name) !=
                   e->rdma_devices.end();
      if (!named || !e->numa_node || *e->numa_node == *n.numa_node) continue;
      out.Add("topology.nic_numa", n.name, std::to_string(*n.numa_node),
              std::to_string(*e->numa_node),
              fmt::format("NIC {} ({}) sits on NUMA node {}, the inventory says {}", n.name,
                          e->bdf, *e->numa_node, *n.numa_node));
    }
  }
}

// Bridges above a GPU or NIC trained below what they support. The endpoints' own links are
// pcie.link_gen / pcie.link_width; the hops above them are this.
void CheckHops(const model::PciTree& t, Out& out) {
  std::set<std::string> judged;
  for (const model::PciEndpoint& e : t.endpoints) {
    // An idle GPU lowers its link speed, and the port above follows it.
    bool idle = false;
    for (const Gpu& g : out.f.gpus) {
      if (g.pci_bus_id == e.bdf && g.detail && !g.detail->performance_state.empty() &&
          g.detail->performance_state != "P0") {
        idle = true;
      }
    }
    for (std::size_t i = 0; i + 1 < e.path.size(); ++i) {
      const model::PciFunction* f = t.Function(e.path[i]);
      if (!f || !judged.insert(f->bdf).second) continue;
      std::vector<std::string> bad;
      if (!idle && f->link_speed_gts && f->max_link_speed_gts &&
          *f->link_speed_gts < *f->max_link_speed_gts - 0.01) {
        bad.push_back(
            fmt::format("{:g} of {:g} GT/s", *f->link_speed_gts, *f->max_link_speed_gts));
      }
      if (f->link_width && f->max_link_width && *f->link_width < *f->max_link_width) {
        bad.push_back(fmt::format("x{} of x{}", *f->link_width, *f->max_link_width));
      }
      if (bad.empty()) continue;
      std::string expected = fmt::format(
          "{} GT/s x{}",
          f->max_link_speed_gts ? fmt::format("{:g}", *f->max_link_speed_gts) : "?",
          f->max_link_width ? std::to_string(*f->max_link_width) : "?");
      std::string actual = fmt::format(
          "{} GT/s x{}", f->link_speed_gts ? fmt::format("{:g}", *f->link_speed_gts) : "?",
          f->link_width ? std::to_string(*f->link_width) : "?");
      out.Add("pcie.hop_degraded", f->bdf, expected, actual,
              fmt::format("bridge {} above {} links at {}", f->bdf, e.bdf,
                          bad.size() == 2 ? bad[0] + ", " + bad[1] : bad[0]));
    }
  }
}

}  // namespace

std::vector<Drift> TopologyDrift(const model::Profile& p, const NodeFacts& f) {
  Out out{f, {}};
  if (p.gpu_count() == 0) return {};
  CheckGpuNuma(p, out);
  if (!f.pci_tree_refused.empty()) {
    out.Add("topology.unreadable", "pci-tree", "a PCI tree", "refused",
            fmt::format("the node's PCI tree was refused: {}", f.pci_tree_refused));
  }
  if (f.pci_tree) {
    CheckMismatch(p, *f.pci_tree, out);
    CheckRails(p, *f.pci_tree, out);
    CheckHops(*f.pci_tree, out);
  }
  return std::move(out.v);
}

}  // namespace gpuforge::facts
