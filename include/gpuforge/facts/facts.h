#pragma once

// What one node is, as its own commands report it: the `facts` stage's data. Filled by
// ParseGather() (gather.h) from the output of GatherScript(), compared with the inventory by
// FindDrift() (drift.h). Anything a node could not tell is std::nullopt or an empty list, and
// every section of the gather output keeps how it ended (ok, failed, tool absent), so "no
// nvidia-smi" reads as "no NVIDIA driver", never as zero GPUs measured.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/facts/fabric.h"
#include "gpuforge/model/pci_tree.h"

namespace gpuforge::facts {

// How one command of the gather script ended.
enum class Outcome {
  kOk,      // ran, exit status 0, output parsed
  kFailed,  // ran, exit status != 0; its output was not parsed
  kAbsent,  // the tool or file is not there (command -v / test -e said so)
  kUnparsed,  // ran, exit status 0, but its output could not be read; Section::error says why
  kTooLarge,  // its output was over the section's cap (SectionSpec::max_bytes); not read
};
const char* ToString(Outcome v);  // "ok" | "failed" | "absent" | "unparsed" | "too_large"

// One section of the gather output.
struct Section {
  std::string name;     // "lscpu", "nvidia-smi-query", ...
  std::string command;  // what ran, for messages: "lscpu", "nvidia-smi topo -m"
  Outcome outcome = Outcome::kOk;
  int exit_code = 0;       // meaningful for kOk and kFailed
  // kFailed: the first line of its output, sanitised, for the report. kUnparsed, kTooLarge:
  // why its output was not read ("line 3: expected 19 fields, got 3").
  std::string first_line;
};

// /etc/os-release.
struct OsRelease {
  std::string id;          // "ubuntu"
  std::string version_id;  // "24.04"
  std::string pretty_name;
};

// lscpu. Counts are nullopt where lscpu prints "-" (some ARM systems) or leaves a line out.
struct CpuInfo {
  std::string model;        // "Intel(R) Xeon(R) Processor"; "" when not printed
  std::optional<int> cpus;  // "CPU(s)"
  std::string online_cpus;  // "0-15"
  std::optional<int> sockets;
  std::optional<int> cores_per_socket;
  std::optional<int> threads_per_core;
  std::optional<int> numa_nodes;
};

// /sys/devices/system/node/node<N>.
struct NumaNode {
  int id = 0;
  std::string cpulist;  // "0-47,96-143"
  std::optional<std::uint64_t> memory_bytes;
};

enum class PciKind { kGpu, kNic };

// A GPU (vendor 0x10de, class 0x03xxxx) or NIC (class 0x02xxxx) from /sys/bus/pci/devices.
struct PciDevice {
  std::string bdf;  // "0000:17:00.0", lower case, 4-digit domain
  PciKind kind = PciKind::kNic;
  std::uint32_t vendor = 0;                  // 0x10de
  std::uint32_t device = 0;                  // 0x2335
  std::uint32_t class_code = 0;              // 0x030200
  std::optional<int> numa_node;              // nullopt for -1 (no affinity) or not readable
  std::optional<double> link_speed_gts;      // current_link_speed, GT/s
  std::optional<double> max_link_speed_gts;  // max_link_speed
  std::optional<int> link_width;             // current_link_width (lanes)
  std::optional<int> max_link_width;
  std::vector<std::string> netdevs;       // device/net/*: "ens1f0np0"
  std::vector<std::string> rdma_devices;  // device/infiniband/*: "mlx5_0"
};

// PCIe generation for a transfer rate in GT/s (2.5 -> 1 ... 64 -> 6); nullopt if unknown.
std::optional<int> PcieGeneration(double gts);

// /proc/driver/nvidia/version.
struct DriverInfo {
  std::string version;              // "580.159.04"
  bool open_kernel_module = false;  // "NVIDIA UNIX Open Kernel Module"
};

// Details of one GPU from `nvidia-smi -q -x`, where the CSV query has no field for them.
struct GpuDetail {
  std::string pci_bus_id;  // normalised like PciDevice::bdf
  std::string product_name;
  std::string architecture;       // "Hopper"
  std::string performance_state;  // "P0"; the PCIe link is lowered in idle states
  std::optional<bool> mig_enabled;
  std::optional<int> module_id;  // SXM module slot
  // The N of /dev/nvidiaN (<minor_number>, NVML nvmlDeviceGetMinorNumber). The driver assigns
  // it at probe time; it need not follow PCI bus order, so gres.conf takes it from here
  // (render/slurm.cc), never from the GPU's position.
  std::optional<int> minor_number;
  std::string inforom_image;     // "G520.0282.02.02"
  std::string gsp_firmware;
  std::optional<bool> remapped_rows_pending;
  std::optional<bool> remapped_rows_failure;
  std::optional<std::uint64_t> sram_uncorrectable_aggregate;  // parity + secded
  std::optional<std::uint64_t> dram_uncorrectable_aggregate;
  std::optional<std::uint64_t> sram_correctable_aggregate;
  std::optional<std::uint64_t> dram_correctable_aggregate;
  std::vector<std::string> active_clock_event_reasons;  // "hw_slowdown", "gpu_idle", ...
  std::string fabric_state;  // NVLink fabric (NVSwitch systems): "Completed"; "" when N/A
  std::optional<double> max_power_limit_w;
};

// A field nvidia-smi answered with an error instead of a value ("[GPU requires reset]",
// "[Unknown Error]", "[GPU is lost]"): a failure of that GPU, not an absent value.
struct GpuFieldError {
  std::string field;  // the query field: "memory.total"
  std::string cell;   // as printed, sanitised: "[GPU requires reset]"
};

// One GPU from `nvidia-smi --query-gpu=... --format=csv` (kQueryGpuFields in gather.h), with
// its -q -x details when that section ran. Fields nvidia-smi prints as N/A or
// [Not Supported] are nullopt.
struct Gpu {
  int index = 0;
  std::string name;  // "NVIDIA H200"; display only (""when the cell was an error)
  // PCI device id (0x2335 for an H200 SXM): pci.device_id of the query, else the sysfs device
  // at the same bus id. What identifies the SKU (model::IdentifyGpu), with the memory size.
  std::optional<std::uint16_t> pci_device_id;
  std::string uuid;
  std::string pci_bus_id;  // normalised like PciDevice::bdf
  std::string driver_version;
  std::string vbios_version;
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<double> power_limit_w;
  std::optional<double> power_draw_w;
  std::optional<int> temperature_c;
  std::optional<std::uint64_t> clock_event_reasons;  // bit mask, clocks_event_reasons.active
  std::optional<bool> ecc_enabled;
  std::optional<std::uint64_t> ecc_uncorrected_volatile;
  std::optional<int> pcie_gen;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width;
  std::optional<int> pcie_width_max;
  std::optional<int> max_sm_clock_mhz;
  std::optional<bool> persistence_mode;
  std::optional<GpuDetail> detail;
  std::vector<GpuFieldError> errors;  // in query field order
};

// `nvidia-smi -q -x`: the log's header and one GpuDetail per GPU.
struct SmiLog {
  std::string driver_version;
  std::string cuda_version;  // highest CUDA the driver supports, not the toolkit
  std::vector<GpuDetail> gpus;
};

// One row of `nvidia-smi topo -m`.
struct TopoRow {
  std::string device;              // "GPU0", "NIC3"
  std::vector<std::string> links;  // one per TopoMatrix::devices: "X", "NV18", "PIX", "SYS"
  std::string cpu_affinity;        // "0-55,112-167"; "" for NIC rows
  std::string numa_affinity;       // "0"; "" for NIC rows
  std::string gpu_numa_id;         // "N/A" on most systems; "" when the column is absent
};

// `nvidia-smi topo -m`.
struct TopoMatrix {
  std::vector<std::string> devices;  // column order
  std::vector<TopoRow> rows;
  std::vector<std::pair<std::string, std::string>> nic_legend;  // {"NIC0", "mlx5_0"}

