// power.* rules.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::FixtureOptions;
using fixture::LintRule;
using fixture::Override;

TEST(LintPower, RackLimitFires) {
  model::Cluster c = CleanCluster();
  c.site.rack_power_limit_w = 15000;
  c.racks[1].power_limit_w = 40000;  // r02 has its own, larger budget
  std::vector<Finding> f = LintRule(c, "power.rack_limit");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "rack r01 draws 16 kW at full load, above its 15 kW limit (nodes gpu[001-002])");
  EXPECT_EQ(f[0].objects, (std::vector<std::string>{"r01", "gpu001", "gpu002"}));
  EXPECT_EQ(f[0].where.line, 10);
}

TEST(LintPower, RackLimitUsesVendorMaxPower) {
  model::Cluster c = CleanCluster();
  c.profiles[0].max_power_w = 10200;
  std::vector<Finding> f = LintRule(c, "power.rack_limit");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].message,
            "rack r02 draws 20.4 kW at full load, above its 20 kW limit (nodes gpu[003-004])");
}

TEST(LintPower, RackLimitQuietWithinOrWithoutLimit) {
  EXPECT_TRUE(LintRule(CleanCluster(), "power.rack_limit").empty());
  model::Cluster c = CleanCluster();
  c.site.rack_power_limit_w.reset();
  c.nodes[1].rack = "r01";
  c.nodes[2].rack = "r01";
  EXPECT_TRUE(LintRule(c, "power.rack_limit").empty());
}

TEST(LintPower, AirCoolingFires) {
  model::Cluster c = CleanCluster();
  c.site.rack_power_limit_w = 40000;
  c.nodes[2].rack = "r01";
  std::vector<Finding> f = LintRule(c, "power.air_cooling");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "rack r01 is air-cooled and draws 24 kW at full load, above the 20 kW air cooling "
            "handles per rack (nodes gpu[001-003]); use liquid cooling");
}

TEST(LintPower, AirCoolingQuietForLiquidRack) {
  model::Cluster c = CleanCluster();
  c.nodes[2].rack = "r01";
  c.racks[0].cooling = model::Cooling::kLiquid;
  EXPECT_TRUE(LintRule(c, "power.air_cooling").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "power.air_cooling").empty());
}

TEST(LintPower, AirCoolingOverride) {
  model::Cluster c = CleanCluster();
  c.nodes[2].rack = "r01";
  Override(c, "power.air_cooling.max_w", 30000);
  EXPECT_TRUE(LintRule(c, "power.air_cooling").empty());
}

FixtureOptions B200() {
  FixtureOptions o;
  o.gpu_model = "B200";
  o.generation = "blackwell";
  o.gpu_tdp_w = 1000;
  return o;
}

TEST(LintPower, GpuAirCooledFiresPerRack) {
  std::vector<Finding> f = LintRule(CleanCluster(B200()), "power.gpu_air_cooled");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].message,
            "rack r01 is air-cooled and nodes gpu[001-002] hold GPUs of 1 kW or more TDP (B200 at "
            "1 kW); GPUs this hot need liquid cooling");
  EXPECT_EQ(f[0].where.line, 10);
}

TEST(LintPower, GpuAirCooledFiresOnAirSiteWithoutRacks) {
  model::Cluster c = CleanCluster(B200());
  c.racks.clear();
  for (model::Node& n : c.nodes) n.rack.clear();
  std::vector<Finding> f = LintRule(c, "power.gpu_air_cooled");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "the site is air-cooled and nodes gpu[001-004] hold GPUs of 1 kW or more TDP (B200 at "
            "1 kW); GPUs this hot need liquid cooling");
}

TEST(LintPower, GpuAirCooledQuietWhenLiquidOrCooler) {
  model::Cluster c = CleanCluster(B200());
  c.site.cooling = model::Cooling::kLiquid;
  EXPECT_TRUE(LintRule(c, "power.gpu_air_cooled").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "power.gpu_air_cooled").empty());  // H200 at 700 W
}

TEST(LintPower, GpuAirCooledOverride) {
  model::Cluster c = CleanCluster(B200());
  Override(c, "power.gpu_air_cooled.min_tdp_w", 1200);
  EXPECT_TRUE(LintRule(c, "power.gpu_air_cooled").empty());
}

}  // namespace
}  // namespace gpuforge::lint
