#pragma once

// The gather script's pci-tree section: where sysfs puts each GPU and NIC (the chain of
// bridges above it, each with its link attributes) and each NUMA node's cpumap, the facts NCCL
// itself reads when it builds its topology (src/graph/xml.cc). Private to facts.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
#include "gpuforge/model/pci_tree.h"

namespace gpuforge::facts {

// The sh function gf_pcitree and its call, spliced into GatherScript(). Prints, per GPU (vendor
// 0x10de, class 0x03xxxx) and NIC (class 0x02xxxx):
//   path <readlink -f /sys/bus/pci/devices/BDF>
//   numa <bdf> <numa_node>
//   rdma <bdf> <infiniband device>
//   fn <bdf> <attribute> <value>   for the device and every BDF directory above it
// and once: "cpumap <node> <mask>", "cpu_vendor <vendor_id>", "arch <uname -m>".
std::string_view PciTreeScript();

// Parses that section. Hostile input (a path outside /sys/devices, a name that is not a bus id,
// a value with control characters, more than kMaxPciTreeEndpoints devices) is an error naming
// the line; the caller keeps the node's other facts.
Result<model::PciTree> ParsePciTree(std::string_view text);

inline constexpr std::size_t kMaxPciTreeEndpoints = 1024;
inline constexpr std::size_t kMaxPciTreeDepth = 32;

// "32.0 GT/s PCIe", "8 GT/s", "Unknown speed" (nullopt: link down or not PCIe). Shared with the
// pci section's parser.
Result<std::optional<double>> ParseLinkSpeed(std::string_view v);

// How far apart two endpoints are in NCCL's terms, from their measured paths: "PIX" (one
// switch between them), "PXB" (several switches, one root port), "PHB" (through the host
// bridge or CPU, same NUMA node), "SYS" (across NUMA nodes). nullopt when either is unknown.
std::optional<std::string> PciDistance(const model::PciTree& t, std::string_view a,
                                       std::string_view b);

// The tree in the facts JSON ("pci_tree"; docs/facts.md).
nlohmann::ordered_json PciTreeToJson(const model::PciTree& t);

// Rank of a distance for comparisons: PIX 0, PXB 1, PHB 2, SYS 3.
int DistanceRank(std::string_view d);

}  // namespace gpuforge::facts
