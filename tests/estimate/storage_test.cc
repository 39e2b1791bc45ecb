#include <gtest/gtest.h>

#include "estimate/cluster_builder.h"
#include "gpuforge/estimate/estimate.h"

namespace gpuforge::estimate {
namespace {

using testing::EstimateOf;
using testing::GuideCluster;

TEST(EstimateStorage, NeedDefaultsToTheGuidesGigabytePerGpu) {
  Figure f = EstimateOf(GuideCluster(), "storage.read_needed_bytes_per_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 32 * 1e9);
  EXPECT_NE(f.formula.find("32 GPUs x 1 GB/s (default from guide 000"), std::string::npos)
      << f.formula;
  EXPECT_NE(f.formula.find("= 32 GB/s"), std::string::npos) << f.formula;
}

TEST(EstimateStorage, StatedNeedWins) {
  model::Cluster c = GuideCluster();
  c.workload.read_bytes_per_s_per_gpu = 2e9;
  Figure f = EstimateOf(c, "storage.read_needed_bytes_per_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 64e9);
  EXPECT_EQ(f.formula, "32 GPUs x 2 GB/s (workload.read_bandwidth_per_gpu) = 64 GB/s");
}

TEST(EstimateStorage, AvailableSumsHotAndWarmWithNodeTiersPerNode) {
  Estimates e = Estimate(GuideCluster());
  Figure have = testing::FigureOf(e, "storage.read_available_bytes_per_s");
  ASSERT_TRUE(have.value);
  EXPECT_DOUBLE_EQ(*have.value, 4 * 25e9 + 60e9);  // the cold s3 tier is not read in training
  EXPECT_EQ(have.formula, "nvme 4 nodes x 25 GB/s + beegfs 60 GB/s = 160 GB/s");
  Figure ratio = testing::FigureOf(e, "storage.read_ratio");
  ASSERT_TRUE(ratio.value);
  EXPECT_DOUBLE_EQ(*ratio.value, 160.0 / 32);
  EXPECT_EQ(ratio.verdict, "ok");
  EXPECT_EQ(ratio.display, "5x");
  EXPECT_EQ(ratio.formula, "160 GB/s / 32 GB/s = 5x");
}

TEST(EstimateStorage, ShortReadBandwidth) {
  model::Cluster c = GuideCluster();
  c.storage.tiers[0].read_bytes_per_s = 3e9;
  c.storage.tiers[1].read_bytes_per_s = 10e9;
  Figure f = EstimateOf(c, "storage.read_ratio");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, (4 * 3e9 + 10e9) / 32e9);  // 0.6875
  EXPECT_EQ(f.verdict, "short");
}

TEST(EstimateStorage, TierWithoutReadFigureIsMissing) {
  model::Cluster c = GuideCluster();
  c.storage.tiers[1].read_bytes_per_s = 0;
  Estimates e = Estimate(c);
  Figure have = testing::FigureOf(e, "storage.read_available_bytes_per_s");
  EXPECT_FALSE(have.value);
  EXPECT_EQ(have.missing, "storage.tiers[beegfs].read_bandwidth");
  EXPECT_EQ(testing::FigureOf(e, "storage.read_ratio").missing,
            "storage.tiers[beegfs].read_bandwidth");
}

TEST(EstimateStorage, NoTiersIsMissing) {
  model::Cluster c = GuideCluster();
  c.storage.tiers.clear();
  Estimates e = Estimate(c);
  EXPECT_EQ(testing::FigureOf(e, "storage.read_available_bytes_per_s").missing,
            "storage.tiers[].role: hot or warm");
  EXPECT_EQ(testing::FigureOf(e, "storage.capacity_ratio").missing,
            "storage.tiers[].role: hot or warm");
}

TEST(EstimateStorage, NoGpusIsMissingNotZero) {
  model::Cluster c = GuideCluster();
  c.profiles[0].gpus.clear();
  Estimates e = Estimate(c);
  Figure need = testing::FigureOf(e, "storage.read_needed_bytes_per_s");
  EXPECT_FALSE(need.value);
  EXPECT_EQ(need.missing, "profiles.hgx-h200.gpus.count");
  EXPECT_FALSE(testing::FigureOf(e, "storage.read_ratio").value);
}

TEST(EstimateStorage, CapacityAgainstTheDataset) {
  Estimates e = Estimate(GuideCluster());
  Figure cap = testing::FigureOf(e, "storage.capacity_bytes");
  ASSERT_TRUE(cap.value);
  EXPECT_DOUBLE_EQ(*cap.value, 4 * 15.36e12 + 128e12);  // 189.44 TB
  EXPECT_EQ(cap.formula, "nvme 4 nodes x 15.36 TB + beegfs 128 TB = 189.44 TB");
  Figure ratio = testing::FigureOf(e, "storage.capacity_ratio");
  ASSERT_TRUE(ratio.value);
  EXPECT_DOUBLE_EQ(*ratio.value, 189.44e12 / 20e12);  // 9.472
  EXPECT_EQ(ratio.verdict, "ok");
  EXPECT_EQ(ratio.formula,
            "189.44 TB / 20 TB dataset = 9.47x, want 5-10x (guide 000, 'Storage')");
}

TEST(EstimateStorage, CapacityBelowFiveTimesTheDataset) {
  model::Cluster c = GuideCluster();
  c.storage.dataset_bytes = 40e12;
  Figure f = EstimateOf(c, "storage.capacity_ratio");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 189.44e12 / 40e12);  // 4.736
  EXPECT_EQ(f.verdict, "below 5x");
}

TEST(EstimateStorage, NoDatasetIsMissing) {
  model::Cluster c = GuideCluster();
  c.storage.dataset_bytes.reset();
  Figure f = EstimateOf(c, "storage.capacity_ratio");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "storage.dataset");
}

TEST(EstimateStorage, ZeroDatasetIsMissingNotInfinite) {
  model::Cluster c = GuideCluster();
  c.storage.dataset_bytes = 0;
  Figure f = EstimateOf(c, "storage.capacity_ratio");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "storage.dataset");
}

TEST(EstimateStorage, OneNodeReadsItsOwnDrives) {
  Figure f = EstimateOf(GuideCluster(1), "storage.read_available_bytes_per_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 25e9 + 60e9);
  EXPECT_EQ(f.formula, "nvme 1 node x 25 GB/s + beegfs 60 GB/s = 85 GB/s");
}

TEST(EstimateStorage, NodeTiersWithoutComputeNodes) {
  model::Cluster c = GuideCluster();
  for (model::Node& n : c.nodes) n.role = model::NodeRole::kLogin;
  c.storage.tiers.erase(c.storage.tiers.begin() + 1);  // only the node-local tier is left
  Figure f = EstimateOf(c, "storage.read_available_bytes_per_s");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "nodes (role: compute)");
}

}  // namespace
}  // namespace gpuforge::estimate
