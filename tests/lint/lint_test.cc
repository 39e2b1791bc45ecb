// The lint engine: registry, overrides, disabling, ordering, and the clean fixture.

#include "gpuforge/lint/lint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::Dump;
using fixture::FixtureOptions;
using fixture::Of;
using fixture::Override;

// "<area>.<name>": lower-case letters, digits and '_', one dot.
bool IsRuleId(std::string_view id) {
  std::size_t dot = id.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == id.size()) return false;
  if (id.find('.', dot + 1) != std::string_view::npos) return false;
  for (char ch : id) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
    if (!ok) return false;
  }
  return true;
}

TEST(LintEngine, CleanFixtureHasNoErrorsOrWarnings) {
  LintResult r = Lint(CleanCluster());
  EXPECT_EQ(r.errors, 0u) << Dump(r);
  EXPECT_EQ(r.warnings, 0u) << Dump(r);
  EXPECT_EQ(r.infos, 0u) << Dump(r);
}

TEST(LintEngine, LargerCleanFixtureHasNoErrorsOrWarnings) {
  FixtureOptions o;
  o.nodes = 16;  // 128 GPUs: at the NCCL_ALGO and RoCE boundaries, on InfiniBand
  o.nics_per_node = 8;
  LintResult r = Lint(CleanCluster(o));
  EXPECT_EQ(r.errors, 0u) << Dump(r);
  EXPECT_EQ(r.warnings, 0u) << Dump(r);
}

TEST(LintRegistry, IdsAreUniqueAndEveryRuleIsDescribed) {
  std::set<std::string_view> ids;
  for (const Rule& r : Rules()) {
    SCOPED_TRACE(std::string(r.id));
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id";
    EXPECT_TRUE(IsRuleId(r.id)) << "ids are <area>.<snake_case>";
    EXPECT_FALSE(r.summary.empty());
    EXPECT_FALSE(r.source.empty());
    EXPECT_TRUE(r.source.find("000_bf90931f775ecd9c.txt") != std::string_view::npos ||
                r.source.find("004_910c09f65559b553.txt") != std::string_view::npos)
        << "source names a guide file: " << r.source;
    EXPECT_NE(r.check, nullptr);
    std::set<std::string_view> params;
    for (const ParamSpec& p : r.params) {
      EXPECT_TRUE(params.insert(p.name).second) << "duplicate param " << p.name;
      EXPECT_EQ(p.name.find('.'), std::string_view::npos) << "param names have no dots";
      EXPECT_FALSE(p.unit.empty()) << p.name;
      EXPECT_FALSE(p.doc.empty()) << p.name;
      EXPECT_GE(p.default_value, 0) << p.name;
    }
  }
  EXPECT_GE(Rules().size(), 40u);
}

TEST(LintRegistry, OrderIsTheDocumentedOne) {
  // Areas appear in this order and each area's rules are contiguous.
  const std::vector<std::string> areas = {"gpu",   "node",    "fabric",   "network",
                                          "power", "storage", "software", "nccl",
                                          "roce",  "k8s",   "slurm",   "workload"};
  std::size_t at = 0;
  for (const Rule& r : Rules()) {
    std::string area(r.id.substr(0, r.id.find('.')));
    while (at < areas.size() && areas[at] != area) ++at;
    ASSERT_LT(at, areas.size()) << r.id << " is out of area order";
  }
  EXPECT_EQ(Rules().front().id, "gpu.mixed_models");
  EXPECT_EQ(Rules().data(), Rules().data()) << "one table, built once";
}

TEST(LintRegistry, FindRule) {
  ASSERT_NE(FindRule("fabric.ethernet_scale"), nullptr);
  EXPECT_EQ(FindRule("fabric.ethernet_scale")->severity, Severity::kError);
  EXPECT_EQ(FindRule("fabric.nope"), nullptr);
  EXPECT_EQ(FindRule("lint.config"), nullptr) << "the engine's own findings are not a rule";
}

