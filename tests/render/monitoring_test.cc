// The monitoring family: the scrape config and alert rules are parsed back and held against
// the inventory (every node a target with its labels, every rule's expression, threshold and
// count where the inventory puts them), and the examples' files match their golden copies
// (GPUFORGE_UPDATE_GOLDEN=1 rewrites them). What the real consumers make of the files
// (dcgm-exporter's field names, promtool, sh) is in monitoring_consumers_test.cc.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/render/monitoring.h"
#include "gpuforge/render/render.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScrape = "/etc/prometheus/gpuforge-scrape.yml";
constexpr const char* kAlerts = "/etc/prometheus/gpuforge-alerts.yml";
constexpr const char* kCounters = "/etc/dcgm-exporter/gpuforge-counters.csv";

model::Cluster LoadExample(const std::string& name) {
  inventory::LoadOutcome out =
      inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/" + name + ".yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

model::Cluster LoadYaml(std::string_view text) {
  inventory::LoadOutcome out = inventory::LoadString(text, "test.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

render::Output RenderCluster(const model::Cluster& c, const std::string& label = "test.yaml") {
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = label;
  Result<render::Output> out = render::Render(c, o);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? std::move(*out) : render::Output{};
}

bool IsMine(const render::RenderedFile& f) {
  return f.template_name.starts_with("prometheus-") || f.template_name.starts_with("dcgm-job-map-") ||
         f.template_name == "dcgm-exporter.conf.mustache";
}

const render::RenderedFile* Find(const render::Output& out, const std::string& node, const std::string& path) {
  for (const render::RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

YAML::Node Parse(const render::Output& out, const std::string& path) {
  const render::RenderedFile* f = Find(out, "", path);
  EXPECT_NE(f, nullptr) << "no _cluster:" << path;
  if (f == nullptr) return YAML::Node();
  try {
    return YAML::Load(f->content);
  } catch (const YAML::Exception& e) {
    ADD_FAILURE() << path << " is not YAML: " << e.what() << "\n" << f->content;
    return YAML::Node();
  }
}

// A double-quoted scalar carries yaml-cpp's non-specific tag "!"; a plain one "?".
bool Quoted(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!"; }

std::string Str(const YAML::Node& n) {
  EXPECT_TRUE(Quoted(n)) << "not a quoted string: " << (n.IsScalar() ? n.Scalar() : "(not a scalar)");
  return n.IsScalar() ? n.Scalar() : "";
}

void ExpectOnlyQuotedStrings(const YAML::Node& n, const std::string& where) {
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) ExpectOnlyQuotedStrings(it->second, where + "." + it->first.Scalar());
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) ExpectOnlyQuotedStrings(n[i], fmt::format("{}[{}]", where, i));
  } else if (n.IsScalar()) {
    EXPECT_TRUE(Quoted(n)) << where << ": '" << n.Scalar() << "' is unquoted";
  }
}

std::string HostPort(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

// (target, node label, gpu_model and gpu_count labels or profile label) of one scrape job,
// in file order.
struct Target {
  std::string target, node, gpu_model, gpu_count, profile;
  bool operator==(const Target&) const = default;
};
std::vector<Target> Targets(const YAML::Node& scrape, const std::string& job) {
  std::vector<Target> out;
  for (const YAML::Node& j : scrape["scrape_configs"]) {
    if (Str(j["job_name"]) != job) continue;
    for (const YAML::Node& sc : j["static_configs"]) {
      EXPECT_EQ(sc["targets"].size(), 1u);
      const YAML::Node l = sc["labels"];
      out.push_back({Str(sc["targets"][0]), Str(l["node"]), l["gpu_model"] ? Str(l["gpu_model"]) : "",
                     l["gpu_count"] ? Str(l["gpu_count"]) : "", l["profile"] ? Str(l["profile"]) : ""});
    }
  }
  return out;
}

std::vector<Target> WantedTargets(const model::Cluster& c, int port, bool gpu_nodes_only) {
  std::vector<Target> out;
  for (const model::Node& n : c.nodes) {
    const model::Profile& p = c.ProfileOf(n);
    if (gpu_nodes_only && p.gpu_count() == 0) continue;
    if (gpu_nodes_only) {
      out.push_back({HostPort(n.address, port), n.name, p.gpus.front().model, std::to_string(p.gpu_count()), ""});
    } else {
      out.push_back({HostPort(n.address, port), n.name, "", "", p.name});
    }
  }
  return out;
}

// Every rule of the alert file, by alert name.
std::multimap<std::string, YAML::Node> Rules(const YAML::Node& alerts) {
  std::multimap<std::string, YAML::Node> out;
  for (const YAML::Node& g : alerts["groups"]) {
    for (const YAML::Node& r : g["rules"]) out.emplace(Str(r["alert"]), r);
  }
  return out;
}

YAML::Node Rule(const YAML::Node& alerts, const std::string& name) {
  auto rules = Rules(alerts);
  EXPECT_EQ(rules.count(name), 1u) << name;
  auto it = rules.find(name);
  return it == rules.end() ? YAML::Node() : it->second;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class RenderMonitoringExample : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    c_ = LoadExample(GetParam());
    out_ = RenderCluster(c_, Label());
  }
  std::string Label() const { return fmt::format("inventories/examples/{}.yaml", GetParam()); }
  model::Cluster c_;
  render::Output out_;
};

TEST_P(RenderMonitoringExample, ScrapeConfigListsEveryNodeWithItsLabel) {
  YAML::Node scrape = Parse(out_, kScrape);
  ASSERT_TRUE(scrape.IsMap());
  ExpectOnlyQuotedStrings(scrape, "scrape");
  EXPECT_EQ(Targets(scrape, "node-exporter"), WantedTargets(c_, 9100, false));
  EXPECT_EQ(Targets(scrape, "dcgm-exporter"), WantedTargets(c_, 9400, true));
  EXPECT_FALSE(Targets(scrape, "dcgm-exporter").empty());
}

TEST_P(RenderMonitoringExample, EveryRuleHasSeverityCodeAndSource) {
  YAML::Node alerts = Parse(out_, kAlerts);
  ASSERT_TRUE(alerts.IsMap());
  ExpectOnlyQuotedStrings(alerts, "alerts");
  auto rules = Rules(alerts);
  EXPECT_GE(rules.size(), 8u);
  for (const auto& [name, r] : rules) {
    std::string severity = Str(r["labels"]["severity"]);
    EXPECT_TRUE(severity == "warning" || severity == "critical") << name;
    EXPECT_FALSE(Str(r["labels"]["code"]).empty()) << name;
    EXPECT_TRUE(Str(r["annotations"]["source"]).starts_with("guide 00")) << name;
    EXPECT_FALSE(Str(r["annotations"]["summary"]).empty()) << name;
    EXPECT_FALSE(Str(r["expr"]).empty()) << name;
  }
}

TEST_P(RenderMonitoringExample, MatchesGoldenFiles) {
  fs::path golden = fs::path(GPUFORGE_TEST_DATA_DIR) / "render" / GetParam();
  bool update = std::getenv("GPUFORGE_UPDATE_GOLDEN") != nullptr && std::string(std::getenv("GPUFORGE_UPDATE_GOLDEN")) == "1";
  std::set<std::string> produced;
  for (const render::RenderedFile& f : out_.files) {
    if (!IsMine(f)) continue;
    fs::path rel = fs::path(f.node.empty() ? "_cluster" : f.node) / fs::path(f.path).relative_path();
    produced.insert(rel.string());
    if (update) {
      fs::create_directories((golden / rel).parent_path());
      std::ofstream(golden / rel, std::ios::binary) << f.content;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden / rel)) << rel << " has no golden copy; run with GPUFORGE_UPDATE_GOLDEN=1";
    EXPECT_EQ(f.content, ReadFile(golden / rel)) << rel << " differs from its golden copy; if the change is "
                                                    "intended, run with GPUFORGE_UPDATE_GOLDEN=1 and review the diff";
  }
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(golden)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), golden).string();
    bool ours = false;
    for (std::string_view p : {std::string_view(kScrape), std::string_view(kAlerts), std::string_view(kCounters),
                               render::kDcgmJobMapProlog, render::kDcgmJobMapEpilog}) {
      ours = ours || rel.ends_with(p);
    }
    if (ours) {
      EXPECT_TRUE(produced.count(rel)) << rel << " is a stale golden copy";
    }
  }
}

