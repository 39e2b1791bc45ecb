// roce.* rules (src/lint/rules_roce.cc) on small inventories, each broken in one place.

#include <gtest/gtest.h>

#include <string>

#include "cluster_builder.h"
#include "gpuforge/inventory/loader.h"

namespace gpuforge::lint {
namespace {

using fixture::LintRule;

constexpr std::string_view kBase = R"y(version: 1
cluster: {name: t}
networks:
  r: {role: compute, kind: roce, rate: 400Gb/s, roce: {dscp: 26, pfc_priority: 3}}
profiles:
  p:
    gpus: {model: H200, count: 8}
    nics:
      - {name: "mlx5_[0-1]", kind: roce, rate: 400Gb/s, network: r, netdev: [eth1, eth2]}
nodes:
  - name: "gpu[1-2]"
    profile: p
    port_addresses: {mlx5_0: "198.18.8.[1-2]/24", mlx5_1: "198.18.8.[11-12]/24"}
software: {nccl: {env: {NCCL_IB_TC: 104}}}
)y";

model::Cluster Load(std::string_view from = "", std::string_view to = "") {
  std::string y(kBase);
  if (!from.empty()) {
    std::size_t at = y.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) y.replace(at, from.size(), to);
  }
  inventory::LoadOutcome out = inventory::LoadString(y, "inv.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

TEST(RulesRoce, CleanInventoryHasNoFindings) {
  model::Cluster c = Load();
  for (const char* rule : {"roce.ports", "roce.nccl", "roce.qos"}) EXPECT_TRUE(LintRule(c, rule).empty()) << rule;
}

TEST(RulesRoce, PortWithoutNetdevOrAddress) {
  model::Cluster c = Load("    port_addresses: {mlx5_0: \"198.18.8.[1-2]/24\", mlx5_1: \"198.18.8.[11-12]/24\"}\n", "");
  std::vector<Finding> f = LintRule(c, "roce.ports");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_NE(f[0].message.find("RoCE NIC mlx5_0 of profile 'p' has no address on nodes gpu[1-2]"), std::string::npos)
      << f[0].message;
  model::Cluster d = Load(", netdev: [eth1, eth2]}", ", netdev: [eth1, a-very-long-interface-name]}");
  f = LintRule(d, "roce.ports");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_NE(f[0].message.find("longer than 15 characters"), std::string::npos) << f[0].message;
}

TEST(RulesRoce, TrafficClassMustMatchTheDscp) {
  model::Cluster c = Load("NCCL_IB_TC: 104", "NCCL_IB_TC: 106");
  std::vector<Finding> f = LintRule(c, "roce.nccl");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_NE(f[0].message.find("NCCL_IB_TC=106 but network r marks RoCE with DSCP 26, which is traffic class 104"),
            std::string::npos)
      << f[0].message;
}

TEST(RulesRoce, FixedGidIndexWithoutAPinWarns) {
  model::Cluster c = Load("NCCL_IB_TC: 104", "NCCL_IB_TC: 104, NCCL_IB_GID_INDEX: 3");
  std::vector<Finding> f = LintRule(c, "roce.nccl");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_NE(f[0].message.find("NCCL_IB_GID_INDEX=3 is fixed in software.nccl.env"), std::string::npos) << f[0].message;
  // Pinned on the network to the same index: deliberate, no finding.
  model::Cluster d = Load("pfc_priority: 3}", "pfc_priority: 3, gid_index: 3}");
  d.software.nccl_env.push_back({"NCCL_IB_GID_INDEX", "3"});
  EXPECT_TRUE(LintRule(d, "roce.nccl").empty());
}

TEST(RulesRoce, QosCollidingWithCongestionNotifications) {
  std::vector<Finding> f = LintRule(Load("pfc_priority: 3", "pfc_priority: 6"), "roce.qos");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("PFC on priority 6"), std::string::npos) << f[0].message;
  f = LintRule(Load("dscp: 26", "dscp: 48"), "roce.qos");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("DSCP 48"), std::string::npos) << f[0].message;
  f = LintRule(Load("pfc_priority: 3}", "pfc_priority: 3, ecn: false}"), "roce.qos");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
}

}  // namespace
}  // namespace gpuforge::lint