  // The cell for a pair of devices; "" when either is not in the matrix.
  std::string Link(std::string_view from, std::string_view to) const;
};

// Number of bonded NVLinks in a topo cell: "NV18" -> 18; nullopt for anything else.
std::optional<int> NvLinkCount(std::string_view cell);

// One port of an RDMA device, from /sys/class/infiniband/<dev>/ports/<n>.
struct IbPort {
  int port = 1;
  std::string state;                // "ACTIVE", "DOWN", "INIT", "ARMED" (text after "4: ")
  std::string phys_state;           // "LinkUp", "Polling", "Disabled" (text after "5: ")
  std::string rate;                 // as read: "400 Gb/sec (4X NDR)"
  std::optional<double> rate_gbps;  // 400
  std::optional<int> width;         // lanes, from "(4X NDR)"; nullopt when not printed
  std::string speed;                // "NDR", "HDR"; "" when not printed
  std::string link_layer;           // "InfiniBand" | "Ethernet"
  std::optional<int> lid;           // ports/N/lid ("0x6"); nullopt when not read
  // The port GUID, the low 64 bits of GID 0 (ports/N/gids/0, "fe80:...:0002:c903:0029:3e1f"):
  // what iblinkinfo prints for an HCA's port. "0x" + 16 hex; "" when not read.
  std::string port_guid;
};

struct IbDevice {
  std::string name;  // "mlx5_0"
  std::string fw_version;
  std::string board_id;
  std::string node_guid;  // "0x0002c90300293e1e" (sysfs prints "0002:c903:0029:3e1e"); "" unknown
  std::vector<std::string> netdevs;  // device/net/*
  std::vector<IbPort> ports;         // by port number
  const IbPort* FindPort(int port) const;
};

// One NVMe namespace from /sys/block/nvme*n* (#33: init counts the drives).
struct NvmeDrive {
  std::string name;         // "nvme0n1"
  std::uint64_t bytes = 0;  // size (512-byte sectors) x 512
  std::string model;        // device/model, trimmed; "" when not readable
};

// Installed software, each from the first source that had it (see docs/facts.md).
struct Versions {
  std::optional<std::string> cuda;  // toolkit: nvcc, else /usr/local/cuda/version.{json,txt}
  std::optional<std::string> nccl;  // "2.21.5" (package or library file name)
  std::optional<std::string> rdma_core;
  std::optional<std::string> ofed;   // ofed_info -s: "MLNX_OFED_LINUX-23.10-1.1.9.0"
  std::optional<std::string> slurm;  // slurmd -V: "23.11.4"
};

enum class ServiceState { kActive, kInactive, kFailed, kActivating, kAbsent, kUnknown };
const char* ToString(ServiceState v);  // "active", "inactive", ..., "absent", "unknown"

struct Service {
  std::string name;  // "nvidia-persistenced"
  ServiceState state = ServiceState::kUnknown;
};

// `ulimit -l` of the login shell.
struct Memlock {
  bool unlimited = false;
  std::uint64_t bytes = 0;  // when not unlimited
};

// Everything gathered from one node.
struct NodeFacts {
  std::string node;
  std::vector<Section> sections;  // in output order
  // How sections ran when it matters, "<section>: <what>": "nvidia-smi-query: nvidia-smi
  // rejected clocks_event_reasons.active (a driver before R535); asked again with ...".
  std::vector<std::string> notes;

  std::optional<OsRelease> os;
  std::optional<std::string> kernel;  // uname -r
  std::optional<CpuInfo> cpu;
  std::optional<std::uint64_t> memory_bytes;  // MemTotal
  std::vector<NumaNode> numa;
  std::vector<PciDevice> pci;        // GPUs and NICs, by bus id
  std::optional<DriverInfo> driver;  // nullopt: /proc/driver/nvidia/version absent
  std::vector<Gpu> gpus;             // by index; empty when nvidia-smi is absent or failed
  std::optional<std::string> driver_cuda_version;  // from -q -x
  std::optional<TopoMatrix> topology;
  std::vector<IbDevice> ib;  // by name; empty when /sys/class/infiniband is absent
  // LLDP neighbours from `lldpctl -f json0` (#31); nullopt when lldpctl is absent or failed
  // (the lldp section says why).
  std::optional<LldpSeen> lldp;
  // Each interface's speed in Mb/s from /sys/class/net/IF/speed, where the kernel knows it
  // (a link that is down reads -1 there and is left out).
  std::map<std::string, long long> net_speed_mbps;
  std::vector<NvmeDrive> nvme;  // by name; empty when there are none or /sys/block is absent
  Versions versions;
  std::optional<std::vector<std::string>> modules;  // loaded kernel modules, sorted
  std::vector<Service> services;
  std::optional<Memlock> memlock;
  // Where sysfs puts each GPU and NIC (pci-tree section); nullopt when absent, failed or
  // refused. A refused section leaves the reason here and the node's other facts intact.
  std::optional<model::PciTree> pci_tree;
  std::string pci_tree_refused;

  const Section* FindSection(std::string_view name) const;
  // nvidia-smi ran and listed GPUs (the NVIDIA driver is loaded and answers).
  bool HasNvidiaDriver() const;
  // Module loaded; '-' and '_' are the same to the kernel. False when modules are unknown.
  bool HasModule(std::string_view name) const;
  const Service* FindService(std::string_view name) const;
  const IbDevice* FindIbDevice(std::string_view name) const;
  // The NVIDIA GPUs on the PCI bus, whether or not a driver answers.
  int PciGpuCount() const;
  // The driver version: /proc/driver/nvidia/version, else what nvidia-smi reported.
  std::optional<std::string> DriverVersion() const;
};

// "00000000:17:00.0" (nvidia-smi) or "0000:17:00.0" (sysfs) -> "0000:17:00.0"; nullopt when
// it is not a bus id.
std::optional<std::string> NormalizeBusId(std::string_view id);

}  // namespace gpuforge::facts