TEST(LintRegistry, EveryRuleIsInTheDocs) {
  std::ifstream in(std::string(GPUFORGE_SOURCE_DIR) + "/docs/lint.md");
  ASSERT_TRUE(in) << "docs/lint.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  std::map<std::string, std::string> rows;  // id -> table row
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    // Table rows of the rule table start with "| `<id>` |".
    if (!line.starts_with("| `")) continue;
    std::size_t end = line.find("` |", 3);
    if (end == std::string::npos) continue;
    std::string id = line.substr(3, end - 3);
    if (IsRuleId(id)) rows[id] = line;
  }
  for (const Rule& r : Rules()) {
    SCOPED_TRACE(std::string(r.id));
    auto it = rows.find(std::string(r.id));
    ASSERT_NE(it, rows.end()) << "no table row in docs/lint.md";
    EXPECT_NE(it->second.find(ToString(r.severity)), std::string::npos) << it->second;
    for (const ParamSpec& p : r.params) {
      EXPECT_NE(it->second.find(std::string(p.name)), std::string::npos)
          << "param " << p.name << " not in the row";
    }
    EXPECT_TRUE(it->second.find("000") != std::string::npos ||
                it->second.find("004") != std::string::npos)
        << "row names its source guide";
  }
  EXPECT_TRUE(rows.count("lint.config"));
  EXPECT_EQ(rows.size(), Rules().size() + 1) << "docs list a rule the registry lacks";
  EXPECT_NE(doc.find("## Where the guides disagree"), std::string::npos);
}

TEST(LintEngine, UnknownRuleInThresholdsIsAConfigError) {
  model::Cluster c = CleanCluster();
  Override(c, "fabric.ethernet_scal.max_gpus", 32, 207);
  LintResult r = Lint(c);
  std::vector<Finding> f = Of(r, "lint.config");
  ASSERT_EQ(f.size(), 1u) << Dump(r);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "unknown lint threshold 'fabric.ethernet_scal.max_gpus': there is no rule "
            "'fabric.ethernet_scal'; did you mean 'fabric.ethernet_scale.max_gpus'?");
  EXPECT_EQ(f[0].where.line, 207);
  EXPECT_EQ(f[0].where.file, "cluster.yaml");
  EXPECT_EQ(f[0].objects, std::vector<std::string>{"fabric.ethernet_scal.max_gpus"});
  EXPECT_EQ(r.errors, 1u);
}

TEST(LintEngine, UnknownParamInThresholdsIsAConfigError) {
  model::Cluster c = CleanCluster();
  Override(c, "fabric.ethernet_scale.max_gpu", 32);
  std::vector<Finding> f = Of(Lint(c), "lint.config");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "unknown lint threshold 'fabric.ethernet_scale.max_gpu': rule fabric.ethernet_scale "
            "has no parameter 'max_gpu'; did you mean 'fabric.ethernet_scale.max_gpus'?");
  EXPECT_EQ(f[0].where.line, 200);
}

TEST(LintEngine, ParamOnParamlessRuleListsNone) {
  model::Cluster c = CleanCluster();
  Override(c, "fabric.l2_topology.max", 1);
  std::vector<Finding> f = Of(Lint(c), "lint.config");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "unknown lint threshold 'fabric.l2_topology.max': rule fabric.l2_topology has no "
            "parameter 'max' (it has none)");
}

TEST(LintEngine, ThresholdNamingOnlyARule) {
  model::Cluster c = CleanCluster();
  Override(c, "nccl.algo", 64);
  std::vector<Finding> f = Of(Lint(c), "lint.config");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "lint threshold 'nccl.algo' names a rule but no parameter; write 'nccl.algo.<param>' "
            "(it has large_cluster_gpus)");
}

TEST(LintEngine, NegativeThresholdIsAConfigError) {
  model::Cluster c = CleanCluster();
  Override(c, "power.air_cooling.max_w", -5);
  std::vector<Finding> f = Of(Lint(c), "lint.config");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "lint threshold 'power.air_cooling.max_w' is -5; thresholds must be zero or more");
}

