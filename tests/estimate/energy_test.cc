#include <gtest/gtest.h>

#include "estimate/cluster_builder.h"
#include "gpuforge/estimate/estimate.h"

namespace gpuforge::estimate {
namespace {

using testing::EstimateOf;
using testing::GuideCluster;

TEST(EstimateEnergy, GuideClusterMonth) {
  Estimates e = Estimate(GuideCluster());
  Figure kwh = testing::FigureOf(e, "energy.monthly_kwh");
  ASSERT_TRUE(kwh.value);
  EXPECT_DOUBLE_EQ(*kwh.value, 32 * 730);  // 32 kW x 730 h x PUE 1
  EXPECT_EQ(kwh.formula, "32 kW x 730 h x PUE 1 = 23,360 kWh");
  EXPECT_EQ(kwh.display, "23,360 kWh");
  EXPECT_NE(kwh.note.find("PUE 1"), std::string::npos);

  Figure cost = testing::FigureOf(e, "energy.monthly_cost");
  ASSERT_TRUE(cost.value);
  EXPECT_NEAR(*cost.value, 32 * 730 * 0.12, 1e-9);  // 2,803.2, not the guide's $8,000
  EXPECT_EQ(cost.unit, "currency/month");
  EXPECT_EQ(cost.formula, "23,360 kWh x 0.12/kWh = 2,803 per month");
  EXPECT_EQ(cost.display, "2,803 per month");
  // The guide's own example shape: the note corrects it.
  EXPECT_NE(cost.note.find("$8,000/month"), std::string::npos) << cost.note;
  EXPECT_NE(cost.note.find("= 2,803"), std::string::npos) << cost.note;
  EXPECT_NE(cost.note.find("= 22,426"), std::string::npos) << cost.note;  // 256 x 730 x 0.12
}

TEST(EstimateEnergy, PueScalesTheEnergy) {
  model::Cluster c = GuideCluster();
  c.site.pue = 1.3;
  Figure kwh = EstimateOf(c, "energy.monthly_kwh");
  ASSERT_TRUE(kwh.value);
  EXPECT_NEAR(*kwh.value, 32 * 730 * 1.3, 1e-9);  // 30,368
  EXPECT_EQ(kwh.formula, "32 kW x 730 h x PUE 1.3 = 30,368 kWh");
  EXPECT_EQ(kwh.note, "");
}

TEST(EstimateEnergy, NoGuideNoteWhenTheInputsAreNotTheGuides) {
  model::Cluster c = GuideCluster();
  c.site.power_price_per_kwh = 0.2;
  c.profiles[0].other_power_w = 4400;  // 10 kW per 8 GPUs
  Figure cost = EstimateOf(c, "energy.monthly_cost");
  ASSERT_TRUE(cost.value);
  EXPECT_NEAR(*cost.value, 40 * 730 * 0.2, 1e-9);
  EXPECT_EQ(cost.note, "");
}

TEST(EstimateEnergy, NoPriceMeansNoCost) {
  model::Cluster c = GuideCluster();
  c.site.power_price_per_kwh.reset();
  Estimates e = Estimate(c);
  EXPECT_TRUE(testing::FigureOf(e, "energy.monthly_kwh").value);
  Figure cost = testing::FigureOf(e, "energy.monthly_cost");
  EXPECT_FALSE(cost.value);
  EXPECT_EQ(cost.missing, "cluster.site.power_price_per_kwh");
}

TEST(EstimateEnergy, UnknownPowerCarriesItsMissingInputs) {
  model::Cluster c = GuideCluster();
  c.nodes.clear();
  Estimates e = Estimate(c);
  EXPECT_EQ(testing::FigureOf(e, "energy.monthly_kwh").missing, "nodes");
  EXPECT_EQ(testing::FigureOf(e, "energy.monthly_cost").missing,
            "nodes, cluster.site.power_price_per_kwh");
}

TEST(EstimateEnergy, ZeroPueIsMissingNotZero) {
  model::Cluster c = GuideCluster();
  c.site.pue = 0;
  Figure kwh = EstimateOf(c, "energy.monthly_kwh");
  EXPECT_FALSE(kwh.value);
  EXPECT_EQ(kwh.missing, "cluster.site.pue");
}

}  // namespace
}  // namespace gpuforge::estimate
