// The monitoring family: the scrape config and alert rules are parsed back and held against
// the inventory (every node a target with its label, every threshold where the guides put
// it), the DCGM field list covers what the rules read, and the examples' files match their
// golden copies (GPUFORGE_UPDATE_GOLDEN=1 rewrites them).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/cluster.h"
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

bool IsMine(const render::RenderedFile& f) { return f.template_name.starts_with("prometheus-"); }

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

// (target, node label, gpu_model label or "") of one scrape job, in file order.
struct Target {
  std::string target, node, gpu_model;
  bool operator==(const Target&) const = default;
};
std::vector<Target> Targets(const YAML::Node& scrape, const std::string& job) {
  std::vector<Target> out;
  for (const YAML::Node& j : scrape["scrape_configs"]) {
    if (Str(j["job_name"]) != job) continue;
    for (const YAML::Node& sc : j["static_configs"]) {
      EXPECT_EQ(sc["targets"].size(), 1u);
      out.push_back({Str(sc["targets"][0]), Str(sc["labels"]["node"]),
                     sc["labels"]["gpu_model"] ? Str(sc["labels"]["gpu_model"]) : ""});
    }
  }
  return out;
}

std::vector<Target> WantedTargets(const model::Cluster& c, int port, bool gpu_nodes_only) {
  std::vector<Target> out;
  for (const model::Node& n : c.nodes) {
    const model::Profile& p = c.ProfileOf(n);
    if (gpu_nodes_only && p.gpu_count() == 0) continue;
    out.push_back({HostPort(n.address, port), n.name, gpu_nodes_only ? p.gpus.front().model : ""});
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

// gpu_model -> power mark, read back from the GpuPowerLow rules' expressions.
std::map<std::string, double> PowerMarks(const YAML::Node& alerts) {
  std::map<std::string, double> out;
  static const std::regex re(R"re(^DCGM_FI_DEV_POWER_USAGE\{gpu_model="([^"]+)"\} < ([0-9.]+) and on\(instance, gpu\) DCGM_FI_DEV_GPU_UTIL\{gpu_model="([^"]+)"\} >= 90$)re");
  auto rules = Rules(alerts);
  for (auto [it, end] = rules.equal_range("GpuPowerLow"); it != end; ++it) {
    std::string expr = Str(it->second["expr"]);
    std::smatch m;
    EXPECT_TRUE(std::regex_match(expr, m, re)) << expr;
    if (m.size() == 4) {
      EXPECT_EQ(m[1], m[3]) << expr;
      out[m[1]] = std::stod(m[2]);
    }
  }
  return out;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `command` through the shell; its exit status, and its stdout and stderr together.
std::pair<int, std::string> RunShell(const std::string& command, const fs::path& dir) {
  fs::path out = dir / "output.txt";
  int rc = std::system(fmt::format("{} >'{}' 2>&1", command, out.string()).c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ReadFile(out)};
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

TEST_P(RenderMonitoringExample, CountersFileOnEveryGpuNodeCoversWhatTheRulesRead) {
  std::set<std::string> read;
  static const std::regex metric(R"(DCGM_FI_[A-Z0-9_]+)");
  std::string alerts = Find(out_, "", kAlerts)->content;
  for (auto it = std::sregex_iterator(alerts.begin(), alerts.end(), metric); it != std::sregex_iterator(); ++it) {
    read.insert(it->str());
  }
  EXPECT_TRUE(read.count("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"));
  for (const model::Node& n : c_.nodes) {
    const render::RenderedFile* f = Find(out_, n.name, kCounters);
    if (c_.ProfileOf(n).gpu_count() == 0) {
      EXPECT_EQ(f, nullptr) << n.name;
      continue;
    }
    ASSERT_NE(f, nullptr) << n.name;
    std::set<std::string> listed;
    std::istringstream lines(f->content);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::size_t comma = line.find(',');
      ASSERT_NE(comma, std::string::npos) << line;
      EXPECT_EQ(std::count(line.begin(), line.end(), ','), 2) << "three CSV fields: " << line;
      listed.insert(line.substr(0, comma));
    }
    for (const std::string& m : read) EXPECT_TRUE(listed.count(m)) << m << " is read by a rule but not exported on " << n.name;
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
    for (const char* p : {kScrape, kAlerts, kCounters}) ours = ours || rel.ends_with(p);
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

TEST(RenderMonitoring, AlertThresholdsAreTheGuides) {
  model::Cluster c = LoadExample("a100-roce-k8s");
  YAML::Node alerts = Parse(RenderCluster(c), kAlerts);
  ASSERT_TRUE(alerts.IsMap());

  YAML::Node util = Rule(alerts, "GpuUtilizationLow");
  EXPECT_EQ(Str(util["expr"]), "DCGM_FI_DEV_GPU_UTIL < 90");
  EXPECT_EQ(Str(util["for"]), "15m");
  EXPECT_EQ(Str(util["labels"]["severity"]), "warning");
  EXPECT_NE(Str(util["annotations"]["source"]).find("Monitoring: The Unsung Hero"), std::string::npos);

  // Guide 004's 350 W, for its A100s.
  EXPECT_EQ(PowerMarks(alerts), (std::map<std::string, double>{{"A100-80GB", 350}}));

  YAML::Node xid = Rule(alerts, "GpuXidError");
  EXPECT_EQ(Str(xid["expr"]), "DCGM_FI_DEV_XID_ERRORS > 0");
  EXPECT_EQ(Str(xid["labels"]["severity"]), "critical");
  EXPECT_NE(Str(xid["annotations"]["source"]).find("NCCL exports no metric"), std::string::npos);
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

  // HW_SLOWDOWN 0x8, HW_THERMAL_SLOWDOWN 0x40, HW_POWER_BRAKE_SLOWDOWN 0x80; SW_THERMAL 0x20.
  EXPECT_EQ(Str(Rule(alerts, "GpuHardwareSlowdown")["expr"]),
            "(floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / 8) % 2 == 1) or "
            "(floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / 64) % 2 == 1) or "
            "(floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / 128) % 2 == 1)");
  EXPECT_EQ(Str(Rule(alerts, "GpuHardwareSlowdown")["labels"]["severity"]), "critical");
  EXPECT_EQ(Str(Rule(alerts, "GpuThermalSlowdown")["expr"]), "floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / 32) % 2 == 1");
}

// Profiles of three GPU models in one cluster.
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

TEST(RenderMonitoring, PowerMarkIsTheGuidesForA100AndHalfTheTdpOtherwise) {
  YAML::Node alerts = Parse(RenderCluster(LoadYaml(kModels)), kAlerts);
  EXPECT_EQ(PowerMarks(alerts), (std::map<std::string, double>{
                                    {"H200", 350},            // 0.5 x 700 W
                                    {"B200", 500},            // 0.5 x 1000 W
                                    {"A100-PCIE", 150},       // 0.5 x 300 W: 350 W would fire on every busy card
                                    {"a100-40gb-sxm4", 350},  // guide 004
                                }));
  auto rules = Rules(alerts);
  for (auto [it, end] = rules.equal_range("GpuPowerLow"); it != end; ++it) {
    std::string source = Str(it->second["annotations"]["source"]);
    bool a100 = Str(it->second["expr"]).find("a100-40gb-sxm4") != std::string::npos;
    EXPECT_NE(source.find(a100 ? "guide 004's 350 W" : "x the"), std::string::npos) << source;
  }
}

TEST(RenderMonitoring, ThresholdsCanBeOverriddenInValidationThresholds) {
  std::string text = std::string(kModels) + R"(validation:
  thresholds:
    monitoring.gpu_utilization_low.percent: 80
    monitoring.gpu_power_low.watts: 300W
    monitoring.storage_latency_high.seconds: 20ms
)";
  YAML::Node alerts = Parse(RenderCluster(LoadYaml(text)), kAlerts);
  EXPECT_EQ(Str(Rule(alerts, "GpuUtilizationLow")["expr"]), "DCGM_FI_DEV_GPU_UTIL < 80");
  auto rules = Rules(alerts);
  for (auto [it, end] = rules.equal_range("GpuPowerLow"); it != end; ++it) {
    std::string expr = Str(it->second["expr"]);
    EXPECT_NE(expr.find(" < 300 and "), std::string::npos) << expr;
    EXPECT_NE(expr.find(">= 80"), std::string::npos) << expr;
    EXPECT_NE(Str(it->second["annotations"]["source"]).find("validation.thresholds"), std::string::npos);
  }
  EXPECT_NE(Str(Rule(alerts, "StorageReadLatencyHigh")["expr"]).find("> 0.02"), std::string::npos);

  std::string fraction = std::string(kModels) + "validation: {thresholds: {monitoring.gpu_power_low.fraction_of_tdp: 0.75}}\n";
  EXPECT_EQ(PowerMarks(Parse(RenderCluster(LoadYaml(fraction)), kAlerts)),
            (std::map<std::string, double>{{"H200", 525}, {"B200", 750}, {"A100-PCIE", 225}, {"a100-40gb-sxm4", 350}}));
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
  EXPECT_EQ(Targets(scrape, "node-exporter"), (std::vector<Target>{{"10.0.0.1:9100", "c1", ""}, {"10.0.0.2:9100", "c2", ""}}));
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
  EXPECT_EQ(Targets(scrape, "dcgm-exporter"), (std::vector<Target>{{"[fe80::1]:9400", "null", "True"},
                                                                   {"0x1f:9400", "true", "True"},
                                                                   {"[::ffff:198.18.0.1]:9400", "1e3", "0x1F"}}));
  YAML::Node alerts = Parse(out, kAlerts);
  ExpectOnlyQuotedStrings(alerts, "alerts");
  EXPECT_EQ(PowerMarks(alerts), (std::map<std::string, double>{{"True", 150}, {"0x1F", 0.5}}));
}

// Synthetic series for Prometheus' own rule tester: for each rule, GPUs or disks that must fire
// it and others that must not (an idle GPU's low power, idle and SW power cap throttle bits,
// a fast disk). Labels are what the scrape config attaches.
constexpr const char* kRuleTests = R"(rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - {series: 'DCGM_FI_DEV_POWER_USAGE{instance="g:9400",gpu="0",node="gpu01",gpu_model="A100-80GB"}', values: '300x30'}
      - {series: 'DCGM_FI_DEV_POWER_USAGE{instance="g:9400",gpu="1",node="gpu01",gpu_model="A100-80GB"}', values: '60x30'}
      - {series: 'DCGM_FI_DEV_GPU_UTIL{instance="g:9400",gpu="0",node="gpu01",gpu_model="A100-80GB"}', values: '95x30'}
      - {series: 'DCGM_FI_DEV_GPU_UTIL{instance="g:9400",gpu="1",node="gpu01",gpu_model="A100-80GB"}', values: '0x30'}
      - {series: 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{instance="g:9400",gpu="0",node="gpu01",gpu_model="A100-80GB"}', values: '72x30'}
      - {series: 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{instance="g:9400",gpu="1",node="gpu01",gpu_model="A100-80GB"}', values: '5x30'}
      - {series: 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{instance="g:9400",gpu="2",node="gpu01",gpu_model="A100-80GB"}', values: '32x30'}
      - {series: 'DCGM_FI_DEV_XID_ERRORS{instance="g:9400",gpu="0",node="gpu01",gpu_model="A100-80GB"}', values: '0 0 79x28'}
      - {series: 'DCGM_FI_DEV_XID_ERRORS{instance="g:9400",gpu="1",node="gpu01",gpu_model="A100-80GB"}', values: '0x30'}
      - {series: 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{instance="g:9400",gpu="0",node="gpu01",gpu_model="A100-80GB"}', values: '0+1x30'}
      - {series: 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{instance="g:9400",gpu="1",node="gpu01",gpu_model="A100-80GB"}', values: '0x30'}
      - {series: 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{instance="g:9400",gpu="1",node="gpu01",gpu_model="A100-80GB"}', values: '0 0 0 5x27'}
      - {series: 'node_infiniband_link_downed_total{instance="g:9100",node="gpu01",device="mlx5_0",port="1"}', values: '0 0 1x28'}
      - {series: 'node_infiniband_port_errors_received_total{instance="g:9100",node="gpu01",device="mlx5_0",port="1"}', values: '0x30'}
      - {series: 'node_disk_read_time_seconds_total{instance="g:9100",node="gpu01",device="nvme0n1"}', values: '0+3x30'}
      - {series: 'node_disk_reads_completed_total{instance="g:9100",node="gpu01",device="nvme0n1"}', values: '0+100x30'}
      - {series: 'node_disk_read_time_seconds_total{instance="g:9100",node="gpu01",device="nvme1n1"}', values: '0+0.1x30'}
      - {series: 'node_disk_reads_completed_total{instance="g:9100",node="gpu01",device="nvme1n1"}', values: '0+100x30'}
      - {series: 'node_disk_write_time_seconds_total{instance="g:9100",node="gpu01",device="nvme0n1"}', values: '0+0.1x30'}
      - {series: 'node_disk_writes_completed_total{instance="g:9100",node="gpu01",device="nvme0n1"}', values: '0+100x30'}
    alert_rule_test:
      - eval_time: 10m
        alertname: GpuPowerLow
        exp_alerts:
          - exp_labels: {severity: warning, code: gpu_power_low, instance: "g:9400", gpu: "0", node: gpu01, gpu_model: A100-80GB}
      - eval_time: 10m
        alertname: GpuUtilizationLow
        exp_alerts: []
      - eval_time: 20m
        alertname: GpuUtilizationLow
        exp_alerts:
          - exp_labels: {severity: warning, code: gpu_utilization_low, instance: "g:9400", gpu: "1", node: gpu01, gpu_model: A100-80GB}
      - eval_time: 5m
        alertname: GpuHardwareSlowdown
        exp_alerts:
          - exp_labels: {severity: critical, code: gpu_hw_slowdown, instance: "g:9400", gpu: "0", node: gpu01, gpu_model: A100-80GB}
      - eval_time: 10m
        alertname: GpuThermalSlowdown
        exp_alerts:
          - exp_labels: {severity: warning, code: gpu_sw_thermal_slowdown, instance: "g:9400", gpu: "2", node: gpu01, gpu_model: A100-80GB}
      - eval_time: 5m
        alertname: GpuXidError
        exp_alerts:
          - exp_labels: {severity: critical, code: gpu_xid_error, instance: "g:9400", gpu: "0", node: gpu01, gpu_model: A100-80GB}
      - eval_time: 5m
        alertname: NvlinkCrcErrorsRising
        exp_alerts:
          - exp_labels: {severity: warning, code: nvlink_crc_errors, instance: "g:9400", gpu: "0", node: gpu01, gpu_model: A100-80GB}
      - eval_time: 5m
        alertname: PcieReplaysRising
        exp_alerts:
          - exp_labels: {severity: warning, code: pcie_replay_errors, instance: "g:9400", gpu: "1", node: gpu01, gpu_model: A100-80GB}
      - eval_time: 5m
        alertname: RdmaPortErrorsRising
        exp_alerts:
          - exp_labels: {severity: warning, code: rdma_port_errors, instance: "g:9100", node: gpu01, device: mlx5_0, port: "1"}
      - eval_time: 10m
        alertname: StorageReadLatencyHigh
        exp_alerts:
          - exp_labels: {severity: warning, code: storage_read_latency_high, instance: "g:9100", node: gpu01, device: nvme0n1}
      - eval_time: 10m
        alertname: StorageWriteLatencyHigh
        exp_alerts: []
)";

// Prometheus' own tools, where installed: promtool accepts both files, and its rule tester
// fires each rule on the series above and on nothing else. The tester compares annotations
// too, so it runs on a copy of the rules without them; `check rules` has read them already.
TEST(RenderMonitoring, PromtoolAcceptsTheFilesAndTheRulesFireWhereTheyShould) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "promtool is not installed";
  render::Output out = RenderCluster(LoadExample("a100-roce-k8s"));
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("gpuforge-promtool-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "alerts.yml") << Find(out, "", kAlerts)->content;
  // The scrape file holds what prometheus.yml's scrape_configs holds.
  std::ofstream(dir / "prometheus.yml") << "global: {}\n" << Find(out, "", kScrape)->content;
  YAML::Node rules = Parse(out, kAlerts);
  for (YAML::Node g : rules["groups"]) {
    for (YAML::Node r : g["rules"]) r.remove("annotations");
  }
  YAML::Emitter emit;
  emit << rules;
  std::ofstream(dir / "rules.yml") << emit.c_str() << "\n";
  std::ofstream(dir / "tests.yml") << kRuleTests;

  auto [rc1, check] = RunShell(fmt::format("cd '{}' && promtool check rules alerts.yml", dir.string()), dir);
  EXPECT_EQ(rc1, 0) << check;
  auto [rc2, config] = RunShell(fmt::format("cd '{}' && promtool check config --syntax-only prometheus.yml", dir.string()), dir);
  EXPECT_EQ(rc2, 0) << config;
  auto [rc3, tested] = RunShell(fmt::format("cd '{}' && promtool test rules tests.yml", dir.string()), dir);
  EXPECT_EQ(rc3, 0) << tested;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuforge
