#include <gtest/gtest.h>

#include "estimate/cluster_builder.h"
#include "gpuforge/estimate/estimate.h"

namespace gpuforge::estimate {
namespace {

using testing::EstimateOf;
using testing::GuideCluster;

TEST(EstimateCost, CapexFromTheGuidesH200Price) {
  Figure f = EstimateOf(GuideCluster(), "cost.capex");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 32 * 35e3);
  EXPECT_EQ(f.formula,
            "32 H200 x 35,000 (default from guide 000, 'GPU Selection' table, USD Q2 2026) "
            "= 1,120,000");
  EXPECT_NE(f.note.find("GPU price only"), std::string::npos);
}

TEST(EstimateCost, StatedCapexWins) {
  model::Cluster c = GuideCluster();
  c.economics.capex = 2e6;
  c.economics.gpu_unit_price = 30e3;
  Figure f = EstimateOf(c, "cost.capex");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 2e6);
  EXPECT_EQ(f.formula, "2,000,000 as stated (cluster.economics.capex)");
  EXPECT_EQ(f.note, "");
}

TEST(EstimateCost, CapexFromTheUnitPrice) {
  model::Cluster c = GuideCluster();
  c.economics.gpu_unit_price = 30e3;
  Figure f = EstimateOf(c, "cost.capex");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 32 * 30e3);
  EXPECT_EQ(f.formula, "32 GPUs x 30,000 (cluster.economics.gpu_unit_price) = 960,000");
}

TEST(EstimateCost, NoGuidePriceForA100IsMissing) {
  model::Cluster c = GuideCluster();
  c.profiles[0].gpus[0] = testing::Gpus("A100", "ampere", 8, 400, 600e9);
  Figure f = EstimateOf(c, "cost.capex");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "cluster.economics.capex or cluster.economics.gpu_unit_price");
  EXPECT_NE(f.note.find("no price for A100"), std::string::npos) << f.note;
}

TEST(EstimateCost, GuidePriceFollowsCatalogueSpellings) {
  model::Cluster c = GuideCluster();
  c.profiles[0].gpus[0].model = "NVIDIA H200-SXM";
  Figure f = EstimateOf(c, "cost.capex");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 32 * 35e3);
}

TEST(EstimateCost, RentDefaultsToTheMiddleOfThreeToFourPerA100Hour) {
  Figure f = EstimateOf(GuideCluster(), "cost.rent_monthly");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 32 * 3.5 * 730);  // 81,760
  EXPECT_NE(f.formula.find("32 GPUs x 3.5/GPU-hour (default from guide 004"), std::string::npos)
      << f.formula;
  EXPECT_NE(f.formula.find("x 730 h = 81,760 per month"), std::string::npos) << f.formula;
  EXPECT_NE(f.note.find("low for H200"), std::string::npos) << f.note;
  EXPECT_NE(f.note.find("= 981,120 per year"), std::string::npos) << f.note;  // 32 x 8760 x 3.5
  EXPECT_NE(f.note.find("0.7135 per GPU-hour"), std::string::npos) << f.note;  // 200e3 / 280,320
}

TEST(EstimateCost, StatedRentHasNoGuideNote) {
  model::Cluster c = GuideCluster();
  c.economics.rent_per_gpu_hour = 6;
  Figure f = EstimateOf(c, "cost.rent_monthly");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 32 * 6 * 730);
  EXPECT_EQ(f.note, "");
}

TEST(EstimateCost, OwnAndBreakEven) {
  model::Cluster c = GuideCluster();
  c.economics.opex_per_year = 120e3;
  Estimates e = Estimate(c);
  Figure own = testing::FigureOf(e, "cost.own_monthly");
  ASSERT_TRUE(own.value);
  EXPECT_NEAR(*own.value, 2803.2 + 10000, 1e-9);
  EXPECT_EQ(own.formula,
            "2,803 power + 120,000 / 12 (cluster.economics.opex_per_year) = 12,803 per month");
  Figure be = testing::FigureOf(e, "cost.break_even_months");
  ASSERT_TRUE(be.value);
  // 1,120,000 / (81,760 - 12,803.2) = 16.24 months
  EXPECT_NEAR(*be.value, 1120000 / (81760 - 12803.2), 1e-9);
  EXPECT_EQ(be.formula, "1,120,000 / (81,760 - 12,803) = 16.2 months");
  EXPECT_EQ(be.display, "16.2 months");
}

TEST(EstimateCost, NoOpexCountsAsZeroAndSaysSo) {
  Figure own = EstimateOf(GuideCluster(), "cost.own_monthly");
  ASSERT_TRUE(own.value);
  EXPECT_NEAR(*own.value, 2803.2, 1e-9);
  EXPECT_NE(own.formula.find("not set, counted as 0"), std::string::npos) << own.formula;
}

TEST(EstimateCost, RentingCheaperThanRunningNeverBreaksEven) {
  model::Cluster c = GuideCluster();
  c.economics.rent_per_gpu_hour = 0.1;  // 2,336 per month, below the 2,803 power bill
  Figure f = EstimateOf(c, "cost.break_even_months");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.display, "n/a");
  EXPECT_EQ(f.missing, "");
  EXPECT_NE(f.note.find("never pays back"), std::string::npos) << f.note;
}

TEST(EstimateCost, NoPowerPriceLeavesOwnAndBreakEvenMissing) {
  model::Cluster c = GuideCluster();
  c.site.power_price_per_kwh.reset();
  Estimates e = Estimate(c);
  EXPECT_EQ(testing::FigureOf(e, "cost.own_monthly").missing, "cluster.site.power_price_per_kwh");
  EXPECT_EQ(testing::FigureOf(e, "cost.break_even_months").missing,
            "cluster.site.power_price_per_kwh");
  EXPECT_TRUE(testing::FigureOf(e, "cost.rent_monthly").value);
}

TEST(EstimateCost, NoGpusLeavesRentMissing) {
  model::Cluster c = GuideCluster();
  c.profiles[0].gpus.clear();
  Estimates e = Estimate(c);
  EXPECT_EQ(testing::FigureOf(e, "cost.capex").missing, "cluster.economics.capex");
  EXPECT_EQ(testing::FigureOf(e, "cost.rent_monthly").missing, "profiles.hgx-h200.gpus.count");
}

}  // namespace
}  // namespace gpuforge::estimate