TEST_P(RenderMonitoringExample, Deterministic) {
  render::Output again = RenderCluster(c_, Label());
  for (const render::RenderedFile& f : out_.files) {
    if (!IsMine(f)) continue;
    const render::RenderedFile* g = Find(again, f.node, f.path);
    ASSERT_NE(g, nullptr) << f.path;
    EXPECT_EQ(g->content, f.content) << f.path;
  }
}

INSTANTIATE_TEST_SUITE_P(RenderMonitoringExamples, RenderMonitoringExample,
                         ::testing::Values("a100-roce-k8s", "h200-ib-32gpu", "h200-single-node"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

TEST(RenderMonitoring, RulesReadWhatTheInventoryAndTheExporterSay) {
  model::Cluster c = LoadExample("a100-roce-k8s");
  YAML::Node alerts = Parse(RenderCluster(c), kAlerts);
  ASSERT_TRUE(alerts.IsMap());

  YAML::Node down = Rule(alerts, "DcgmExporterDown");
  EXPECT_EQ(Str(down["expr"]), "up{job=\"dcgm-exporter\"} == 0");
  EXPECT_EQ(Str(down["labels"]["severity"]), "critical");

  // Kubernetes: only GPUs the exporter's pod mapping gives a pod.
  YAML::Node util = Rule(alerts, "GpuUtilizationLow");
  EXPECT_EQ(Str(util["expr"]), "DCGM_FI_DEV_GPU_UTIL{pod!=\"\"} < 90");
  EXPECT_EQ(Str(util["for"]), "15m");
  EXPECT_NE(Str(util["annotations"]["source"]).find("Monitoring: The Unsung Hero"), std::string::npos);
  EXPECT_NE(Str(util["annotations"]["source"]).find("kubernetes.go"), std::string::npos);

  // The inventory's 4 GPUs per node, through the gpu_count target label.
  EXPECT_EQ(Str(Rule(alerts, "GpuCountLow")["expr"]),
            "(count by (node) (group by (node, gpu) (DCGM_FI_DEV_GPU_UTIL{job=\"dcgm-exporter\", gpu_count=\"4\"})) < 4) "
            "or ((max by (node) (up{job=\"dcgm-exporter\", gpu_count=\"4\"}) == 1) * 0 unless on(node) count by (node) "
            "(DCGM_FI_DEV_GPU_UTIL{job=\"dcgm-exporter\", gpu_count=\"4\"}))");

  // HW_SLOWDOWN 0x8, HW_THERMAL_SLOWDOWN 0x40, HW_POWER_BRAKE_SLOWDOWN 0x80; SW_THERMAL 0x20;
  // of the field every pinned exporter accepts, not the throttle-reason alias some reject.
  EXPECT_EQ(Str(Rule(alerts, "GpuHardwareSlowdown")["expr"]),
            "(floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / 8) % 2 == 1) or "
            "(floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / 64) % 2 == 1) or "
            "(floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / 128) % 2 == 1)");
  EXPECT_EQ(Str(Rule(alerts, "GpuHardwareSlowdown")["labels"]["severity"]), "critical");
  EXPECT_EQ(Str(Rule(alerts, "GpuThermalSlowdown")["expr"]), "floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / 32) % 2 == 1");
  EXPECT_EQ(Rules(alerts).count("GpuPowerLow"), 0u) << "low power is no sign of throttling";

  YAML::Node xid = Rule(alerts, "GpuXidHardware");
  EXPECT_EQ(Str(xid["expr"]),
            "max_over_time(DCGM_EXP_XID_ERRORS_COUNT{xid=~\"48|54|61|62|64|74|79|94|95|119|120|121|140\"}[10m]) > 0");
  EXPECT_EQ(Str(xid["labels"]["severity"]), "critical");
  EXPECT_NE(Str(xid["annotations"]["source"]).find("docs.nvidia.com/deploy/xid-errors"), std::string::npos);
  EXPECT_EQ(Rules(alerts).count("GpuXidError"), 0u) << "the last-Xid gauge is sticky and counts application Xids";

  EXPECT_EQ(Str(Rule(alerts, "GpuRowRemapFailed")["expr"]), "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0");
  EXPECT_EQ(Str(Rule(alerts, "GpuRowRemapPending")["expr"]), "DCGM_FI_DEV_ROW_REMAP_PENDING > 0");

  // The cabled RoCE ports (mlx5_0, mlx5_1 on network roce) at their 400 Gb/s; not the spare
  // card's ports, which no network names, nor the Ethernet mlx5_4.
  EXPECT_EQ(Str(Rule(alerts, "RdmaPortNotActive")["expr"]),
            "node_infiniband_state_id{profile=\"a100-4gpu\", device=~\"mlx5_0|mlx5_1\", port=\"1\"} != 4");
  EXPECT_EQ(Str(Rule(alerts, "RdmaPortRateLow")["expr"]),
            "node_infiniband_rate_bytes_per_second{profile=\"a100-4gpu\", device=~\"mlx5_0|mlx5_1\", port=\"1\"} < "
            "50000000000");
  EXPECT_NE(Str(Rule(alerts, "RdmaPortRateLow")["annotations"]["source"]).find("infiniband_linux.go"), std::string::npos);

  EXPECT_EQ(Str(Rule(alerts, "NvlinkCrcErrorsRising")["expr"]),
            "increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[10m]) > 0 or "
            "increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL[10m]) > 0");
  EXPECT_EQ(Str(Rule(alerts, "PcieReplaysRising")["expr"]), "increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[10m]) > 0");
  EXPECT_EQ(Str(Rule(alerts, "RdmaPortErrorsRising")["expr"]),
            "increase(node_infiniband_port_errors_received_total[10m]) > 0 or "
            "increase(node_infiniband_link_downed_total[10m]) > 0");
  EXPECT_EQ(Str(Rule(alerts, "StorageReadLatencyHigh")["expr"]),
            "rate(node_disk_read_time_seconds_total[5m]) / rate(node_disk_reads_completed_total[5m]) > 0.01");
  EXPECT_EQ(Str(Rule(alerts, "StorageWriteLatencyHigh")["expr"]),
            "rate(node_disk_write_time_seconds_total[5m]) / rate(node_disk_writes_completed_total[5m]) > 0.01");
  EXPECT_NE(Str(Rule(alerts, "StorageReadLatencyHigh")["annotations"]["summary"]).find("above 10 ms"), std::string::npos);
}

TEST(RenderMonitoring, SlurmUtilisationReadsTheJobMappingLabel) {
  YAML::Node alerts = Parse(RenderCluster(LoadExample("h200-ib-32gpu")), kAlerts);
  YAML::Node util = Rule(alerts, "GpuUtilizationLow");
  EXPECT_EQ(Str(util["expr"]), "DCGM_FI_DEV_GPU_UTIL{hpc_job!=\"\"} < 90");
  EXPECT_NE(Str(util["annotations"]["source"]).find("hpc.go"), std::string::npos);
  EXPECT_EQ(Str(Rule(alerts, "RdmaPortNotActive")["expr"]),
            "node_infiniband_state_id{profile=\"hgx-h200\", device=~\"mlx5_0|mlx5_1|mlx5_2|mlx5_3|mlx5_4|mlx5_5|mlx5_6|"
            "mlx5_7\", port=\"1\"} != 4");
}

// Profiles of four GPU models in one cluster, and a CPU-only login node.
constexpr const char* kModels = R"(version: 1
cluster: {name: models}
profiles:
  h200: {gpus: {model: H200, count: 8}}
  b200: {gpus: {model: B200, count: 8}}
  pcie: {gpus: {model: A100-PCIE, count: 4}}
  a100: {gpus: {model: a100-40gb-sxm4, count: 8}}
  cpu:  {cpu: {model: "EPYC 9124", sockets: 1, cores_per_socket: 16}}
nodes:
  - {name: h1, address: 10.0.0.1, profile: h200}
  - {name: b1, address: 10.0.0.2, profile: b200}
  - {name: p1, address: 10.0.0.3, profile: pcie}
  - {name: a1, address: 10.0.0.4, profile: a100}
  - {name: c1, address: 10.0.0.5, profile: cpu, role: login}
)";

TEST(RenderMonitoring, GpuCountRuleForEachCountTheInventoryGives) {
  render::Output out = RenderCluster(LoadYaml(kModels));
  YAML::Node scrape = Parse(out, kScrape);
  EXPECT_EQ(Targets(scrape, "dcgm-exporter"), (std::vector<Target>{{"10.0.0.1:9400", "h1", "H200", "8", ""},
                                                                   {"10.0.0.2:9400", "b1", "B200", "8", ""},
                                                                   {"10.0.0.3:9400", "p1", "A100-PCIE", "4", ""},
                                                                   {"10.0.0.4:9400", "a1", "a100-40gb-sxm4", "8", ""}}));
  YAML::Node alerts = Parse(out, kAlerts);
  std::map<std::string, std::string> sources;  // expr's count -> source
  auto rules = Rules(alerts);
  for (auto [it, end] = rules.equal_range("GpuCountLow"); it != end; ++it) {
    std::string expr = Str(it->second["expr"]);
    std::string count = expr.substr(expr.find("gpu_count=\"") + 11);
    count = count.substr(0, count.find('"'));
    EXPECT_NE(expr.find(fmt::format(")) < {}) or", count)), std::string::npos) << expr;
    sources[count] = Str(it->second["annotations"]["source"]);
  }
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_NE(sources["4"].find("profile pcie"), std::string::npos) << sources["4"];
  EXPECT_NE(sources["8"].find("profiles h200, b200, a100"), std::string::npos) << sources["8"];
  // No scheduler: nothing says which GPUs a job holds, so no utilisation rule, and the file says why.
  EXPECT_EQ(rules.count("GpuUtilizationLow"), 0u);
  EXPECT_NE(Find(out, "", kAlerts)->content.find("# No GpuUtilizationLow rule"), std::string::npos);
  EXPECT_EQ(Find(out, "h1", std::string(render::kDcgmJobMapProlog)), nullptr) << "no Slurm, no prolog";
}

TEST(RenderMonitoring, ThresholdsCanBeOverriddenInValidationThresholds) {
  std::string text = std::string(kModels) + R"(software: {scheduler: {kind: kubernetes}}
validation:
  thresholds:
    monitoring.gpu_utilization_low.percent: 80
    monitoring.storage_latency_high.seconds: 20ms
)";
  YAML::Node alerts = Parse(RenderCluster(LoadYaml(text)), kAlerts);
  EXPECT_EQ(Str(Rule(alerts, "GpuUtilizationLow")["expr"]), "DCGM_FI_DEV_GPU_UTIL{pod!=\"\"} < 80");
  EXPECT_NE(Str(Rule(alerts, "GpuUtilizationLow")["annotations"]["source"]).find("validation.thresholds"),
            std::string::npos);
  EXPECT_NE(Str(Rule(alerts, "StorageReadLatencyHigh")["expr"]).find("> 0.02"), std::string::npos);
}

