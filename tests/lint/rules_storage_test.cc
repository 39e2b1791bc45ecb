// storage.* rules.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::LintRule;
using fixture::Override;

model::Cluster SlowReads() {
  model::Cluster c = CleanCluster();
  c.storage.tiers[0].read_bytes_per_s = 1e9;   // per node
  c.storage.tiers[1].read_bytes_per_s = 10e9;  // aggregate
  return c;
}

TEST(LintStorage, ReadBandwidthFires) {
  std::vector<Finding> f = LintRule(SlowReads(), "storage.read_bandwidth");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "hot and warm tiers deliver 14 GB/s of reads (nvme 1 GB/s per node x 4 nodes, lustre "
            "10 GB/s), below the 32 GB/s that 32 GPUs need at 1 GB/s per GPU (the guide's figure)");
  EXPECT_EQ(f[0].where.line, 80);
}

TEST(LintStorage, ReadBandwidthUsesTheWorkloadsFigure) {
  model::Cluster c = CleanCluster();
  c.workload.read_bytes_per_s_per_gpu = 10e9;
  std::vector<Finding> f = LintRule(c, "storage.read_bandwidth");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "hot and warm tiers deliver 212 GB/s of reads (nvme 28 GB/s per node x 4 nodes, "
            "lustre 100 GB/s), below the 320 GB/s that 32 GPUs need at 10 GB/s per GPU (as the "
            "workload states)");
}

TEST(LintStorage, ReadBandwidthWithOnlyColdTiers) {
  model::Cluster c = CleanCluster();
  c.storage.tiers.erase(c.storage.tiers.begin(), c.storage.tiers.begin() + 2);
  std::vector<Finding> f = LintRule(c, "storage.read_bandwidth");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "there is no hot or warm storage tier, below the 32 GB/s that 32 GPUs need at 1 GB/s "
            "per GPU (the guide's figure)");
}

TEST(LintStorage, ReadBandwidthOverride) {
  model::Cluster c = SlowReads();
  Override(c, "storage.read_bandwidth.min_bytes_per_gpu", 0.25e9);
  EXPECT_TRUE(LintRule(c, "storage.read_bandwidth").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "storage.read_bandwidth").empty());
}

TEST(LintStorage, ReadBandwidthSkipsWithInfo) {
  model::Cluster c = CleanCluster();
  c.storage.tiers.clear();
  std::vector<Finding> f = LintRule(c, "storage.read_bandwidth");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].message, "the inventory describes no storage tiers; storage checks skipped");

  model::Cluster d = CleanCluster();
  d.storage.tiers[0].read_bytes_per_s = 0;
  d.storage.tiers[1].read_bytes_per_s = 0;
  f = LintRule(d, "storage.read_bandwidth");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].message,
            "read bandwidth of storage tiers nvme, lustre is not stated; the read bandwidth check "
            "is skipped");
}

TEST(LintStorage, NfsHotTierFires) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[0].kind = model::StorageKind::kNfs;
  c.storage.tiers[0].scope = model::StorageScope::kCluster;
  std::vector<Finding> f = LintRule(c, "storage.nfs_hot_tier");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "storage tier nvme is NFS serving as the hot tier; NFS cannot take many clients "
            "reading at once; use local NVMe or a parallel file system");
  EXPECT_EQ(f[0].where.line, 81);
}

TEST(LintStorage, NfsHotTierQuietForWarmNfs) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].kind = model::StorageKind::kNfs;
  EXPECT_TRUE(LintRule(c, "storage.nfs_hot_tier").empty());
}

TEST(LintStorage, ObjectTrainingTierFires) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].kind = model::StorageKind::kObject;
  std::vector<Finding> f = LintRule(c, "storage.object_training_tier");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "storage tier lustre is an object store serving as the warm tier; object storage is "
            "for archival and the cold tier, not training reads");
}

TEST(LintStorage, ObjectTrainingTierQuietForColdObjectStore) {
  EXPECT_TRUE(LintRule(CleanCluster(), "storage.object_training_tier").empty());
}

TEST(LintStorage, CapacityFires) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].capacity_bytes = 500e12;
  c.storage.tiers[2].capacity_bytes = 0;
  c.storage.dataset_bytes = 200e12;  // 5x = 1 PB; the tiers hold 561.44 TB
  std::vector<Finding> f = LintRule(c, "storage.capacity");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "storage tiers hold 561.44 TB in all, below 5 x the 200 TB dataset (1 PB)");
}

TEST(LintStorage, CapacityQuietWhenEnoughOrUnknown) {
  EXPECT_TRUE(LintRule(CleanCluster(), "storage.capacity").empty());
  model::Cluster c = CleanCluster();
  c.storage.dataset_bytes.reset();
  EXPECT_TRUE(LintRule(c, "storage.capacity").empty());
}

TEST(LintStorage, CapacityOverride) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].capacity_bytes = 500e12;
  c.storage.tiers[2].capacity_bytes = 0;
  c.storage.dataset_bytes = 200e12;
  Override(c, "storage.capacity.min_dataset_multiple", 2);
  EXPECT_TRUE(LintRule(c, "storage.capacity").empty());
}

TEST(LintStorage, CheckpointTimeFires) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].write_bytes_per_s = 1e9;
  std::vector<Finding> f = LintRule(c, "storage.checkpoint_time");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "a checkpoint of 70B parameters (980 GB at 14 bytes/param) takes 16.333 min to write "
            "to tier lustre at 1 GB/s, above 2 min");
  EXPECT_EQ(f[0].where.line, 82);
}

TEST(LintStorage, CheckpointTimeFallsBackToFirstWarmTier) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].checkpoints = false;
  c.storage.tiers[1].write_bytes_per_s = 1e9;
  EXPECT_EQ(LintRule(c, "storage.checkpoint_time").size(), 1u);
}

TEST(LintStorage, CheckpointTimeQuietWhenFastUnknownOrNoWorkload) {
  EXPECT_TRUE(LintRule(CleanCluster(), "storage.checkpoint_time").empty());
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].write_bytes_per_s = 0;
  EXPECT_TRUE(LintRule(c, "storage.checkpoint_time").empty());
  c.storage.tiers[1].write_bytes_per_s = 1e9;
  c.workload.present = false;
  EXPECT_TRUE(LintRule(c, "storage.checkpoint_time").empty());
}

TEST(LintStorage, CheckpointTimeOverride) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].write_bytes_per_s = 1e9;
  Override(c, "storage.checkpoint_time.max_s", 1200);
  EXPECT_TRUE(LintRule(c, "storage.checkpoint_time").empty());
}

TEST(LintStorage, LatencyFires) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].latency_s = 0.02;
  std::vector<Finding> f = LintRule(c, "storage.latency");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "storage tier lustre (warm) has 20 ms latency, above 10 ms");
}

TEST(LintStorage, LatencyQuietForColdTier) {
  // The object store in the fixture has 50 ms latency, but it is the cold tier.
  EXPECT_TRUE(LintRule(CleanCluster(), "storage.latency").empty());
}

TEST(LintStorage, LatencyOverride) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].latency_s = 0.02;
  Override(c, "storage.latency.max_s", 0.05);
  EXPECT_TRUE(LintRule(c, "storage.latency").empty());
}

}  // namespace
}  // namespace gpuforge::lint
