#pragma once

// Pure parsers, one per command output of the gather script. Input is hostile: a node can send
// anything. Each parser takes the command's stdout as text and returns the typed value or an
// Error whose message says where and what ("line 3: expected 19 fields, got 4"); the caller
// (ParseGather) prefixes the node and the command. Nothing here throws, reads files or aborts
// on bad input. Inputs over kMaxSectionBytes are refused.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/facts/facts.h"

namespace gpuforge::facts {

inline constexpr std::size_t kMaxSectionBytes = 16u << 20;  // 16 MiB: 8-GPU -q -x is ~250 KiB

// cat /etc/os-release
Result<OsRelease> ParseOsRelease(std::string_view text);

// uname -r
Result<std::string> ParseUname(std::string_view text);

// lscpu (the default "Key: value" listing, LC_ALL=C)
Result<CpuInfo> ParseLscpu(std::string_view text);

// cat /proc/meminfo -> MemTotal in bytes
Result<std::uint64_t> ParseMeminfo(std::string_view text);

// The gather script's NUMA lines: "node0 cpulist 0-47" and "node0 meminfo Node 0 MemTotal:
// 65842852 kB".
Result<std::vector<NumaNode>> ParseNumaSysfs(std::string_view text);

// The gather script's PCI lines, "<bdf> <attribute> <value>": class, vendor, device, numa_node,
// current_link_speed, max_link_speed, current_link_width, max_link_width, net, infiniband.
// Devices that are neither NVIDIA GPUs nor NICs are left out.
Result<std::vector<PciDevice>> ParsePciSysfs(std::string_view text);

// cat /proc/driver/nvidia/version
Result<DriverInfo> ParseDriverVersion(std::string_view text);

// nvidia-smi --query-gpu=<fields> --format=csv. Columns are found by header name (units in
// brackets dropped, clocks_throttle_reasons.* read as clocks_event_reasons.*); index, name and
// pci.bus_id are required, the rest optional.
Result<std::vector<Gpu>> ParseQueryGpuCsv(std::string_view text);

// nvidia-smi -q -x
Result<SmiLog> ParseSmiXml(std::string_view text);

// nvidia-smi topo -m (ANSI escapes allowed anywhere)
Result<TopoMatrix> ParseTopo(std::string_view text);

// The gather script's InfiniBand lines, "<dev> <port|-> <attribute> <value>": per device fw_ver,
// board_id, net; per port state, phys_state, rate, link_layer.
Result<std::vector<IbDevice>> ParseInfinibandSysfs(std::string_view text);

// The gather script's version lines, "<source> <text>": nvcc, cuda_json, cuda_txt, nccl_dpkg,
// nccl_rpm, nccl_lib, rdma_dpkg, rdma_rpm, ofed, slurmd. Unknown sources are ignored.
Result<Versions> ParseVersions(std::string_view text);

// cat /proc/modules -> module names, sorted
Result<std::vector<std::string>> ParseModules(std::string_view text);

// The gather script's service lines, "<unit> <LoadState> <systemctl is-active output>".
Result<std::vector<Service>> ParseServices(std::string_view text);

// ulimit -l: "unlimited" or a count of KiB.
Result<Memlock> ParseMemlock(std::string_view text);

// The gather script's net-speed lines, "<interface> <Mb/s>"; -1 (the kernel's "unknown", a
// link that is down) and 0 are left out.
Result<std::map<std::string, long long>> ParseNetSpeeds(std::string_view text);

// The gather script's nvme lines, "<namespace> <512-byte sectors> [<model>]"; namespaces of
// size 0 (no media, or detached) are left out.
Result<std::vector<NvmeDrive>> ParseNvme(std::string_view text);

}  // namespace gpuforge::facts