TEST(RenderMonitoring, ClusterWithoutGpusGetsNodeAndStorageMonitoringOnly) {
  render::Output out = RenderCluster(LoadYaml(R"(version: 1
cluster: {name: cpus}
profiles:
  cpu: {cpu: {model: "EPYC 9124", sockets: 1, cores_per_socket: 16}}
nodes:
  - {name: "c[1-2]", address: "10.0.0.[1-2]", profile: cpu}
)"));
  YAML::Node scrape = Parse(out, kScrape);
  EXPECT_TRUE(Targets(scrape, "dcgm-exporter").empty());
  EXPECT_EQ(Targets(scrape, "node-exporter"),
            (std::vector<Target>{{"10.0.0.1:9100", "c1", "", "", "cpu"}, {"10.0.0.2:9100", "c2", "", "", "cpu"}}));
  YAML::Node alerts = Parse(out, kAlerts);
  std::vector<std::string> groups;
  for (const YAML::Node& g : alerts["groups"]) groups.push_back(Str(g["name"]));
  EXPECT_EQ(groups, std::vector<std::string>{"gpuforge-storage"});
  for (const render::RenderedFile& f : out.files) EXPECT_NE(f.path, kCounters);
}

TEST(RenderMonitoring, AmdGpusGetNoDcgmTargetsOrRules) {
  render::Output out = RenderCluster(LoadYaml(R"(version: 1
cluster: {name: amd}
profiles:
  mi: {gpus: {model: MI300X, count: 8}}
nodes:
  - {name: m1, address: 10.0.0.1, profile: mi}
)"));
  YAML::Node scrape = Parse(out, kScrape);
  EXPECT_TRUE(Targets(scrape, "dcgm-exporter").empty()) << "DCGM reads NVIDIA GPUs only";
  EXPECT_EQ(Targets(scrape, "node-exporter").size(), 1u);
  for (const auto& [name, rule] : Rules(Parse(out, kAlerts))) {
    EXPECT_EQ(Str(rule["expr"]).find("DCGM_"), std::string::npos) << name;
    EXPECT_EQ(Str(rule["expr"]).find("dcgm-exporter"), std::string::npos) << name;
  }
  EXPECT_EQ(Find(out, "m1", kCounters), nullptr);
}

TEST(RenderMonitoring, WorstAllowedValuesComeBackAsTheSameStrings) {
  model::Cluster c = LoadYaml(R"(version: 1
cluster: {name: "0_N.u-ll"}
profiles:
  p: {gpus: {model: "True", count: 2, memory: 1GB, tdp: 300W}}
  q: {gpus: {model: "0x1F", count: 1, memory: 1GB, tdp: 1W}}
nodes:
  - {name: "null", address: "fe80::1", profile: p}
  - {name: "true", address: "0x1f", profile: p}
  - {name: "1e3", address: "::ffff:198.18.0.1", profile: q}
)");
  render::Output out = RenderCluster(c);
  YAML::Node scrape = Parse(out, kScrape);
  ExpectOnlyQuotedStrings(scrape, "scrape");
  EXPECT_EQ(Targets(scrape, "dcgm-exporter"), (std::vector<Target>{{"[fe80::1]:9400", "null", "True", "2", ""},
                                                                   {"0x1f:9400", "true", "True", "2", ""},
                                                                   {"[::ffff:198.18.0.1]:9400", "1e3", "0x1F", "1", ""}}));
  YAML::Node alerts = Parse(out, kAlerts);
  ExpectOnlyQuotedStrings(alerts, "alerts");
  EXPECT_EQ(Rules(alerts).count("GpuCountLow"), 2u);
}

}  // namespace
}  // namespace gpuforge
