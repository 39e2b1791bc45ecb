// Monitoring, for every cluster (guide 000: "Prometheus + Grafana + DCGM exporter"; guide 004,
// "Monitoring: The Unsung Hero"): Prometheus scrape targets for the DCGM exporter and the node
// exporter of every node, alert rules holding the guides' thresholds, and the DCGM exporter
// field list those rules read. docs/render.md says where every value comes from.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/gpu_catalog.h"
#include "render/families.h"
#include "render/quote.h"

namespace gpuforge::render {

namespace {

constexpr int kDcgmExporterPort = 9400;  // dcgm-exporter's default listen port
constexpr int kNodeExporterPort = 9100;  // node_exporter's default listen port
constexpr std::string_view kCountersPath = "/etc/dcgm-exporter/gpuforge-counters.csv";

// A DCGM field the exporter publishes: its name is the metric name the rules use.
struct DcgmField {
  std::string_view name;
  std::string_view type;
  std::string_view help;  // no commas: the exporter reads the file as CSV
};

// dcgm-exporter's own default list (etc/default-counters.csv), less the PCIe throughput fields
// newer DCGM releases dropped, plus the throttle reasons and NVLink CRC counters the rules
// below read, which that list leaves commented out.
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
    DcgmField{"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."},
    DcgmField{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons (NVML bitmask)."},
    DcgmField{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."},
    DcgmField{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."},
    DcgmField{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."},
    DcgmField{"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."},
    DcgmField{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."},
    DcgmField{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."},
    DcgmField{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors."},
    DcgmField{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."},
};

// NVML clock throttle reason bits (nvmlClocksThrottleReasons); PromQL has no bitwise and, so
// a bit is tested as floor(x / bit) % 2 == 1.
constexpr int kHwSlowdown = 0x8;
constexpr int kSwThermalSlowdown = 0x20;
constexpr int kHwThermalSlowdown = 0x40;
constexpr int kHwPowerBrakeSlowdown = 0x80;

std::string AddressOf(const model::Node& n) { return n.address.empty() ? n.name : n.address; }

std::string HostPort(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

// The GPU the node's DCGM exporter reports on: the profile's first NVIDIA (or unknown-vendor)
// GPU kind; nullptr when there is none.
const model::GpuSpec* DcgmGpu(const model::Profile& p) {
  for (const model::GpuSpec& g : p.gpus) {
    const model::GpuModelInfo* info = model::FindGpuModel(g.model);
    if (g.count > 0 && (info == nullptr || info->vendor == "nvidia")) return &g;
  }
  return nullptr;
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

// Guide 004's 350 W is an A100 SXM figure ("GPUs run at 400W each"); for other models the
// mark scales with TDP.
std::optional<Threshold> PowerMark(const model::Cluster& c, const model::GpuSpec& g) {
  auto it = c.validation.thresholds.values.find("monitoring.gpu_power_low.watts");
  if (it != c.validation.thresholds.values.end()) {
    return Threshold{it->second, "inventory validation.thresholds monitoring.gpu_power_low.watts"};
  }
  const model::GpuModelInfo* info = model::FindGpuModel(g.model);
  bool a100_sxm = info != nullptr && (info->name == "A100" || info->name == "A100-40GB") &&
                  g.form_factor == model::FormFactor::kSxm && g.tdp_w > 350;
  if (a100_sxm) return Threshold{350, "guide 004's 350 W for A100-class GPUs"};
  if (g.tdp_w <= 0) return std::nullopt;
  Threshold f = Lookup(c, "monitoring.gpu_power_low.fraction_of_tdp", 0.5, "gpuforge's 0.5");
  return Threshold{f.value * g.tdp_w, fmt::format("{} x the {} W TDP of {} ({})", f.value, g.tdp_w, g.model, f.why)};
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

std::string Bit(int bit) { return fmt::format("floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / {}) % 2 == 1", bit); }

constexpr std::string_view kMonitoringSection = "guide 004, \"Monitoring: The Unsung Hero\"";
constexpr std::string_view kWhere = "GPU {{ $labels.gpu }} on {{ $labels.node }}";

std::vector<Alert> GpuAlerts(const model::Cluster& c, const std::vector<const model::Node*>& dcgm_nodes,
                             std::vector<std::string>* notes) {
  std::vector<Alert> out;
  Threshold util = Lookup(c, "monitoring.gpu_utilization_low.percent", 90, "guide 004");
  out.push_back({"gpu_utilization_low", "GpuUtilizationLow", fmt::format("DCGM_FI_DEV_GPU_UTIL < {}", util.value), "15m",
                 "warning", fmt::format("{} below {}% utilisation for 15 minutes", kWhere, util.value),
                 "Utilisation is {{ $value }}%. Below the mark something is bottlenecked: data loading, the network or "
                 "a straggler. An idle GPU fires this too.",
                 fmt::format("{}: GPU utilization, \"if it's below 90%, something's bottlenecked\" (threshold: {}; "
                             "15 minutes sustained: gpuforge)",
                             kMonitoringSection, util.why)});

  // One power rule per GPU model, on the gpu_model label the scrape config sets; gated on a
  // busy GPU, since an idle one draws far less than any mark.
  std::map<std::string, const model::GpuSpec*> models;
  for (const model::Node* n : dcgm_nodes) {
    const model::GpuSpec* g = DcgmGpu(c.ProfileOf(*n));
    models.emplace(g->model, g);
  }
  for (const auto& [model, g] : models) {
    std::optional<Threshold> mark = PowerMark(c, *g);
    if (!mark) {
      notes->push_back(fmt::format("No GpuPowerLow rule for {}: its TDP is unknown (set gpus.tdp in the profile).", model));
      continue;
    }
    std::string sel = fmt::format("{{gpu_model=\"{}\"}}", model);
    out.push_back({"gpu_power_low", "GpuPowerLow",
                   fmt::format("DCGM_FI_DEV_POWER_USAGE{} < {} and on(instance, gpu) DCGM_FI_DEV_GPU_UTIL{} >= {}", sel,
                               mark->value, sel, util.value),
                   "5m", "warning", fmt::format("{} ({}) busy but drawing under {} W", kWhere, model, mark->value),
                   "Power draw is {{ $value }} W at high utilisation: thermal or power throttling.",
                   fmt::format("{}: power draw per GPU, \"drop below 350W indicates thermal or power throttling\" "
                               "(mark: {})",
                               kMonitoringSection, mark->why)});
  }

  out.push_back({"gpu_hw_slowdown", "GpuHardwareSlowdown",
                 fmt::format("({}) or ({}) or ({})", Bit(kHwSlowdown), Bit(kHwThermalSlowdown), Bit(kHwPowerBrakeSlowdown)),
                 "1m", "critical", fmt::format("{} in hardware slowdown (thermal or power brake)", kWhere),
                 "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS has HW_SLOWDOWN (0x8), HW_THERMAL_SLOWDOWN (0x40) or "
                 "HW_POWER_BRAKE_SLOWDOWN (0x80) set: check inlet temperature, airflow and power feeds.",
                 "guide 004, \"Why Your Cluster Will Crash (and How to Prevent It)\": thermal throttling; anchors.md, "
                 "clock throttling: HW slowdown, thermal or power brake active is a failure"});
  out.push_back({"gpu_sw_thermal_slowdown", "GpuThermalSlowdown", Bit(kSwThermalSlowdown), "5m", "warning",
                 fmt::format("{} slowed by the driver for temperature", kWhere),
                 "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS has SW_THERMAL_SLOWDOWN (0x20) set: the GPU is above its "
                 "maximum operating temperature.",
                 "guide 004, \"Why Your Cluster Will Crash (and How to Prevent It)\": thermal throttling"});
  return out;
}

// NCCL publishes no metric; these are the hardware counters its failures show up in.
std::vector<Alert> InterconnectAlerts(bool nvidia, bool nvlink, bool rdma) {
  const std::string source = fmt::format(
      "{}: \"NCCL errors - silently increasing indicates a networking issue\"; NCCL exports no metric, so {}", kMonitoringSection,
      "the GPU, NVLink, PCIe and RDMA port error counters NCCL failures show up in stand in for it");
  std::vector<Alert> out;
  if (nvidia) {
    out.push_back({"gpu_xid_error", "GpuXidError", "DCGM_FI_DEV_XID_ERRORS > 0", "", "critical",
                   fmt::format("{} reported XID {{{{ $value }}}}", kWhere),
                   "The driver logged an XID error (the value is its number: 79 fallen off the bus, 48 double-bit "
                   "ECC, 94/95 contained/uncontained ECC, 74 NVLink). NCCL jobs on this GPU hang or fail.",
                   source});
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
  bool nvlink = false, rdma = false;
  for (const model::Node& n : c.nodes) {
    const model::Profile& p = c.ProfileOf(n);
    node_targets.push_back({{"target", YamlQuote(HostPort(AddressOf(n), kNodeExporterPort))}, {"node", YamlQuote(n.name)}});
    rdma = rdma || std::any_of(p.nics.begin(), p.nics.end(), [](const model::NicSpec& x) { return x.kind != model::NetKind::kEthernet; });
    if (const model::GpuSpec* g = DcgmGpu(p)) {
      dcgm_nodes.push_back(&n);
      nvlink = nvlink || g->nvlink_bytes_per_s > 0;
      dcgm_targets.push_back(
          {{"target", YamlQuote(HostPort(AddressOf(n), kDcgmExporterPort))}, {"node", YamlQuote(n.name)}, {"gpu_model", YamlQuote(g->model)}});
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
  if (!dcgm_nodes.empty()) group("gpuforge-gpu", GpuAlerts(c, dcgm_nodes, &notes));
  group("gpuforge-interconnect", InterconnectAlerts(!dcgm_nodes.empty(), nvlink, rdma));
  group("gpuforge-storage", StorageAlerts(c));
  nlohmann::json note_lines = nlohmann::json::array();
  for (const std::string& n : notes) note_lines.push_back({{"text", n}});
  plan->jobs.push_back({"", "/etc/prometheus/gpuforge-alerts.yml", "prometheus-alerts.yml.mustache",
                        {{"groups", groups}, {"notes", note_lines}}, CommentStyle::kHash, "0644"});

  nlohmann::json fields = nlohmann::json::array();
  for (const DcgmField& f : kDcgmFields) {
    fields.push_back({{"name", std::string(f.name)}, {"type", std::string(f.type)}, {"help", std::string(f.help)}});
  }
  for (const model::Node* n : SelectedNodes(c, o)) {
    if (DcgmGpu(c.ProfileOf(*n)) == nullptr) continue;
    plan->jobs.push_back({n->name, std::string(kCountersPath), "prometheus-dcgm-counters.csv.mustache", {{"fields", fields}},
                          CommentStyle::kHash, "0644"});
  }
}

}  // namespace gpuforge::render
