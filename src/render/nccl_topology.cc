// NCCL's topology file (NCCL_TOPO_FILE), from the node's measured PCI tree and nothing else.
//
// The shape is the one NCCL writes itself with NCCL_TOPO_DUMP_FILE (src/graph/xml.cc,
// ncclTopoDumpXmlRec): <system version="1"> holding one <cpu> per NUMA node, each holding the
// <pci> chain NCCL would build from sysfs (ncclTopoGetXmlFromSys), GPUs and NICs as leaves. NCCL
// keeps a node's parent from the file (a node that already has a parent is not re-attached), so
// a flat file that puts every device straight under its <cpu> erases the PCIe switches: every
// GPU-NIC path becomes PHB and GPUDirect RDMA is off at NCCL_NET_GDR_LEVEL's default (PXB).
// Hence no file at all unless the node's real tree was measured.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "render/families.h"
#include "render/quote.h"

namespace gpuforge::render {

namespace {

std::string Hex(std::uint32_t v, int digits) { return fmt::format("0x{:0{}x}", v, digits); }

// NCCL's attribute values: link_speed is min(device max_link_speed, the port above's), kept as
// the kernel prints it ("32.0 GT/s PCIe"); link_width the same with max_link_width
// (ncclTopoGetXmlFromSys reads "max_link_speed" and "../max_link_speed").
struct Link {
  std::optional<double> gts;
  std::optional<int> width;
};
Link NcclLink(const model::PciTree& t, const model::PciEndpoint& e, std::size_t index) {
  const model::PciFunction* self = t.Function(e.path[index]);
  const model::PciFunction* above = index > 0 ? t.Function(e.path[index - 1]) : nullptr;
  Link l;
  auto lower = [](auto a, auto b) {
    if (!a) return b;
    if (!b) return a;
    return std::min(a, b);
  };
  if (self) l = {self->max_link_speed_gts, self->max_link_width};
  if (above) l = {lower(l.gts, above->max_link_speed_gts), lower(l.width, above->max_link_width)};
  return l;
}

// NCCL's <cpu arch>: the names its own build writes (xml.cc, ncclTopoGetXmlFromCpu).
std::string NcclArch(std::string_view uname_m) {
  if (uname_m == "x86_64") return "x86_64";
  if (uname_m == "aarch64") return "arm64";
  if (uname_m == "ppc64le" || uname_m == "ppc64") return "ppc64";
  return "";
}

struct PciNode {
  std::string bdf;
  std::string attrs;  // rendered, escaped
  std::set<std::string> children;
};

void Emit(const std::map<std::string, PciNode>& nodes, const std::string& bdf, int indent,
          nlohmann::json& lines) {
  const PciNode& n = nodes.at(bdf);
  std::string pad(static_cast<std::size_t>(indent), ' ');
  if (n.children.empty()) {
    lines.push_back({{"text", fmt::format("{}<pci {}/>", pad, n.attrs)}});
    return;
  }
  lines.push_back({{"text", fmt::format("{}<pci {}>", pad, n.attrs)}});
  for (const std::string& c : n.children) Emit(nodes, c, indent + 2, lines);
  lines.push_back({{"text", fmt::format("{}</pci>", pad)}});
}

// Where the measured tree and the inventory disagree; "" when they agree.
std::string Contradiction(const model::Profile& p, const std::vector<const model::NicSpec*>& rdma,
                          const model::PciTree& t) {
  std::set<std::string> gpus, nics, rdma_names;
  for (const model::PciEndpoint& e : t.endpoints) {
    if (e.kind == model::PciEndpointKind::kGpu) gpus.insert(e.bdf);
    if (e.kind == model::PciEndpointKind::kNic) nics.insert(e.bdf);
    for (const std::string& r : e.rdma_devices) rdma_names.insert(r);
  }
  if (static_cast<int>(gpus.size()) != p.gpu_count()) {
    return fmt::format("the node has {} GPUs on its PCI tree, profile '{}' has {}", gpus.size(),
                       p.name, p.gpu_count());
  }
  for (const model::GpuSpec& g : p.gpus) {
    for (const std::string& b : g.pci_bus_ids) {
      if (!gpus.count(b)) return fmt::format("no GPU at bus id {} (inventory) on the node", b);
    }
  }
  for (const model::NicSpec* n : rdma) {
    if (!n->pci_bus_id.empty() && !nics.count(n->pci_bus_id)) {
      return fmt::format("no NIC at bus id {} ({}, inventory) on the node", n->pci_bus_id, n->name);
    }
    if (!rdma_names.count(n->name)) {
      return fmt::format("the node has no RDMA device {} (inventory)", n->name);
    }
  }
  return "";
}

}  // namespace

bool AddNcclTopologyJob(const model::Cluster& c, const MeasuredPci* measured, const model::Node& node,
                        const model::Profile& p, const std::vector<const model::NicSpec*>& rdma,
                        Plan* plan) {
  const std::string& path = c.software.nccl_topo_file;
  if (path.empty()) return false;  // the default, and right on bare metal: NCCL reads sysfs
  auto skip = [&](std::string reason) {
    plan->skipped.push_back({node.name, path, std::move(reason)});
    return false;
  };
  auto tree = measured ? measured->find(node.name) : MeasuredPci::const_iterator();
  if (!measured || tree == measured->end()) {
    return skip(
        "no measured PCI tree for this node (gather one with `gpuforge facts --save DIR`); a "
        "file written from the inventory's bus ids alone would put every device straight under "
        "its CPU, and NCCL would then see no PCIe switch and turn GPUDirect RDMA off, so NCCL "
        "reads sysfs itself");
  }
  const model::PciTree& t = tree->second;
  if (std::string why = Contradiction(p, rdma, t); !why.empty()) {
    return skip(fmt::format("the measured PCI tree contradicts the inventory: {}; `gpuforge "
                            "facts --check` reports it, and no topology file is written until "
                            "they agree",
                            why));
  }

  std::map<std::string, PciNode> nodes;
  std::map<int, std::set<std::string>> tops;  // NUMA node (-1: none) -> top <pci> nodes
  std::map<std::string, std::string> parent_of;
  for (const model::PciEndpoint& e : t.endpoints) {
    if (e.kind == model::PciEndpointKind::kNic && e.rdma_devices.empty()) continue;  // not NCCL's
    std::vector<std::string> chain = model::NcclPciChain(e);
    for (std::size_t k = 0; k < chain.size(); ++k) {
      const std::string& bdf = chain[k];
      std::string parent = k == 0 ? fmt::format("cpu {}", e.numa_node.value_or(-1)) : chain[k - 1];
      auto [pit, fresh] = parent_of.try_emplace(bdf, parent);
      if (!fresh && pit->second != parent) {
        return skip(fmt::format("the measured PCI tree puts {} under both {} and {}", bdf,
                                pit->second, parent));
      }
      if (k == 0) tops[e.numa_node.value_or(-1)].insert(bdf);
      if (k > 0) nodes[chain[k - 1]].children.insert(bdf);
      PciNode& n = nodes[bdf];
      if (!n.bdf.empty()) continue;
      n.bdf = bdf;
      const model::PciFunction* f = t.Function(bdf);
      if (!f) return skip(fmt::format("the measured PCI tree has no attributes of {}", bdf));
      std::size_t index = static_cast<std::size_t>(
          std::find(e.path.begin(), e.path.end(), bdf) - e.path.begin());
      Link l = NcclLink(t, e, index);
      n.attrs = fmt::format(
          "busid=\"{}\" class=\"{}\" vendor=\"{}\" device=\"{}\" subsystem_vendor=\"{}\" "
          "subsystem_device=\"{}\"",
          XmlAttr(bdf), Hex(f->class_code, 6), Hex(f->vendor, 4), Hex(f->device, 4),
          Hex(f->subsystem_vendor, 4), Hex(f->subsystem_device, 4));
      if (l.gts) n.attrs += fmt::format(" link_speed=\"{:.1f} GT/s PCIe\"", *l.gts);
      if (l.width) n.attrs += fmt::format(" link_width=\"{}\"", *l.width);
    }
  }
  if (tops.empty()) return skip("the measured PCI tree has no GPU");

  const std::string arch = NcclArch(t.arch);
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& [numa, roots] : tops) {
    std::string cpu = fmt::format("  <cpu numaid=\"{}\"", numa);
    for (const auto& [id, mask] : t.cpumaps) {
      if (id == numa) cpu += fmt::format(" affinity=\"{}\"", XmlAttr(mask));
    }
    if (!arch.empty()) cpu += fmt::format(" arch=\"{}\"", arch);
    if (arch == "x86_64" && !t.cpu_vendor.empty()) {
      cpu += fmt::format(" vendor=\"{}\"", XmlAttr(t.cpu_vendor));
    }
    lines.push_back({{"text", cpu + ">"}});
    for (const std::string& r : roots) Emit(nodes, r, 4, lines);
    lines.push_back({{"text", "  </cpu>"}});
  }
  plan->jobs.push_back({node.name, path, "nccl-topology.xml.mustache", {{"lines", lines}},
                        CommentStyle::kXml, "0644"});
  return true;
}

}  // namespace gpuforge::render
