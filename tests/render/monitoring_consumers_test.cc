// The monitoring files held against their real consumers: the counters file parsed the way
// dcgm-exporter reads it (Go encoding/csv, then ExtractCounters) and every name checked
// against the field names each pinned exporter release accepts (tests/data/dcgm-exporter/);
// the alert rules run through Prometheus' promtool on synthetic series that must fire and
// must stay quiet (tests/data/prometheus/); the Slurm prolog/epilog run by bash against a
// scratch mapping directory, and what they leave read as the exporter's hpcMapper reads it.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
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

#include "gpuforge/model/slurm_roles.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/render/monitoring.h"
#include "gpuforge/render/render.h"
#include "gpuforge/model/xid.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/plan/node_plan.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAlerts = "/etc/prometheus/gpuforge-alerts.yml";
constexpr const char* kScrape = "/etc/prometheus/gpuforge-scrape.yml";

model::Cluster LoadExample(const std::string& name) {
  inventory::LoadOutcome out =
      inventory::LoadFile(std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/" + name + ".yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

render::Output RenderCluster(const model::Cluster& c) {
  render::Options o;
  o.templates_dir = std::string(GPUFORGE_SOURCE_DIR) + "/templates";
  o.inventory_label = "test.yaml";
  Result<render::Output> out = render::Render(c, o);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? std::move(*out) : render::Output{};
}

const render::RenderedFile* Find(const render::Output& out, const std::string& node, std::string_view path) {
  for (const render::RenderedFile& f : out.files) {
    if (f.node == node && f.path == path) return &f;
  }
  return nullptr;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path Data(const std::string& rel) { return fs::path(GPUFORGE_TEST_DATA_DIR) / rel; }

std::set<std::string> Lines(const fs::path& p) {
  std::set<std::string> out;
  std::istringstream in(ReadFile(p));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

fs::path ScratchDir(const std::string& name) {
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("gpuforge-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs `command` through the shell; its exit status, and its stdout and stderr together.
std::pair<int, std::string> RunShell(const std::string& command, const fs::path& dir) {
  fs::path out = dir / "output.txt";
  int rc = std::system(fmt::format("{} >'{}' 2>&1", command, out.string()).c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ReadFile(out)};
}

// ---- the counters file, as dcgm-exporter reads it ----

struct Counter {
  std::string name, type, help;
};

// Go's encoding/csv with Comment = '#' (internal/pkg/counters/counter_config.go, ReadCSVFile),
// then ExtractCounters: every record has the first record's field count, which must be 3;
// fields are trimmed of spaces; a name go-dcgm does not know must be one of the exporter's own
// counters; a DCGM field's type must be in promMetricType (counters/variables.go). Stricter
// than Go in one way: any '"' is refused, where Go only refuses a bare one.
bool ReadCounters(const std::string& text, const std::set<std::string>& dcgm_fields,
                  const std::set<std::string>& exporter_fields, std::vector<Counter>* out, std::string* err) {
  static const std::set<std::string> kTypes = {"gauge", "counter", "histogram", "summary", "label"};
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
  };
  std::istringstream in(text);
  std::size_t per_record = 0;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    if (line.find('"') != std::string::npos) {
      *err = fmt::format("line {}: a quote in `{}`", line_no, line);
      return false;
    }
    std::vector<std::string> fields;
    std::size_t pos = 0;
    for (std::size_t comma; (comma = line.find(',', pos)) != std::string::npos; pos = comma + 1) {
      fields.push_back(trim(line.substr(pos, comma - pos)));
    }
    fields.push_back(trim(line.substr(pos)));
    if (per_record == 0) per_record = fields.size();
    if (fields.size() != per_record) {
      *err = fmt::format("line {}: wrong number of fields (csv.ErrFieldCount)", line_no);
      return false;
    }
    if (fields.size() != 3) {
      *err = fmt::format("line {}: malformed CSV record, expected 3 fields: `{}`", line_no, line);
      return false;
    }
    const bool dcgm = dcgm_fields.count(fields[0]) > 0;
    if (!dcgm && exporter_fields.count(fields[0]) == 0) {
      *err = fmt::format("line {}: could not find DCGM field '{}'", line_no, fields[0]);
      return false;
    }
    if (dcgm && kTypes.count(fields[1]) == 0) {
      *err = fmt::format("line {}: could not find Prometheus metric type '{}'", line_no, fields[1]);
      return false;
    }
    out->push_back({fields[0], fields[1], fields[2]});
  }
  return true;
}

class DcgmCounters : public ::testing::Test {
 protected:
  std::set<std::string> accepted_ = Lines(Data("dcgm-exporter/fields-accepted-4.4.2-to-4.5.3.txt"));
  std::set<std::string> exporter_ = Lines(Data("dcgm-exporter/exporter-fields-4.5.3-4.8.2.txt"));
};

TEST_F(DcgmCounters, TheReaderRefusesWhatTheExporterRefuses) {
  ASSERT_GT(accepted_.size(), 500u);
  std::vector<Counter> got;
  std::string err;
  EXPECT_FALSE(ReadCounters("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, gauge, x\n", accepted_, exporter_, &got, &err));
  EXPECT_NE(err.find("could not find DCGM field 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS'"), std::string::npos) << err;
  EXPECT_FALSE(ReadCounters("DCGM_FI_DEV_GPU_UTIL, gauge, a, b\n", accepted_, exporter_, &got, &err));
  EXPECT_FALSE(ReadCounters("DCGM_FI_DEV_GPU_UTIL, gague, x\n", accepted_, exporter_, &got, &err));
  EXPECT_NE(err.find("metric type 'gague'"), std::string::npos) << err;
  EXPECT_FALSE(ReadCounters("DCGM_FI_DEV_GPU_UTIL, gauge, x\nDCGM_FI_DEV_GPU_TEMP, gauge\n", accepted_, exporter_, &got,
                            &err));
  EXPECT_FALSE(ReadCounters("DCGM_FI_DEV_GPU_UTIL, gauge, say \"hi\"\n", accepted_, exporter_, &got, &err));
  got.clear();
  EXPECT_TRUE(ReadCounters("# c\n\nDCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, x\nDCGM_EXP_XID_ERRORS_COUNT , gauge, y\n",
                           accepted_, exporter_, &got, &err))
      << err;
  EXPECT_EQ(got.size(), 2u);
}

// Every GPU node's file: parses as the exporter parses it, names only fields every pinned
// release accepts, holds the exporter's own default and profiling lists, and what the rules read.
TEST_F(DcgmCounters, EveryExampleFileIsAcceptedByEveryPinnedRelease) {
  std::vector<Counter> defaults, dcp;
  std::string err;
  ASSERT_TRUE(ReadCounters(ReadFile(Data("dcgm-exporter/default-counters-4.5.3-4.8.2.csv")), accepted_, exporter_,
                           &defaults, &err))
      << err;
  ASSERT_TRUE(ReadCounters(ReadFile(Data("dcgm-exporter/dcp-metrics-included-4.5.3-4.8.2.csv")), accepted_, exporter_,
                           &dcp, &err))
      << err;
  for (const char* example : {"a100-roce-k8s", "h200-ib-32gpu", "h200-single-node"}) {
    SCOPED_TRACE(example);
    model::Cluster c = LoadExample(example);
    render::Output out = RenderCluster(c);
    std::set<std::string> read;
    static const std::regex metric(R"(DCGM_(FI|EXP)_[A-Z0-9_]+)");
    const std::string alerts = Find(out, "", kAlerts)->content;
    for (auto it = std::sregex_iterator(alerts.begin(), alerts.end(), metric); it != std::sregex_iterator(); ++it) {
      read.insert(it->str());
    }
    EXPECT_TRUE(read.count("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"));
    EXPECT_TRUE(read.count("DCGM_EXP_XID_ERRORS_COUNT"));
    EXPECT_FALSE(read.count("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"));
    int files = 0;
    for (const model::Node& n : c.nodes) {
      const render::RenderedFile* f = Find(out, n.name, render::kDcgmCountersPath);
      if (c.ProfileOf(n).gpu_count() == 0) {
        EXPECT_EQ(f, nullptr) << n.name;
        continue;
      }
      ASSERT_NE(f, nullptr) << n.name;
      ++files;
      EXPECT_NE(f->content.find(fmt::format("dcgm-exporter {}", render::kDcgmExporterVersion)), std::string::npos);
      std::vector<Counter> got;
      ASSERT_TRUE(ReadCounters(f->content, accepted_, exporter_, &got, &err)) << n.name << ": " << err;
      std::set<std::string> names;
      for (const Counter& x : got) EXPECT_TRUE(names.insert(x.name).second) << x.name << " listed twice";
      for (const Counter& x : defaults) EXPECT_TRUE(names.count(x.name)) << x.name << " of the exporter's defaults is missing";
      for (const Counter& x : dcp) EXPECT_TRUE(names.count(x.name)) << x.name << " of the exporter's DCP list is missing";
      for (const std::string& m : read) EXPECT_TRUE(names.count(m)) << m << " is read by a rule but not exported";
    }
    EXPECT_GT(files, 0);
  }
}

// ---- the alert rules, through promtool ----

bool HavePromtool() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

// The rules without their annotations: promtool's rule tester compares annotations too, and
// `promtool check rules` has read them on the full file already. `from` -> `to` in every
// expression, for the negative cases; true in *replaced when it was found.
std::string WithoutAnnotations(const std::string& alerts, const std::string& from = "", const std::string& to = "",
                               bool* replaced = nullptr) {
  YAML::Node rules = YAML::Load(alerts);
  for (YAML::Node g : rules["groups"]) {
    for (YAML::Node r : g["rules"]) {
      r.remove("annotations");
      std::string expr = r["expr"].as<std::string>();
      if (std::size_t at = from.empty() ? std::string::npos : expr.find(from); at != std::string::npos) {
        expr.replace(at, from.size(), to);
        r["expr"] = expr;
        if (replaced != nullptr) *replaced = true;
      }
    }
  }
  YAML::Emitter emit;
  emit << rules;
  return std::string(emit.c_str()) + "\n";
}

struct PromtoolCase {
  std::string example;
  std::string tests;  // under tests/data/prometheus/
};

class PromtoolRules : public ::testing::TestWithParam<PromtoolCase> {};

TEST_P(PromtoolRules, EveryRuleFiresOnItsSeriesAndStaysQuietOnTheOthers) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool is not installed (Debian: prometheus)";
  render::Output out = RenderCluster(LoadExample(GetParam().example));
  const render::RenderedFile* alerts = Find(out, "", kAlerts);
  ASSERT_NE(alerts, nullptr);
  fs::path dir = ScratchDir("promtool-" + GetParam().example);
  std::ofstream(dir / "alerts.yml") << alerts->content;
  std::ofstream(dir / "prometheus.yml") << "global: {}\n" << Find(out, "", kScrape)->content;
  std::ofstream(dir / "rules.yml") << WithoutAnnotations(alerts->content);
  fs::copy_file(Data("prometheus/" + GetParam().tests), dir / "tests.yml");

  auto [rc1, check] = RunShell(fmt::format("cd '{}' && promtool check rules alerts.yml", dir.string()), dir);
  EXPECT_EQ(rc1, 0) << check;
  auto [rc2, config] = RunShell(fmt::format("cd '{}' && promtool check config --syntax-only prometheus.yml", dir.string()), dir);
  EXPECT_EQ(rc2, 0) << config;
  auto [rc3, tested] = RunShell(fmt::format("cd '{}' && promtool test rules tests.yml", dir.string()), dir);
  EXPECT_EQ(rc3, 0) << tested;

  // Every rendered alert has a case where it fires; the series around it are the quiet cases.
  std::set<std::string> rendered, firing;
  for (const YAML::Node& g : YAML::Load(alerts->content)["groups"]) {
    for (const YAML::Node& r : g["rules"]) rendered.insert(r["alert"].as<std::string>());
  }
  for (const YAML::Node& t : YAML::LoadFile((dir / "tests.yml").string())["tests"]) {
    for (const YAML::Node& a : t["alert_rule_test"]) {
      if (a["exp_alerts"] && a["exp_alerts"].size() > 0) firing.insert(a["alertname"].as<std::string>());
    }
  }
  for (const std::string& name : rendered) EXPECT_TRUE(firing.count(name)) << name << " has no case where it fires";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Examples, PromtoolRules,
                         ::testing::Values(PromtoolCase{"h200-ib-32gpu", "h200-ib-32gpu-test.yml"},
                                           PromtoolCase{"a100-roce-k8s", "a100-roce-k8s-test.yml"}),
                         [](const ::testing::TestParamInfo<PromtoolCase>& p) {
                           std::string s = p.param.example;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// The tests above can fail: a rule that pages on application Xid 13, or takes a down port for
// an active one, fails them; a rule promtool cannot parse fails `check rules`.
TEST(PromtoolRulesNegative, BrokenRulesFail) {
  if (!HavePromtool()) GTEST_SKIP() << "promtool is not installed (Debian: prometheus)";
  render::Output out = RenderCluster(LoadExample("h200-ib-32gpu"));
  const std::string alerts = Find(out, "", kAlerts)->content;
  fs::path dir = ScratchDir("promtool-negative");
  fs::copy_file(Data("prometheus/h200-ib-32gpu-test.yml"), dir / "tests.yml");
  auto broken = [&](const std::string& from, const std::string& to) {
    bool replaced = from.empty();
    std::ofstream(dir / "rules.yml") << WithoutAnnotations(alerts, from, to, &replaced);
    EXPECT_TRUE(replaced) << from;
    return RunShell(fmt::format("cd '{}' && promtool test rules tests.yml", dir.string()), dir);
  };
  auto [rc_ok, ok] = broken("", "");
  EXPECT_EQ(rc_ok, 0) << ok;
  auto [rc_xid, xid] = broken("xid=~\"48|", "xid=~\"13|48|");
  EXPECT_NE(rc_xid, 0) << "a rule that pages on Xid 13 passed:\n" << xid;
  auto [rc_port, port] = broken("!= 4", "!= 1");
  EXPECT_NE(rc_port, 0) << "a port rule blind to down ports passed:\n" << port;
  auto [rc_idle, idle] = broken("DCGM_FI_DEV_GPU_UTIL{hpc_job!=\"\"}", "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_NE(rc_idle, 0) << "a utilisation rule that fires on idle GPUs passed:\n" << idle;

  std::ofstream(dir / "bad.yml") << "groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: \"up ==\"\n";
  auto [rc_bad, bad] = RunShell(fmt::format("cd '{}' && promtool check rules bad.yml", dir.string()), dir);
  EXPECT_NE(rc_bad, 0) << bad;
  fs::remove_all(dir);
}

// The allowlist in the rule is the project's catalogue of hardware Xids (model/xid.h, which the
// GPU health probe judges by), no more, no less.
TEST(RenderMonitoringXid, AllowlistIsTheProbesHardwareCatalogue) {
  render::Output out = RenderCluster(LoadExample("h200-ib-32gpu"));
  const std::string alerts = Find(out, "", kAlerts)->content;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(alerts, m, std::regex(R"re(DCGM_EXP_XID_ERRORS_COUNT\{xid=~\\"([0-9|]+)\\"\})re")))
      << alerts;
  std::set<int> listed;
  std::stringstream ss(m[1].str());
  for (std::string code; std::getline(ss, code, '|');) listed.insert(std::stoi(code));
  std::set<int> hardware;
  for (int code = 0; code <= 1000; ++code) {
    if (model::IsHardwareXid(code)) hardware.insert(code);
  }
  EXPECT_EQ(listed, hardware);
  for (int app : {13, 31, 43, 45}) EXPECT_FALSE(listed.count(app)) << app;
  // #28 item 10: 63 (a remap recorded) and 92 (a high single-bit rate) are informational.
  for (int info : {63, 92}) EXPECT_FALSE(listed.count(info)) << info;
  for (int hw : {48, 64, 74, 79, 94, 95, 119, 120}) EXPECT_TRUE(listed.count(hw)) << hw;
}

// ---- the Slurm prolog/epilog pair ----

std::string Script(const render::Output& out, const std::string& node, std::string_view path, const fs::path& map_dir) {
  const render::RenderedFile* f = Find(out, node, path);
  EXPECT_NE(f, nullptr) << node << ":" << path;
  if (f == nullptr) return "";
  EXPECT_EQ(f->mode, "0755") << path;
  std::string text = f->content;
  const std::string dir(render::kDcgmJobMapDir);
  EXPECT_NE(text.find("dir=" + dir + "\n"), std::string::npos);
  for (std::size_t at; (at = text.find("dir=" + dir)) != std::string::npos;) text.replace(at, 4 + dir.size(), "dir='" + map_dir.string() + "'");
  return text;
}

// What the exporter's hpcMapper reads: files named by an integer GPU index (getGPUFiles,
// strconv.Atoi), each a list of job ids, one per line (readFile).
std::map<int, std::vector<std::string>> Mapping(const fs::path& dir) {
  std::map<int, std::vector<std::string>> out;
  if (!fs::exists(dir)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::istringstream in(ReadFile(e.path()));
    std::vector<std::string>& jobs = out[std::stoi(name)];
    for (std::string line; std::getline(in, line);) jobs.push_back(line);
  }
  return out;
}

TEST(RenderMonitoringJobMap, PrologWritesWhatTheExporterReadsAndEpilogTakesItBack) {
  render::Output out = RenderCluster(LoadExample("h200-ib-32gpu"));
  fs::path dir = ScratchDir("jobmap");
  fs::path map = dir / "map";
  std::ofstream(dir / "prolog.sh") << Script(out, "gpu001", render::kDcgmJobMapProlog, map);
  std::ofstream(dir / "epilog.sh") << Script(out, "gpu001", render::kDcgmJobMapEpilog, map);
  const std::string prolog = Find(out, "gpu001", render::kDcgmJobMapProlog)->content;
  EXPECT_TRUE(prolog.starts_with("#!/bin/bash\n"));
  EXPECT_NE(prolog.find("Prolog=/etc/slurm/prolog.d/*"), std::string::npos);
  EXPECT_NE(prolog.find(fmt::format("--hpc-job-mapping-dir {}", render::kDcgmJobMapDir)), std::string::npos);
  EXPECT_NE(Find(out, "gpu001", render::kDcgmExporterDropIn)->content.find(
                fmt::format("--hpc-job-mapping-dir {}", render::kDcgmJobMapDir)),
            std::string::npos);

  auto run = [&](const char* script, const std::string& env) {
    return RunShell(fmt::format("cd '{}' && env -i PATH=/usr/bin:/bin {} bash ./{}", dir.string(), env, script), dir);
  };
  EXPECT_EQ(RunShell(fmt::format("bash -n '{}' && bash -n '{}'", (dir / "prolog.sh").string(), (dir / "epilog.sh").string()), dir).first, 0);

  auto [rc1, o1] = run("prolog.sh", "SLURM_JOB_ID=4242 SLURM_JOB_GPUS=0,3");
  EXPECT_EQ(rc1, 0) << o1;
  auto [rc2, o2] = run("prolog.sh", "SLURM_JOB_ID=4343 SLURM_JOB_GPUS=5");
  EXPECT_EQ(rc2, 0) << o2;
  using Map = std::map<int, std::vector<std::string>>;
  EXPECT_EQ(Mapping(map), (Map{{0, {"4242"}}, {3, {"4242"}}, {5, {"4343"}}}));
  for (const fs::directory_entry& e : fs::directory_iterator(map)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << "a temporary file was left: " << e.path();
  }

  // A job without GPUs, or with hostile values, changes nothing and still exits 0.
  EXPECT_EQ(run("prolog.sh", "SLURM_JOB_ID=1").first, 0);
  EXPECT_EQ(run("prolog.sh", "'SLURM_JOB_ID=1;x' SLURM_JOB_GPUS=1").first, 0);
  EXPECT_EQ(run("prolog.sh", "SLURM_JOB_ID=7 'SLURM_JOB_GPUS=../x,1a'").first, 0);
  EXPECT_EQ(Mapping(map), (Map{{0, {"4242"}}, {3, {"4242"}}, {5, {"4343"}}}));

  // The epilog takes back its own job's files only.
  auto [rc3, o3] = run("epilog.sh", "SLURM_JOB_ID=4242 SLURM_JOB_GPUS=0,3,5");
  EXPECT_EQ(rc3, 0) << o3;
  EXPECT_EQ(Mapping(map), (Map{{5, {"4343"}}}));
  EXPECT_EQ(run("epilog.sh", "SLURM_JOB_ID=4343 SLURM_JOB_GPUS=5").first, 0);
  EXPECT_TRUE(Mapping(map).empty());

  // A directory it cannot create does not fail the job.
  std::ofstream(dir / "file") << "x";
  std::ofstream(dir / "prolog-bad.sh") << Script(out, "gpu001", render::kDcgmJobMapProlog, dir / "file" / "map");
  EXPECT_EQ(run("prolog-bad.sh", "SLURM_JOB_ID=9 SLURM_JOB_GPUS=0").first, 0);
  fs::remove_all(dir);
}

// Every slurmd node: slurm.conf's Prolog glob fails (and drains the node) where it matches nothing.
TEST(RenderMonitoringJobMap, EverySlurmdNodeGetsThePair) {
  for (const char* example : {"a100-roce-k8s", "h200-ib-32gpu", "h200-single-node"}) {
    SCOPED_TRACE(example);
    model::Cluster c = LoadExample(example);
    render::Output out = RenderCluster(c);
    const bool slurm = c.software.scheduler.kind == model::SchedulerKind::kSlurm;
    for (const model::Node& n : c.nodes) {
      const std::vector<const model::Node*> slurmd = model::SlurmdNodes(c);
      const bool want = slurm && std::find(slurmd.begin(), slurmd.end(), &n) != slurmd.end();
      EXPECT_EQ(Find(out, n.name, render::kDcgmJobMapProlog) != nullptr, want) << n.name;
      EXPECT_EQ(Find(out, n.name, render::kDcgmJobMapEpilog) != nullptr, want) << n.name;
    }
  }
}

}  // namespace
}  // namespace gpuforge

namespace gpuforge {
namespace {

// ---- the exporter as a host service: the package's unit with gpuforge's drop-in ----

void WriteFile(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

// The last ExecStart= line of a unit or drop-in: the one systemd runs after a reset.
std::string LastExecStart(const std::string& text) {
  std::string last;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("ExecStart=")) last = line.substr(10);
  }
  return last;
}

TEST(RenderMonitoringExporterUnit, SystemdReadsTheDropInOverThePackagesUnitAndThePresetEnablesIt) {
  if (RunShell("systemd-analyze --version", fs::temp_directory_path()).first != 0) GTEST_SKIP() << "no systemd-analyze here";
  render::Output out = RenderCluster(LoadExample("h200-ib-32gpu"));
  const render::RenderedFile* dropin = Find(out, "gpu001", render::kDcgmExporterDropIn);
  const render::RenderedFile* preset = Find(out, "gpu001", "/etc/systemd/system-preset/50-gpuforge.preset");
  ASSERT_NE(dropin, nullptr);
  ASSERT_NE(preset, nullptr);
  EXPECT_EQ(Find(out, "head01", render::kDcgmExporterDropIn), nullptr) << "no GPUs, no exporter";
  // What the exporter runs with: gpuforge's counters, nvidia-dcgm's host engine instead of an
  // embedded second one (dcgm-exporter pkg/cmd/app.go: UseRemoteHE only when -r is set), and
  // the Slurm job labels the prolog writes.
  const std::string exec = LastExecStart(dropin->content);
  EXPECT_EQ(exec, fmt::format("/usr/bin/dcgm-exporter -f {} -r {} --hpc-job-mapping-dir {}", render::kDcgmCountersPath,
                              render::kDcgmHostEngine, render::kDcgmJobMapDir));
  EXPECT_NE(dropin->content.find("\nExecStart=\nExecStart="), std::string::npos) << "reset before it is set again";
  EXPECT_NE(preset->content.find("enable nvidia-dcgm-exporter.service"), std::string::npos) << preset->content;

  fs::path root = ScratchDir("exporter-unit");
  const fs::path lib = root / "usr/lib/systemd/system";
  const fs::path etc = root / "etc/systemd/system";
  WriteFile(lib / "nvidia-dcgm-exporter.service", ReadFile(Data("dcgm-exporter/nvidia-dcgm-exporter.service")));
  // A stand-in for the DCGM package's unit that Requires= names.
  WriteFile(lib / "nvidia-dcgm.service",
            "[Unit]\nDescription=stand-in\n[Service]\nExecStart=/usr/bin/true\n[Install]\nWantedBy=multi-user.target\n");
  WriteFile(root / "etc/systemd/system-preset/50-gpuforge.preset", preset->content);
  auto verify = [&] {
    return RunShell(fmt::format("env SYSTEMD_UNIT_PATH='{}:{}:' systemd-analyze verify --man=no --generators=no '{}'",
                                etc.string(), lib.string(), (lib / "nvidia-dcgm-exporter.service").string()),
                    root);
  };
  // The check can fail: a drop-in that sets ExecStart without the reset is refused by systemd
  // (Type=simple allows one ExecStart).
  std::string no_reset = dropin->content;
  no_reset.erase(no_reset.find("\nExecStart=\n"), 11);
  WriteFile(etc / "nvidia-dcgm-exporter.service.d/gpuforge.conf", no_reset);
  EXPECT_NE(verify().second.find("more than one ExecStart"), std::string::npos) << verify().second;
  // The rendered drop-in: systemd's parser has nothing to say about it.
  WriteFile(etc / "nvidia-dcgm-exporter.service.d/gpuforge.conf", dropin->content);
  auto [rc, text] = verify();
  EXPECT_EQ(text.find("gpuforge.conf:"), std::string::npos) << text;
  EXPECT_EQ(text.find("more than one ExecStart"), std::string::npos) << text;
  auto [prc, ptext] = RunShell(fmt::format("systemctl --root='{}' preset nvidia-dcgm-exporter.service", root.string()), root);
  EXPECT_EQ(prc, 0) << ptext;
  EXPECT_TRUE(fs::is_symlink(etc / "multi-user.target.wants/nvidia-dcgm-exporter.service")) << ptext;
  fs::remove_all(root);
}

TEST(RenderMonitoringExporterUnit, PlannedPinnedAndRestartedWhereItRunsOnTheHost) {
  model::Cluster c = LoadExample("h200-ib-32gpu");
  const model::Node* gpu = c.FindNode("gpu001");
  ASSERT_NE(gpu, nullptr);
  auto exporter = [](const std::vector<plan::DesiredPackage>& pkgs) -> const plan::DesiredPackage* {
    for (const plan::DesiredPackage& p : pkgs) {
      if (p.name == render::kDcgmExporterPackage) return &p;
    }
    return nullptr;
  };
  const std::vector<plan::DesiredPackage> pkgs = plan::DesiredPackages(c, *gpu, plan::OsFamily::kDebian);
  const plan::DesiredPackage* pkg = exporter(pkgs);
  ASSERT_NE(pkg, nullptr);
  EXPECT_EQ(plan::InstallSpec(plan::OsFamily::kDebian, *pkg), "datacenter-gpu-manager-exporter=4.8.2-*");
  EXPECT_EQ(plan::InstallSpec(plan::OsFamily::kRhel, *pkg), "datacenter-gpu-manager-exporter-4.8.2");
  // The pinned package is the release the counters file was checked against.
  EXPECT_NE(std::string(render::kDcgmExporterImage).find(fmt::format("-{}-", render::kDcgmExporterPackageVersion)),
            std::string::npos);
  // Both files restart it; a node without the host unit runs the handler as a no-op.
  for (std::string_view path : {render::kDcgmExporterDropIn, render::kDcgmCountersPath}) {
    const plan::ImpactRule& r = plan::ImpactFor(path);
    EXPECT_NE(r.handler.find("systemctl try-restart nvidia-dcgm-exporter.service"), std::string::npos) << path;
    EXPECT_NE(r.handler.find("systemctl cat nvidia-dcgm-exporter.service"), std::string::npos) << path;
  }
  // Kubernetes: the GPU Operator's DaemonSet runs the exporter (and holds :9400); no host unit.
  model::Cluster k8s = LoadExample("a100-roce-k8s");
  render::Output kout = RenderCluster(k8s);
  bool counters = false;
  for (const render::RenderedFile& f : kout.files) {
    EXPECT_NE(f.path, render::kDcgmExporterDropIn) << f.node;
    if (f.path == render::kDcgmCountersPath) counters = true;
    if (f.path == "/etc/systemd/system-preset/50-gpuforge.preset") {
      EXPECT_EQ(f.content.find("nvidia-dcgm-exporter"), std::string::npos) << f.node;
    }
  }
  EXPECT_TRUE(counters) << "the counters file is still rendered, for the Operator's ConfigMap";
  for (const model::Node& n : k8s.nodes) EXPECT_EQ(exporter(plan::DesiredPackages(k8s, n, plan::OsFamily::kDebian)), nullptr);
  // Without software.cuda no DCGM is planned, so no exporter either.
  c.software.cuda_version.clear();
  EXPECT_EQ(exporter(plan::DesiredPackages(c, *gpu, plan::OsFamily::kDebian)), nullptr);
  EXPECT_EQ(Find(RenderCluster(c), "gpu001", render::kDcgmExporterDropIn), nullptr);
}

}  // namespace
}  // namespace gpuforge
