// Monitoring, for every cluster (guide 000: "Prometheus + Grafana + DCGM exporter"; guide 004,
// "Monitoring: The Unsung Hero"): Prometheus scrape targets for the DCGM exporter and the node
// exporter of every node, alert rules, the DCGM exporter field list those rules read, and on
// Slurm GPU nodes the prolog/epilog pair that tells the exporter which job holds which GPU.
// docs/render.md says where every value comes from.

#include "gpuforge/render/monitoring.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/driver_stack.h"
#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/model/xid.h"
#include "gpuforge/model/slurm_roles.h"
#include "render/families.h"
#include "render/quote.h"

namespace gpuforge::render {

namespace {

constexpr int kDcgmExporterPort = 9400;  // dcgm-exporter's default listen port
constexpr int kNodeExporterPort = 9100;  // node_exporter's default listen port
constexpr std::string_view kDcgmJob = "dcgm-exporter";

// A field for the exporter's counters file: its name is the metric name the rules use.
struct DcgmField {
  std::string_view name;
  std::string_view type;  // a Prometheus type the exporter knows, or "label"
  std::string_view help;  // no commas or quotes: the exporter reads the file with Go's encoding/csv
};

// dcgm-exporter 4.5.3-4.8.2's etc/default-counters.csv, whose uncommented lines are also its
// profiling list etc/dcp-metrics-included.csv (tests/data/dcgm-exporter/), in its order; then
// what the rules read that it leaves commented out. The exporter's own counter
// DCGM_EXP_XID_ERRORS_COUNT is not a DCGM field: its ExtractCounters
// (internal/pkg/counters/counter_config.go) falls back to IdentifyMetricType
// (exporter_counters.go) for it, and xid_collector.go publishes it with an `xid` label,
// counting each Xid over --xid-count-window-size (5 minutes by default).
constexpr std::array kDcgmFields = {
    DcgmField{"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."},
    DcgmField{"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."},
    DcgmField{"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."},
    DcgmField{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."},
    DcgmField{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."},
    DcgmField{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."},
    DcgmField{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."},
    DcgmField{"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."},
    DcgmField{"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."},
    DcgmField{"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."},
    DcgmField{"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."},
    DcgmField{"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."},
    DcgmField{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."},
    DcgmField{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."},
    DcgmField{"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."},
    DcgmField{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."},
    DcgmField{"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"},
    DcgmField{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"},
    DcgmField{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"},
    DcgmField{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"},
    DcgmField{"DCGM_FI_DRIVER_VERSION", "label", "Driver Version"},
    DcgmField{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."},
    DcgmField{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."},
    DcgmField{"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
              "Ratio of cycles the device memory interface is active sending or receiving data."},
    DcgmField{"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
              "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - "
              "in bytes per second."},
    DcgmField{"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
              "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in "
              "bytes per second."},
    // Read by the rules below.
    DcgmField{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (NVML bitmask)."},
    DcgmField{"DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether a row remap is pending (a GPU reset applies it)."},
    DcgmField{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."},
    DcgmField{"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."},
    DcgmField{"DCGM_EXP_XID_ERRORS_COUNT", "gauge", "Count of each XID within the exporter's xid-count window."},
};

// NVML's clock event reason bits (nvml.h, nvmlClocksEventReason*; the throttle-reason names
// are their old aliases). PromQL has no bitwise and, so a bit is tested as
// floor(x / bit) % 2 == 1.
constexpr int kHwSlowdown = 0x8;
constexpr int kSwThermalSlowdown = 0x20;
constexpr int kHwThermalSlowdown = 0x40;
constexpr int kHwPowerBrakeSlowdown = 0x80;

// Hardware Xids: model::kHardwareXids (model/xid.h), the list the GPU health probe fails on.

// node_exporter's infiniband collector (collector/infiniband_linux.go): state_id 4 is ACTIVE.
constexpr int kIbStateActive = 4;

std::string AddressOf(const model::Node& n) { return n.address.empty() ? n.name : n.address; }

std::string HostPort(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

// The GPU the node's DCGM exporter reports on: the profile's first NVIDIA (or unknown-vendor)
// GPU kind; nullptr when there is none.
const model::GpuSpec* DcgmGpu(const model::Profile& p) {
  for (const model::GpuSpec& g : p.gpus) {
    if (model::IsNvidiaGpu(g)) return &g;
  }
  return nullptr;
}

// How many GPUs the node's DCGM exporter should report: every NVIDIA (or unknown-vendor) GPU.
int DcgmGpuCount(const model::Profile& p) {
  int n = 0;
  for (const model::GpuSpec& g : p.gpus) {
    if (model::IsNvidiaGpu(g)) n += g.count;
  }
  return n;
}

// A PromQL double-quoted string literal's contents.
std::string PromString(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"') out += '\\';
    out += ch;
  }
  return out;
}

// A regular expression (RE2) that matches exactly `s`.
std::string RegexLiteral(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (std::string_view(R"(\.^$|?*+()[]{})").find(ch) != std::string_view::npos) out += '\\';
    out += ch;
  }
  return out;
}

// A threshold: its default, unless validation.thresholds sets "monitoring.<alert>.<param>".
struct Threshold {
  double value;
  std::string why;
};

Threshold Lookup(const model::Cluster& c, const std::string& key, double def, std::string why) {
  auto it = c.validation.thresholds.values.find(key);
  if (it != c.validation.thresholds.values.end()) return {it->second, fmt::format("inventory validation.thresholds {}", key)};
  return {def, std::move(why)};
}

struct Alert {
  std::string id;  // stable snake_case code, also the `code` label
  std::string name;
  std::string expr;
  std::string for_;  // "" = fire at once
  std::string severity;
  std::string summary;
  std::string description;
  std::string source;
};

nlohmann::json ToJson(const Alert& a) {
  return {{"alert", YamlQuote(a.name)},
          {"expr", YamlQuote(a.expr)},
          {"has_for", !a.for_.empty()},
          {"for", YamlQuote(a.for_)},
          {"severity", YamlQuote(a.severity)},
          {"code", YamlQuote(a.id)},
          {"summary", YamlQuote(a.summary)},
          {"description", YamlQuote(a.description)},
          {"source", YamlQuote(a.source)}};
}

std::string Bit(int bit) { return fmt::format("floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / {}) % 2 == 1", bit); }

constexpr std::string_view kMonitoringSection = "guide 004, \"Monitoring: The Unsung Hero\"";
constexpr std::string_view kCrashSection = "guide 004, \"Why Your Cluster Will Crash (and How to Prevent It)\"";
constexpr std::string_view kFailureModes = "guide 000, \"Common Failure Modes I've Seen\"";
constexpr std::string_view kWhere = "GPU {{ $labels.gpu }} on {{ $labels.node }}";

// The label the exporter puts on the metrics of a GPU a job holds, by scheduler; "" = none.
struct JobLabel {
  std::string_view label;
  std::string_view source;
};
JobLabel JobLabelOf(model::SchedulerKind kind) {
  switch (kind) {
    case model::SchedulerKind::kSlurm:
      // hpcMapper.Process (internal/pkg/transformation/hpc.go, l. 94-110 at 1f7abdb) copies each
      // metric of GPU N once per line of <mapping dir>/N with hpc_job=<line> (const.go).
      return {"hpc_job",
              "dcgm-exporter's HPC job mapping (internal/pkg/transformation/hpc.go: hpc_job label from "
              "--hpc-job-mapping-dir), written by the rendered Slurm prolog"};
    case model::SchedulerKind::kKubernetes:
      // The exporter's pod mapper (internal/pkg/transformation/kubernetes.go) labels a GPU
      // with the pod the kubelet's pod-resources API assigned it to.
      return {"pod",
              "dcgm-exporter's Kubernetes mapping (internal/pkg/transformation/kubernetes.go: pod label from the "
              "kubelet pod-resources API)"};
    case model::SchedulerKind::kNone: break;
  }
  return {"", ""};
}

std::vector<Alert> GpuAlerts(const model::Cluster& c, const std::map<int, std::vector<std::string>>& by_count,
                             std::vector<std::string>* notes) {
  std::vector<Alert> out;
  out.push_back({"dcgm_exporter_down", "DcgmExporterDown", fmt::format("up{{job=\"{}\"}} == 0", kDcgmJob), "5m",
                 "critical", "DCGM exporter on {{ $labels.node }} unreachable for 5 minutes",
                 "Prometheus cannot scrape {{ $labels.instance }}: none of the GPU rules can fire for this node.",
                 fmt::format("{}: \"The DCGM exporter for Prometheus gives you all of these\"; without it no GPU rule "
                             "sees the node",
                             kMonitoringSection)});

  for (const auto& [count, models] : by_count) {
    std::string sel = fmt::format("{{job=\"{}\", gpu_count=\"{}\"}}", kDcgmJob, count);
    out.push_back(
        {"gpu_count_low", "GpuCountLow",
         fmt::format("(count by (node) (group by (node, gpu) (DCGM_FI_DEV_GPU_UTIL{0})) < {1}) or ((max by (node) "
                     "(up{0}) == 1) * 0 unless on(node) count by (node) (DCGM_FI_DEV_GPU_UTIL{0}))",
                     sel, count),
         "5m", "critical", fmt::format("{{{{ $labels.node }}}} reports {{{{ $value }}}} of its {} GPUs", count),
         "DCGM sees fewer GPUs than the inventory gives the node: a GPU fell off the bus (Xid 79) or was not "
         "enumerated at boot. Jobs that ask for every GPU of the node cannot start there.",
         fmt::format("{}: \"NCCL timeout during training: Usually means a GPU crashed\"; the count is the inventory's "
                     "(gpu_count target label, {} {})",
                     kFailureModes, models.size() == 1 ? "profile" : "profiles", fmt::join(models, ", "))});
  }

  JobLabel job = JobLabelOf(c.software.scheduler.kind);
  Threshold util = Lookup(c, "monitoring.gpu_utilization_low.percent", 90, "guide 004");
  if (job.label.empty()) {
    notes->push_back("No GpuUtilizationLow rule: without a scheduler nothing tells the exporter which GPUs a job "
                     "holds, and an idle GPU is not a problem.");
  } else {
    out.push_back(
        {"gpu_utilization_low", "GpuUtilizationLow",
         fmt::format("DCGM_FI_DEV_GPU_UTIL{{{}!=\"\"}} < {}", job.label, util.value), "15m", "warning",
         fmt::format("{} below {}% utilisation for 15 minutes in job {{{{ $labels.{} }}}}", kWhere, util.value,
                     job.label),
         c.software.scheduler.kind == model::SchedulerKind::kKubernetes
             ? "Utilisation is {{ $value }}% on a GPU a pod holds: data loading, the network or a straggler holds it "
               "back. GPUs no pod holds carry no pod label and never fire this. It depends on the exporter's pod "
               "mapping: dcgm-exporter started with -k (DCGM_EXPORTER_KUBERNETES=true) and the kubelet's "
               "/var/lib/kubelet/pod-resources socket mounted; without both no metric has a pod label and this never "
               "fires."
             : "Utilisation is {{ $value }}% on a GPU a job holds: data loading, the network or a straggler holds it "
               "back. GPUs no job holds carry no job label and never fire this.",
         fmt::format("{}: GPU utilization, \"if it's below 90%, something's bottlenecked\" (threshold: {}; 15 minutes "
                     "sustained: gpuforge); held GPUs only, through {}",
                     kMonitoringSection, util.why, job.source)});
  }

  out.push_back({"gpu_hw_slowdown", "GpuHardwareSlowdown",
                 fmt::format("({}) or ({}) or ({})", Bit(kHwSlowdown), Bit(kHwThermalSlowdown), Bit(kHwPowerBrakeSlowdown)),
                 "1m", "critical", fmt::format("{} in hardware slowdown (thermal or power brake)", kWhere),
                 "DCGM_FI_DEV_CLOCKS_EVENT_REASONS has HW_SLOWDOWN (0x8), HW_THERMAL_SLOWDOWN (0x40) or "
                 "HW_POWER_BRAKE_SLOWDOWN (0x80) set: check inlet temperature, airflow and power feeds.",
                 fmt::format("{}: thermal throttling and power distribution; bits from NVML nvml.h "
                             "nvmlClocksEventReasonHwSlowdown/HwThermalSlowdown/HwPowerBrakeSlowdown",
                             kCrashSection)});
  out.push_back({"gpu_sw_thermal_slowdown", "GpuThermalSlowdown", Bit(kSwThermalSlowdown), "5m", "warning",
                 fmt::format("{} slowed by the driver for temperature", kWhere),
                 "DCGM_FI_DEV_CLOCKS_EVENT_REASONS has SW_THERMAL_SLOWDOWN (0x20) set: the GPU is above its "
                 "maximum operating temperature.",
                 fmt::format("{}: thermal throttling; bit from NVML nvml.h nvmlClocksEventReasonSwThermalSlowdown",
                             kCrashSection)});

  out.push_back({"gpu_row_remap_failed", "GpuRowRemapFailed", "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", "", "critical",
                 fmt::format("{}: row remapping failed", kWhere),
                 "The GPU ran out of spare memory rows for an uncorrectable error: NVIDIA's memory error "
                 "management says to replace the GPU (Xid 64).",
                 fmt::format("{}: \"track health of the system\"; NVIDIA GPU Memory Error Management, Row Remapping "
                             "(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt)",
                             kMonitoringSection)});
  out.push_back({"gpu_row_remap_pending", "GpuRowRemapPending", "DCGM_FI_DEV_ROW_REMAP_PENDING > 0", "15m", "warning",
                 fmt::format("{}: a row remap waits for a GPU reset", kWhere),
                 "A memory row was remapped after an error; the remap takes effect at the next GPU reset. Drain "
                 "the node and reset the GPU.",
                 fmt::format("{}: \"track health of the system\"; NVIDIA GPU Memory Error Management, Row Remapping "
                             "(docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt)",
                             kMonitoringSection)});
  return out;
}

// NCCL publishes no metric; these are the hardware counters its failures show up in.
std::vector<Alert> InterconnectAlerts(bool nvidia, bool nvlink, bool rdma) {
  const std::string source = fmt::format(
      "{}: \"NCCL errors - silently increasing indicates a networking issue\"; NCCL exports no metric, so {}", kMonitoringSection,
      "the GPU, NVLink, PCIe and RDMA port error counters NCCL failures show up in stand in for it");
  std::vector<Alert> out;
  if (nvidia) {
    std::string codes;
    for (int x : model::kHardwareXids) codes += (codes.empty() ? "" : "|") + std::to_string(x);
    out.push_back({"gpu_xid_hardware", "GpuXidHardware",
                   fmt::format("max_over_time(DCGM_EXP_XID_ERRORS_COUNT{{xid=~\"{}\"}}[10m]) > 0", codes), "",
                   "critical", fmt::format("{} reported hardware Xid {{{{ $labels.xid }}}}", kWhere),
                   "The driver logged a hardware Xid (79 fallen off the bus, 48 double-bit ECC, 94/95 "
                   "contained/uncontained ECC, 74 NVLink, 119/120 GSP): drain the node. Application Xids (13, 31, "
                   "43, 45) are a program's fault and do not fire this.",
                   fmt::format("{}; {}: \"Usually means a GPU crashed\"; hardware Xids from NVIDIA's Xid catalog "
                               "(docs.nvidia.com/deploy/xid-errors), counted per Xid by dcgm-exporter "
                               "(internal/pkg/collector/xid_collector.go)",
                               source, kFailureModes)});
  }
  if (nvidia && nvlink) {
    out.push_back({"nvlink_crc_errors", "NvlinkCrcErrorsRising",
                   "increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[10m]) > 0 or "
                   "increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL[10m]) > 0",
                   "", "warning", fmt::format("{}: NVLink CRC errors rising", kWhere),
                   "NVLink CRC error counters rose in the last 10 minutes; collectives inside the node slow down "
                   "with replays.",
                   source});
  }
  if (nvidia) {
    out.push_back({"pcie_replay_errors", "PcieReplaysRising", "increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[10m]) > 0", "",
                   "warning", fmt::format("{}: PCIe replays rising", kWhere),
                   "The GPU's PCIe replay counter rose in the last 10 minutes: a marginal link, riser or slot.", source});
  }
  if (rdma) {
    out.push_back({"rdma_port_errors", "RdmaPortErrorsRising",
                   "increase(node_infiniband_port_errors_received_total[10m]) > 0 or "
                   "increase(node_infiniband_link_downed_total[10m]) > 0",
                   "", "warning", "RDMA port {{ $labels.device }}:{{ $labels.port }} on {{ $labels.node }}: errors rising",
                   "Receive errors or link-down events on an InfiniBand/RoCE port in the last 10 minutes (node "
                   "exporter's infiniband collector): NCCL over this port retries or times out.",
                   source});
  }
  return out;
}

// Port state and rate, per profile: the inventory names each RDMA port, its rate and the
// network it is cabled to, so a port it does not name or attaches to no network (a spare, an
// unused second port) never fires.
std::vector<Alert> RdmaPortAlerts(const std::map<std::string, const model::Profile*>& profiles) {
  const std::string source = fmt::format(
      "{}: \"InfiniBand link is up but at 2x instead of 4x. Bandwidth halved\"; node_exporter "
      "collector/infiniband_linux.go (state_id 4 = active, rate_bytes_per_second)",
      kFailureModes);
  std::vector<Alert> out;
  for (const auto& [name, p] : profiles) {
    // (port, rate) -> devices; a port's state does not depend on its rate.
    std::map<std::pair<int, double>, std::vector<std::string>> groups;
    std::map<int, std::vector<std::string>> by_port;
    for (const model::NicSpec& nic : p->nics) {
      if (nic.kind == model::NetKind::kEthernet || nic.network.empty()) continue;
      std::string dev = RegexLiteral(nic.name);
      by_port[nic.port].push_back(dev);
      if (nic.rate_bytes_per_s > 0) groups[{nic.port, nic.rate_bytes_per_s}].push_back(dev);
    }
    auto selector = [&](int port, const std::vector<std::string>& devs) {
      std::string alt;
      for (const std::string& d : devs) alt += (alt.empty() ? "" : "|") + d;
      return fmt::format("{{profile=\"{}\", device=~\"{}\", port=\"{}\"}}", PromString(name), PromString(alt), port);
    };
    std::vector<std::string> state, rate;
    for (const auto& [port, devs] : by_port) {
      state.push_back(fmt::format("node_infiniband_state_id{} != {}", selector(port, devs), kIbStateActive));
    }
    for (const auto& [key, devs] : groups) {
      rate.push_back(fmt::format("node_infiniband_rate_bytes_per_second{} < {:.0f}", selector(key.first, devs), key.second));
    }
    if (state.empty()) continue;
    out.push_back({"rdma_port_down", "RdmaPortNotActive", fmt::format("{}", fmt::join(state, " or ")), "2m", "critical",
                   "RDMA port {{ $labels.device }}:{{ $labels.port }} on {{ $labels.node }} is not ACTIVE",
                   "The port's state is {{ $value }} (1 down, 2 init, 3 armed; 4 is active): NCCL loses this rail, "
                   "and a job that binds it fails or falls back to the slower path.",
                   source});
    if (!rate.empty()) {
      out.push_back({"rdma_port_rate_low", "RdmaPortRateLow", fmt::format("{}", fmt::join(rate, " or ")), "2m",
                     "warning",
                     "RDMA port {{ $labels.device }}:{{ $labels.port }} on {{ $labels.node }} below the inventory's rate",
                     "The port negotiated {{ $value }} bytes/s, less than the rate the inventory gives it: a cable, "
                     "transceiver or switch port trained at fewer lanes or a lower speed.",
                     source});
    }
  }
  return out;
}

std::vector<Alert> StorageAlerts(const model::Cluster& c) {
  Threshold lat = Lookup(c, "monitoring.storage_latency_high.seconds", 0.010, "guide 004");
  auto alert = [&](std::string_view dir, std::string_view verb) {
    return Alert{fmt::format("storage_{}_latency_high", dir),
                 fmt::format("Storage{}LatencyHigh", dir == "read" ? "Read" : "Write"),
                 fmt::format("rate(node_disk_{}_time_seconds_total[5m]) / rate(node_disk_{}s_completed_total[5m]) > {}",
                             dir, dir, lat.value),
                 "5m",
                 "warning",
                 fmt::format("{{{{ $labels.device }}}} on {{{{ $labels.node }}}}: {} latency above {} ms", verb,
                             lat.value * 1000),
                 fmt::format("Mean {} latency is {{{{ $value }}}} s on a local block device. Network file systems "
                             "(Lustre, NFS, BeeGFS) are not block devices and need their own exporter.",
                             verb),
                 fmt::format("{}: storage IOPS and latency, \"latency above 10ms kills gradient sync\" (threshold: {})",
                             kMonitoringSection, lat.why)};
  };
  return {alert("read", "read"), alert("write", "write")};
}

}  // namespace

void AddMonitoringJobs(const model::Cluster& c, const Options& o, Plan* plan) {
  // Cluster-wide files list every node, whichever were selected.
  std::vector<const model::Node*> dcgm_nodes;
  nlohmann::json dcgm_targets = nlohmann::json::array();
  nlohmann::json node_targets = nlohmann::json::array();
  std::map<int, std::vector<std::string>> by_count;  // GPU count -> profiles
  std::map<std::string, const model::Profile*> rdma_profiles;
  bool nvlink = false;
  for (const model::Node& n : c.nodes) {
    const model::Profile& p = c.ProfileOf(n);
    node_targets.push_back({{"target", YamlQuote(HostPort(AddressOf(n), kNodeExporterPort))},
                            {"node", YamlQuote(n.name)},
                            {"profile", YamlQuote(p.name)}});
    if (std::any_of(p.nics.begin(), p.nics.end(), [](const model::NicSpec& x) { return x.kind != model::NetKind::kEthernet; })) {
      rdma_profiles.emplace(p.name, &p);
    }
    if (const model::GpuSpec* g = DcgmGpu(p)) {
      dcgm_nodes.push_back(&n);
      nvlink = nvlink || g->nvlink_bytes_per_s > 0;
      const int count = DcgmGpuCount(p);
      std::vector<std::string>& names = by_count[count];
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
      dcgm_targets.push_back({{"target", YamlQuote(HostPort(AddressOf(n), kDcgmExporterPort))},
                              {"node", YamlQuote(n.name)},
                              {"gpu_model", YamlQuote(g->model)},
                              {"gpu_count", YamlQuote(std::to_string(count))}});
    }
  }
  plan->jobs.push_back({"", "/etc/prometheus/gpuforge-scrape.yml", "prometheus-scrape.yml.mustache",
                        {{"has_dcgm", !dcgm_targets.empty()}, {"dcgm", dcgm_targets}, {"nodes", node_targets}},
                        CommentStyle::kHash, "0644"});

  std::vector<std::string> notes;
  nlohmann::json groups = nlohmann::json::array();
  auto group = [&](std::string_view name, const std::vector<Alert>& alerts) {
    if (alerts.empty()) return;
    nlohmann::json rules = nlohmann::json::array();
    for (const Alert& a : alerts) rules.push_back(ToJson(a));
    groups.push_back({{"name", YamlQuote(name)}, {"rules", rules}});
  };
  if (!dcgm_nodes.empty()) group("gpuforge-gpu", GpuAlerts(c, by_count, &notes));
  std::vector<Alert> interconnect = InterconnectAlerts(!dcgm_nodes.empty(), nvlink, !rdma_profiles.empty());
  for (Alert& a : RdmaPortAlerts(rdma_profiles)) interconnect.push_back(std::move(a));
  group("gpuforge-interconnect", interconnect);
  group("gpuforge-storage", StorageAlerts(c));
  nlohmann::json note_lines = nlohmann::json::array();
  for (const std::string& n : notes) note_lines.push_back({{"text", n}});
  const bool slurm = c.software.scheduler.kind == model::SchedulerKind::kSlurm;
  plan->jobs.push_back({"", "/etc/prometheus/gpuforge-alerts.yml", "prometheus-alerts.yml.mustache",
                        {{"groups", groups}, {"notes", note_lines}, {"version", std::string(kDcgmExporterVersion)}},
                        CommentStyle::kHash, "0644"});

  nlohmann::json fields = nlohmann::json::array();
  for (const DcgmField& f : kDcgmFields) {
    fields.push_back({{"name", std::string(f.name)}, {"type", std::string(f.type)}, {"help", std::string(f.help)}});
  }
  const nlohmann::json exporter = {{"version", std::string(kDcgmExporterVersion)},
                                   {"image", std::string(kDcgmExporterImage)},
                                   {"counters", std::string(kDcgmCountersPath)},
                                   {"job_map_dir", std::string(kDcgmJobMapDir)},
                                   {"slurm", slurm},
                                   {"kubernetes", c.software.scheduler.kind == model::SchedulerKind::kKubernetes}};
  // The contexts depend on the node only through host_service: built once each and shared.
  auto counters_ctx = [&](bool host_service) {
    nlohmann::json ctx = exporter;
    ctx["fields"] = fields;
    ctx["host_service"] = host_service;
    ctx["dropin"] = std::string(kDcgmExporterDropIn);
    return Context(std::move(ctx));
  };
  const Context counters[2] = {counters_ctx(false), counters_ctx(true)};
  nlohmann::json unit_json = exporter;
  unit_json["host_engine"] = std::string(kDcgmHostEngine);
  const Context unit(std::move(unit_json));
  const Context job_map(exporter);
  const std::vector<const model::Node*> slurmd = model::SlurmdNodes(c);
  const std::set<const model::Node*> slurmd_set(slurmd.begin(), slurmd.end());
  for (const model::Node* n : SelectedNodes(c, o)) {
    if (model::HasNvidiaGpus(c.ProfileOf(*n))) {
      const bool host_service = model::HostDcgmExporter(c, c.ProfileOf(*n));
      plan->jobs.push_back({n->name, std::string(kDcgmCountersPath), "prometheus-dcgm-counters.csv.mustache",
                            counters[host_service ? 1 : 0], CommentStyle::kHash, "0644"});
      if (host_service) {
        plan->jobs.push_back({n->name, std::string(kDcgmExporterDropIn), "dcgm-exporter.conf.mustache", unit,
                              CommentStyle::kHash, "0644"});
      }
    }
    // slurm.conf's Prolog=/etc/slurm/prolog.d/* glob fails the prolog, and so drains the node,
    // where it matches nothing (slurmd 22.05: "prep_script_slurmd: cannot read dir
    // /etc/slurm/prolog.d/*", seen by RenderSlurmDaemons): every slurmd node gets the pair, and
    // on one without GPUs it has nothing to map (SLURM_JOB_GPUS unset) and exits 0.
    if (!slurm || slurmd_set.count(n) == 0) continue;
    plan->jobs.push_back({n->name, std::string(kDcgmJobMapProlog), "dcgm-job-map-prolog.sh.mustache", job_map,
                          CommentStyle::kHash, "0755"});
    plan->jobs.push_back({n->name, std::string(kDcgmJobMapEpilog), "dcgm-job-map-epilog.sh.mustache", job_map,
                          CommentStyle::kHash, "0755"});
  }
}

}  // namespace gpuforge::render