// #28 item 1: an override is read in its parameter's unit. A size for a rate ("400GB" once became
// a 400 GB/s = 3.2 Tb/s floor) or a size for a time ("2GB" turned the rule off) is an error;
// a quantity of the right kind is converted, a plain number taken as the unit itself.
TEST(LintEngine, AThresholdOfTheWrongKindIsAConfigError) {
  model::Cluster c = CleanCluster();
  auto text = [&](const std::string& key, const std::string& written, int line) {
    c.lint.thresholds.values[key] = 1;  // whatever the loader made of it
    c.lint.thresholds.text[key] = written;
    c.lint.thresholds.where[key] = fixture::At(line);
  };
  text("fabric.nic_rate.min_bytes_per_s", "400GB", 210);
  text("storage.checkpoint_time.max_s", "2GB", 211);
  text("fabric.ethernet_scale.max_gpus", "2GB", 212);
  LintResult r = Lint(c);
  std::vector<Finding> f = Of(r, "lint.config");
  ASSERT_EQ(f.size(), 3u) << Dump(r);
  EXPECT_EQ(f[0].message,
            "lint threshold 'fabric.ethernet_scale.max_gpus': '2GB' is a size, and the threshold is a number "
            "(GPUs): write a plain number");
  EXPECT_EQ(f[1].message,
            "lint threshold 'fabric.nic_rate.min_bytes_per_s': '400GB' is a size, and the threshold is a bandwidth "
            "in bytes/s: write it like 400Gb/s or 50GB/s, or a plain number of bytes/s");
  EXPECT_EQ(f[1].where.line, 210);
  EXPECT_EQ(f[2].message,
            "lint threshold 'storage.checkpoint_time.max_s': '2GB' is a size, and the threshold is a duration in s: "
            "write it like 100us, 10ms or 2min, or a plain number of s");
  EXPECT_EQ(r.errors, 3u);

  model::Cluster ok = CleanCluster();
  ok.lint.thresholds.values["storage.checkpoint_time.max_s"] = 600;
  ok.lint.thresholds.text["storage.checkpoint_time.max_s"] = "10min";
  ok.lint.thresholds.where["storage.checkpoint_time.max_s"] = fixture::At(213);
  ok.lint.thresholds.values["fabric.nic_rate.min_bytes_per_s"] = 50e9;
  ok.lint.thresholds.text["fabric.nic_rate.min_bytes_per_s"] = "400Gb/s";
  ok.lint.thresholds.where["fabric.nic_rate.min_bytes_per_s"] = fixture::At(214);
  EXPECT_TRUE(Of(Lint(ok), "lint.config").empty()) << Dump(Lint(ok));
}

TEST(LintEngine, UnknownDisabledIdIsAConfigError) {
  model::Cluster c = CleanCluster();
  c.lint.disabled = {"nccl.debugg", "nccl.debug"};
  c.lint.thresholds.where["disable:nccl.debugg"] = fixture::At(231);  // as the loader files it
  std::vector<Finding> f = Of(Lint(c), "lint.config");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "unknown lint rule 'nccl.debugg' in lint.disable; did you mean "
            "'nccl.debug'?");
  EXPECT_EQ(f[0].where.file, "cluster.yaml");
  EXPECT_EQ(f[0].where.line, 231);
}

TEST(LintEngine, FarOffNamesGetNoSuggestion) {
  model::Cluster c = CleanCluster();
  c.lint.disabled = {"zzz"};
  std::vector<Finding> f = Of(Lint(c), "lint.config");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "unknown lint rule 'zzz' in lint.disable");
}

TEST(LintEngine, DisabledRuleDoesNotRun) {
  FixtureOptions h100;  // driver 535 is new enough for an H100 (software.gpu_minimums), not an H200
  h100.gpu_model = "H100";
  model::Cluster c = CleanCluster(h100);
  c.software.driver_branch = "535";
  c.software.driver_version = "535.104.05";
  EXPECT_EQ(Of(Lint(c), "software.driver_branch").size(), 1u);
  c.lint.disabled = {"software.driver_branch"};
  LintResult r = Lint(c);
  EXPECT_TRUE(Of(r, "software.driver_branch").empty());
  EXPECT_EQ(r.errors, 0u) << Dump(r);
}

