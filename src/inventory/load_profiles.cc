// The 'profiles' section: the hardware of a kind of node (GPUs, CPUs, memory, NVMe, NICs,
// power), which nodes refer to by name.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/names.h"
#include "gpuforge/base/text.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/inventory/schema.h"
#include "gpuforge/model/gpu_catalog.h"
#include "inventory/sections.h"

namespace gpuforge::inventory::internal {

using quantity::Dimension;

std::vector<model::GpuSpec> Loader::LoadGpus(const YAML::Node& n, std::string_view what) {
  std::vector<model::GpuSpec> out;
  std::vector<YAML::Node> items;
  if (n.IsSequence()) {
    for (const YAML::Node& i : n) items.push_back(i);
  } else {
    items.push_back(n);
  }
  const std::string gwhat = fmt::format("gpus of {}", what);
  for (const YAML::Node& g : items) {
    if (!r_.CheckMap(g, gwhat, schema::kGpu)) continue;
    model::GpuSpec spec;
    spec.where = r_.Pos(g);
    auto model_name = r_.Str(g, "model", gwhat, true);
    auto count = r_.Int(g, "count", gwhat, 0, kMaxGpusPerNode, true);
    if (!model_name || !count) continue;
    CheckWith(Get(g, "model"), names::CheckName, *model_name, "GPU model");
    spec.model = *model_name;
    spec.count = static_cast<int>(*count);
    const model::GpuModelInfo* info = model::FindGpuModel(*model_name);
    if (info != nullptr) {
      spec.generation = std::string(info->generation);
      spec.memory_bytes = info->memory_bytes;
      spec.tdp_w = info->tdp_w;
      spec.nvlink_bytes_per_s = info->nvlink_bytes_per_s;
      spec.form_factor = info->sxm ? model::FormFactor::kSxm : model::FormFactor::kPcie;
      spec.nvswitch = info->sxm && info->nvlink_bytes_per_s > 0 && spec.count >= 8;
    }
    auto mem = r_.Qty(g, "memory", gwhat, Dimension::kSize);
    auto tdp = r_.Qty(g, "tdp", gwhat, Dimension::kPower);
    if (info == nullptr && (!Has(g, "memory") || !Has(g, "tdp"))) {
      std::vector<std::string> known;
      for (const auto& m : model::GpuCatalog()) known.emplace_back(m.name);
      r_.Error(Get(g, "model"),
               fmt::format("GPU model '{}' is not in gpuforge's catalogue, so 'memory' and 'tdp' must be given{}",
                           *model_name, DidYouMean(*model_name, known)));
    }
    if (mem) spec.memory_bytes = *mem;
    if (tdp) spec.tdp_w = *tdp;
    if (auto ff = r_.Choice(g, "form_factor", gwhat, {"sxm", "pcie"})) {
      spec.form_factor = *ff == "sxm" ? model::FormFactor::kSxm : model::FormFactor::kPcie;
    }
    if (auto sw = r_.Bool(g, "nvswitch", gwhat)) spec.nvswitch = *sw;
    if (auto bw = r_.Qty(g, "nvlink_bandwidth", gwhat, Dimension::kBandwidth)) spec.nvlink_bytes_per_s = *bw;
    YAML::Node pci = Get(g, "pci");
    if (Has(g, "pci") && r_.CheckSeq(pci, fmt::format("'pci' in {}", gwhat))) {
      std::set<std::string> seen;
      for (const YAML::Node& p : pci) {
        if (auto s = r_.ScalarOf(p, "a GPU PCI bus id")) {
          CheckWith(p, names::CheckPciBusId, *s, "GPU PCI bus id");
          if (!seen.insert(*s).second) r_.Error(p, fmt::format("GPU PCI bus id '{}' is listed twice", *s));
        }
      }
      if (pci.size() != static_cast<std::size_t>(spec.count)) {
        r_.Error(pci, fmt::format("'pci' in {} lists {} for {} (count: {}); give one per GPU, in GPU index order", gwhat,
                                  text::Plural(pci.size(), "bus id"), text::Plural(spec.count, "GPU"), spec.count));
      }
      for (const YAML::Node& p : pci) spec.pci_bus_ids.push_back(p.IsScalar() ? p.Scalar() : "");
    }
    YAML::Node numa = Get(g, "numa");
    if (Has(g, "numa") && r_.CheckSeq(numa, fmt::format("'numa' in {}", gwhat))) {
      for (const YAML::Node& p : numa) {
        auto v = r_.IntOf(p, "a NUMA node", 0, kMaxNumaNode);
        spec.numa_nodes.push_back(v ? static_cast<int>(*v) : 0);
      }
      if (spec.numa_nodes.size() != static_cast<std::size_t>(spec.count)) {
        r_.Error(numa, fmt::format("'numa' in {} lists {} for {} (count: {}); give one per GPU, in GPU index order", gwhat,
                                   text::Plural(spec.numa_nodes.size(), "NUMA node"), text::Plural(spec.count, "GPU"), spec.count));
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<model::NicSpec> Loader::LoadNics(const YAML::Node& n, std::string_view what, bool* complete) {
  std::vector<model::NicSpec> out;
  if (!r_.CheckSeq(n, fmt::format("'nics' in {}", what))) {
    *complete = false;
    return out;
  }
  std::set<std::string> seen;
  const std::string nwhat = fmt::format("a NIC of {}", what);
  for (const YAML::Node& e : n) {
    if (!r_.CheckMap(e, nwhat, schema::kNic)) {
      *complete = false;
      continue;
    }
    YAML::Node name_node = Get(e, "name");
    if (!Has(e, "name")) {
      r_.Missing(e, "name", nwhat);
      *complete = false;
      continue;
    }
    // A NIC entry may name several devices ("mlx5_[0-7]"); per-device fields may then be
    // lists of the same length.
    auto devs = Expand(name_node, "NIC name", 64);
    if (!devs) {
      *complete = false;
      continue;
    }
    const std::size_t count = devs->size();
    auto per_device = [&](std::string_view key) -> std::vector<YAML::Node> {
      YAML::Node v = Get(e, key);
      std::vector<YAML::Node> vals;
      if (!v.IsDefined() || v.IsNull()) return vals;
      if (v.IsSequence()) {
        for (const YAML::Node& x : v) vals.push_back(x);
        if (vals.size() != count) {
          r_.Error(v, fmt::format("'{}' of NIC '{}' lists {} values for {} NICs; give one value for all, or one per NIC",
                                  key, name_node.Scalar(), vals.size(), count));
          vals.clear();
        }
      } else {
        vals.assign(count, v);
      }
      return vals;
    };
    std::vector<YAML::Node> numas = per_device("numa"), pcis = per_device("pci"), rails = per_device("rail"),
                            netdevs = per_device("netdev");
    model::NicSpec base;
    base.where = r_.Pos(e);
    if (auto kind = r_.Choice(e, "kind", nwhat, {"infiniband", "roce", "ethernet"}, true)) base.kind = NetKindOf(*kind);
    if (auto rate = r_.Qty(e, "rate", nwhat, Dimension::kBandwidth, true)) base.rate_bytes_per_s = *rate;
    if (auto port = r_.Int(e, "port", nwhat, 1, kMaxNicPort)) base.port = static_cast<int>(*port);
    if (auto net = r_.Str(e, "network", nwhat)) {
      if (cluster_.FindNetwork(*net) == nullptr) {
        r_.Error(Get(e, "network"), fmt::format("NIC '{}' of {} is on network '{}', which is not defined under 'networks'{}",
                                                name_node.Scalar(), what, *net, DidYouMean(*net, NetworkNames())));
      }
      base.network = *net;
    }
    for (std::size_t i = 0; i < count; ++i) {
      model::NicSpec nic = base;
      nic.name = (*devs)[i];
      CheckWith(name_node, names::CheckDeviceName, nic.name, "NIC name");
      if (!seen.insert(nic.name).second) {
        r_.Error(name_node, fmt::format("NIC '{}' appears twice in {}", nic.name, what));
      }
      if (!numas.empty()) {
        if (auto v = r_.IntOf(numas[i], "'numa' of a NIC", 0, kMaxNumaNode)) nic.numa_node = static_cast<int>(*v);
      }
      if (!pcis.empty()) {
        if (auto s = r_.ScalarOf(pcis[i], "'pci' of a NIC")) {
          CheckWith(pcis[i], names::CheckPciBusId, *s, "NIC PCI bus id");
          nic.pci_bus_id = *s;
        }
      }
      if (!rails.empty()) {
        if (auto v = r_.IntOf(rails[i], "'rail' of a NIC", 0, 1023)) nic.rail = static_cast<int>(*v);
      }
      if (!netdevs.empty()) {
        if (auto s = r_.ScalarOf(netdevs[i], "'netdev' of a NIC")) {
          CheckWith(netdevs[i], names::CheckDeviceName, *s, "NIC netdev");
          nic.netdev = *s;
        }
      }
      out.push_back(std::move(nic));
    }
  }
  return out;
}

std::optional<model::Profile> Loader::LoadProfile(const std::string& name, const YAML::Node& b) {
  std::string what = fmt::format("profile '{}'", name);
  if (!r_.CheckMap(b, what, schema::kProfile)) return std::nullopt;
  model::Profile p;
  p.name = name;
  p.where = r_.Pos(b);
  if (Has(b, "gpus")) p.gpus = LoadGpus(Get(b, "gpus"), what);
  YAML::Node cpu = Get(b, "cpu");
  const std::string cwhat = fmt::format("cpu of {}", what);
  if (Has(b, "cpu") && r_.CheckMap(cpu, cwhat, schema::kCpu)) {
    p.cpu.where = r_.Pos(cpu);
    if (auto m = r_.Str(cpu, "model", cwhat)) {
      if (auto bad = names::CheckCpuModel(*m)) r_.Error(Get(cpu, "model"), fmt::format("'model' in {}: {}", cwhat, *bad));
      p.cpu.model = *m;
    }
    if (auto v = r_.Int(cpu, "sockets", cwhat, 1, 16, true)) p.cpu.sockets = static_cast<int>(*v);
    if (auto v = r_.Int(cpu, "cores_per_socket", cwhat, 1, 1024, true)) p.cpu.cores_per_socket = static_cast<int>(*v);
    if (auto v = r_.Int(cpu, "threads_per_core", cwhat, 1, 8)) p.cpu.threads_per_core = static_cast<int>(*v);
  }
  if (auto m = r_.Qty(b, "memory", what, Dimension::kSize)) p.memory_bytes = *m;
  if (auto v = r_.Bool(b, "virtual", what)) p.virtual_machine = *v;  // #13
  YAML::Node nvme = Get(b, "nvme");
  const std::string nwhat = fmt::format("nvme of {}", what);
  if (Has(b, "nvme") && r_.CheckMap(nvme, nwhat, schema::kNvme)) {
    if (auto v = r_.Int(nvme, "count", nwhat, 0, kMaxDrivesPerNode, true)) p.nvme.count = static_cast<int>(*v);
    if (auto v = r_.Qty(nvme, "size", nwhat, Dimension::kSize)) p.nvme.size_bytes = *v;
    if (auto v = r_.Qty(nvme, "read_bandwidth", nwhat, Dimension::kBandwidth)) p.nvme.read_bytes_per_s = *v;
    if (auto v = r_.Qty(nvme, "write_bandwidth", nwhat, Dimension::kBandwidth)) p.nvme.write_bytes_per_s = *v;
  }
  if (Has(b, "nics")) {
    bool complete = true;
    p.nics = LoadNics(Get(b, "nics"), what, &complete);
    if (!complete) broken_nic_profiles_.insert(name);
  }
  // Non-GPU draw (CPUs, memory, NICs, fans, storage): guide 000, "Cooling and Power", has 8
  // H200s at 5.6 kW "plus CPUs, memory, networking, storage — call it 8kW per node", which is
  // 300 W per GPU; a node without GPUs still draws something.
  p.other_power_w = std::max(500.0, 300.0 * p.gpu_count());
  YAML::Node power = Get(b, "power");
  const std::string pwhat = fmt::format("power of {}", what);
  if (Has(b, "power") && r_.CheckMap(power, pwhat, schema::kPower)) {
    p.max_power_w = r_.Qty(power, "max", pwhat, Dimension::kPower);
    if (auto o = r_.Qty(power, "other", pwhat, Dimension::kPower)) p.other_power_w = *o;
  }
  return p;
}

bool Loader::LoadProfileEntry(const std::string& name, const YAML::Node& body, SourcePos where) {
  auto p = LoadProfile(name, body);
  if (!p) return false;
  p->where = std::move(where);
  std::string what = fmt::format("profile '{}'", name);
  profile_layers_[name] = Layer{LoadSsh(Get(body, "ssh"), what + " ssh"), LoadVars(Get(body, "vars"), what + " vars")};
  profile_index_[name] = cluster_.profiles.size();
  cluster_.profiles.push_back(std::move(*p));
  return true;
}

void Loader::LoadProfiles(const YAML::Node& n) {
  if (!r_.CheckOpenMap(n, "profiles")) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node body = it->second;
    if (!key.IsScalar()) continue;
    std::string name = key.Scalar();
    if (profile_nodes_.count(name)) continue;  // duplicate key: reported by CheckOpenMap
    CheckWith(key, names::CheckName, name, "profile name");
    profile_nodes_[name] = body;
    LoadProfileEntry(name, body, r_.Pos(key));
  }
}

}  // namespace gpuforge::inventory::internal
