#pragma once

// A node's PCI tree as the node itself measured it: for every GPU and NIC the chain of PCI
// functions sysfs puts above it (`readlink -f /sys/bus/pci/devices/<bdf>`), each function's
// link attributes, and each NUMA node's kernel cpumap. Plain data shared by the stage that
// fills it (facts, from the gather script) and the one that writes NCCL's topology file from
// it (render); it lives here because render precedes facts in the layering. Never built from
// the inventory: a tree nobody measured is not a tree.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuforge::model {

// One PCI function on some device's path: a root port, a switch port, or the device itself.
struct PciFunction {
  std::string bdf;  // "0000:d7:00.0", lower case
  std::uint32_t class_code = 0;  // 0x060400 bridge, 0x030200 3D controller, 0x020700 IB
  std::uint32_t vendor = 0;
  std::uint32_t device = 0;
  std::uint32_t subsystem_vendor = 0;
  std::uint32_t subsystem_device = 0;
  std::optional<double> link_speed_gts;  // current_link_speed
  std::optional<double> max_link_speed_gts;
  std::optional<int> link_width;  // current_link_width
  std::optional<int> max_link_width;
};

enum class PciEndpointKind { kGpu, kNic };

// A GPU or NIC and where sysfs puts it.
struct PciEndpoint {
  std::string bdf;
  PciEndpointKind kind = PciEndpointKind::kNic;
  std::string host_bridge;        // "pci0000:d6": the directory the path starts from
  std::vector<std::string> path;  // BDFs from the root port down to this device (last)
  std::optional<int> numa_node;   // nullopt for -1
  std::vector<std::string> rdma_devices;  // "mlx5_5"
};

struct PciTree {
  std::vector<PciFunction> functions;  // every function on any endpoint's path, by bdf
  std::vector<PciEndpoint> endpoints;  // by bdf
  std::vector<std::pair<int, std::string>> cpumaps;  // NUMA node -> its cpumap, as sysfs prints it
  std::string cpu_vendor;  // /proc/cpuinfo vendor_id: "GenuineIntel"; "" when not read
  std::string arch;        // uname -m: "x86_64"

  const PciFunction* Function(std::string_view bdf) const {
    for (const PciFunction& f : functions) {
      if (f.bdf == bdf) return &f;
    }
    return nullptr;
  }
  const PciEndpoint* Endpoint(std::string_view bdf) const {
    for (const PciEndpoint& e : endpoints) {
      if (e.bdf == bdf) return &e;
    }
    return nullptr;
  }
};

// The <pci> nodes NCCL makes for an endpoint, top (under its <cpu>) first, the endpoint last.
// NCCL walks the sysfs path upwards two directories at a time, so each switch appears once, as
// its upstream port, and root ports and downstream ports do not appear (NCCL
// src/graph/xml.cc, ncclTopoGetXmlFromSys: "Rewind two '/' and follow the upper PCI switch, or
// stop if we reach a CPU root complex").
inline std::vector<std::string> NcclPciChain(const PciEndpoint& e) {
  std::vector<std::string> up;
  if (e.path.empty()) return up;
  // path[i] is a BDF for every i; the host bridge sits at index -1.
  std::size_t i = e.path.size() - 1;
  up.push_back(e.path[i]);
  while (i >= 2) {
    i -= 2;
    up.push_back(e.path[i]);
  }
  return {up.rbegin(), up.rend()};
}

}  // namespace gpuforge::model
