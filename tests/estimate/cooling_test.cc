#include <gtest/gtest.h>

#include "estimate/cluster_builder.h"
#include "gpuforge/estimate/estimate.h"

namespace gpuforge::estimate {
namespace {

using testing::EstimateOf;
using testing::GuideCluster;

TEST(EstimateCooling, AirRackUnderTwentyKilowattsIsOk) {
  Figure f = EstimateOf(GuideCluster(), "cooling.rack.r1");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 16000);
  EXPECT_EQ(f.verdict, "ok");
  EXPECT_EQ(f.formula, "air-cooled, 16 kW <= 20 kW air limit (guide 000, 'Cooling and Power')");
}

TEST(EstimateCooling, ThreeGuideNodesNeedLiquid) {
  // Guide 000's FAQ: 3 nodes per air-cooled rack; at its own 8 kW per node that is 24 kW.
  model::Cluster c = GuideCluster();
  c.nodes[2].rack = "r1";
  c.racks[0].power_limit_w = 30e3;  // the power feed is not the problem here
  Estimates e = Estimate(c);
  EXPECT_EQ(testing::FigureOf(e, "power.rack_w.r1").verdict, "ok");
  Figure f = testing::FigureOf(e, "cooling.rack.r1");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 24000);
  EXPECT_EQ(f.verdict, "liquid cooling needed");
  EXPECT_EQ(f.formula, "air-cooled, 24 kW > 20 kW air limit (guide 000, 'Cooling and Power')");
  EXPECT_NE(f.note.find("(18 kW)"), std::string::npos) << f.note;
  EXPECT_NE(f.note.find("3 x 8 kW = 24 kW"), std::string::npos) << f.note;
}

// #28 item 12: the FAQ's H200 figures are no note for a rack of B200 nodes.
TEST(EstimateCooling, TheH200NoteIsOnlyForRacksOfH200) {
  model::Cluster c = GuideCluster();
  c.nodes[2].rack = "r1";
  c.racks[0].power_limit_w = 30e3;
  for (model::Profile& p : c.profiles) {
    for (model::GpuSpec& g : p.gpus) g.model = "B200";
  }
  Figure f = EstimateOf(c, "cooling.rack.r1");
  EXPECT_EQ(f.verdict, "liquid cooling needed");
  EXPECT_EQ(f.note, "") << "no H200 in the rack";
}

TEST(EstimateCooling, LiquidRackIsOk) {
  model::Cluster c = GuideCluster();
  c.nodes[2].rack = "r1";
  c.racks[0].cooling = model::Cooling::kLiquid;
  Figure f = EstimateOf(c, "cooling.rack.r1");
  EXPECT_EQ(f.verdict, "ok");
  EXPECT_EQ(f.formula, "liquid-cooled, 24 kW");
}

TEST(EstimateCooling, SiteCoolingIsTheDefault) {
  model::Cluster c = GuideCluster();
  c.nodes[2].rack = "r1";
  c.site.cooling = model::Cooling::kLiquid;
  EXPECT_EQ(EstimateOf(c, "cooling.rack.r1").verdict, "ok");
}

TEST(EstimateCooling, UnknownRackLoadIsMissing) {
  model::Cluster c = GuideCluster();
  c.profiles[0].gpus[0].tdp_w = 0;
  Figure f = EstimateOf(c, "cooling.rack.r1");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.verdict, "");
  EXPECT_EQ(f.missing, "profiles.hgx-h200.gpus.tdp");
}

TEST(EstimateCooling, UnrackedNodesAreNamedNotJudged) {
  model::Cluster c = GuideCluster();
  c.nodes[3].rack = "";
  Figure f = EstimateOf(c, "cooling.unracked");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "nodes[].rack");
  EXPECT_NE(f.note.find("8 kW"), std::string::npos) << f.note;
  EXPECT_EQ(Estimate(GuideCluster()).Find("cooling.unracked"), nullptr);
}

}  // namespace
}  // namespace gpuforge::estimate