TEST(LintEngine, FindingsAreSortedBySeverityAndCounted) {
  FixtureOptions h100;  // driver 535 is new enough for an H100 (software.gpu_minimums), not an H200
  h100.gpu_model = "H100";
  model::Cluster c = CleanCluster(h100);
  fixture::SetEnv(c, "NCCL_DEBUG", "INFO");  // info
  fixture::SetEnv(c, "NCCL_IB_TIMEOUT", "18");  // warning
  c.software.driver_version = "535.104.05";  // error (and a branch mismatch warning)
  c.software.driver_branch = "";
  LintResult r = Lint(c);
  ASSERT_GE(r.findings.size(), 3u);
  for (std::size_t i = 1; i < r.findings.size(); ++i) {
    EXPECT_GE(r.findings[i - 1].severity, r.findings[i].severity) << Dump(r);
  }
  EXPECT_EQ(r.errors + r.warnings + r.infos, r.findings.size());
  EXPECT_EQ(r.errors, 1u) << Dump(r);
  EXPECT_EQ(r.warnings, 1u) << Dump(r);
  EXPECT_EQ(r.infos, 1u) << Dump(r);
  EXPECT_EQ(r.findings.front().rule, "software.driver_branch");
  EXPECT_EQ(r.findings.back().rule, "nccl.debug");
}

// A cluster that breaks many rules at once: every finding is one line, carries its rule's
// source, and points somewhere in the inventory.
model::Cluster Broken() {
  FixtureOptions o;
  o.nodes = 6;
  o.gpus_per_node = 4;
  o.net_kind = model::NetKind::kEthernet;
  o.nics_per_node = 1;
  o.nic_rate = 100 * fixture::kGbps;
  model::Cluster c = CleanCluster(o);
  c.networks[0].topology = model::Topology::kL2;
  c.networks.pop_back();
  c.storage.tiers[0].kind = model::StorageKind::kNfs;
  c.storage.tiers[1].latency_s = 0.05;
  c.storage.tiers[1].write_bytes_per_s = 1e9;
  c.software.driver_branch = "535";
  c.software.driver_version = "535.1";
  c.software.nccl_env = {{"NCCL_ALGO", "Tree"}, {"NCCL_DEBUG", "TRACE"}};
  c.software.scheduler.kind = model::SchedulerKind::kKubernetes;
  c.workload.parallelism = model::Parallelism{1, 8, 4};
  c.workload.params = 7e9;
  c.site.cooling = model::Cooling::kAir;
  c.racks[0].power_limit_w = 5000;
  c.links.pop_back();
  return c;
}

TEST(LintEngine, FindingsAreOneLineWithSourceAndPosition) {
  LintResult r = Lint(Broken());
  std::cout << Dump(r);
  EXPECT_GE(r.findings.size(), 12u) << Dump(r);
  for (const Finding& f : r.findings) {
    SCOPED_TRACE(f.rule + ": " + f.message);
    EXPECT_EQ(f.message.find('\n'), std::string::npos);
    EXPECT_FALSE(f.message.empty());
    const Rule* rule = FindRule(f.rule);
    ASSERT_NE(rule, nullptr);
    EXPECT_EQ(f.source, rule->source);
    EXPECT_EQ(f.where.file, "cluster.yaml");
  }
}

TEST(LintEngine, DisablingEveryRuleLeavesNothing) {
  model::Cluster c = Broken();
  for (const Rule& r : Rules()) c.lint.disabled.emplace_back(r.id);
  LintResult r = Lint(c);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
}

TEST(LintEngine, EmptyClusterIsQuiet) {
  model::Cluster c;
  c.source_file = "empty.yaml";
  LintResult r = Lint(c);
  EXPECT_EQ(r.errors, 0u) << Dump(r);
  EXPECT_EQ(r.warnings, 0u) << Dump(r);
  // Only the "no storage tiers" note.
  ASSERT_EQ(r.infos, 1u) << Dump(r);
  EXPECT_EQ(r.findings[0].rule, "storage.read_bandwidth");
  EXPECT_EQ(r.findings[0].where.file, "empty.yaml");
}

TEST(LintEngine, SeverityNames) {
  EXPECT_STREQ(ToString(Severity::kInfo), "info");
  EXPECT_STREQ(ToString(Severity::kWarning), "warning");
  EXPECT_STREQ(ToString(Severity::kError), "error");
}

}  // namespace
}  // namespace gpuforge::lint
