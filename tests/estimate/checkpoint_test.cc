#include <gtest/gtest.h>

#include "estimate/cluster_builder.h"
#include "gpuforge/estimate/estimate.h"

namespace gpuforge::estimate {
namespace {

using testing::EstimateOf;
using testing::GuideCluster;

TEST(EstimateCheckpoint, MixedPrecisionAdamIsFourteenBytesAParam) {
  Figure f = EstimateOf(GuideCluster(), "checkpoint.size_bytes");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 70e9 * 14);  // 980 GB
  EXPECT_EQ(f.formula,
            "70B params x 14 bytes (bf16 weights 2 + fp32 master copy 4 + fp32 adam state 8) "
            "= 980 GB");
}

TEST(EstimateCheckpoint, Fp32SgdIsEightBytesAParam) {
  model::Cluster c = GuideCluster();
  c.workload.precision = "fp32";
  c.workload.optimizer = "sgd";
  Figure f = EstimateOf(c, "checkpoint.size_bytes");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 70e9 * 8);
  EXPECT_EQ(f.formula, "70B params x 8 bytes (fp32 weights 4 + fp32 sgd state 4) = 560 GB");
}

TEST(EstimateCheckpoint, WrittenToTheMarkedTier) {
  Figure f = EstimateOf(GuideCluster(), "checkpoint.write_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 980e9 / 40e9);  // 24.5 s
  EXPECT_EQ(f.verdict, "ok");
  EXPECT_EQ(f.formula, "980 GB / 40 GB/s (beegfs) = 24.5 s, limit 2 min (guide 004 FAQ)");
  EXPECT_EQ(f.note, "");
}

TEST(EstimateCheckpoint, UnmarkedFallsBackToTheFirstWarmTier) {
  model::Cluster c = GuideCluster();
  c.storage.tiers[1].checkpoints = false;
  Figure f = EstimateOf(c, "checkpoint.write_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 24.5);
  EXPECT_NE(f.note.find("assumed beegfs (warm)"), std::string::npos) << f.note;
}

TEST(EstimateCheckpoint, NodeTierWritesAShardPerNode) {
  model::Cluster c = GuideCluster();
  c.storage.tiers.erase(c.storage.tiers.begin() + 1);  // no warm tier: the hot NVMe
  Figure f = EstimateOf(c, "checkpoint.write_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 980e9 / (4 * 5e9));  // 49 s
  EXPECT_EQ(f.formula,
            "980 GB / 4 nodes x 5 GB/s (nvme) = 49 s, limit 2 min (guide 004 FAQ)");
}

TEST(EstimateCheckpoint, SlowerThanTwoMinutes) {
  model::Cluster c = GuideCluster();
  c.storage.tiers[1].write_bytes_per_s = 5e9;
  Figure f = EstimateOf(c, "checkpoint.write_s");
  ASSERT_TRUE(f.value);
  EXPECT_DOUBLE_EQ(*f.value, 196);
  EXPECT_EQ(f.verdict, "over 2 min");
}

TEST(EstimateCheckpoint, UnknownWriteBandwidthIsMissing) {
  model::Cluster c = GuideCluster();
  c.storage.tiers[1].write_bytes_per_s = 0;
  Figure f = EstimateOf(c, "checkpoint.write_s");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "storage.tiers[beegfs].write_bandwidth");
}

TEST(EstimateCheckpoint, NoTierIsMissing) {
  model::Cluster c = GuideCluster();
  c.storage.tiers.clear();
  Figure f = EstimateOf(c, "checkpoint.write_s");
  EXPECT_FALSE(f.value);
  EXPECT_EQ(f.missing, "storage.tiers[].checkpoints: true");
}

TEST(EstimateCheckpoint, NoWorkloadIsMissing) {
  model::Cluster c = GuideCluster();
  c.workload.params = 0;
  Estimates e = Estimate(c);
  EXPECT_EQ(testing::FigureOf(e, "checkpoint.size_bytes").missing, "workload.params");
  EXPECT_EQ(testing::FigureOf(e, "checkpoint.write_s").missing, "workload.params");
}

}  // namespace
}  // namespace gpuforge::estimate
