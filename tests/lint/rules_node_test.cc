// node.* rules.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::FixtureOptions;
using fixture::GpuProfile;
using fixture::LintRule;
using fixture::Override;

TEST(LintNode, RamPerGpuFires) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).memory_bytes = 256e9;
  std::vector<Finding> f = LintRule(c, "node.ram_per_gpu");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "profile hgx (nodes gpu[001-004]) has 256 GB of RAM for 8 GPUs (32 GB per GPU), below "
            "64 GB per GPU (512 GB per node)");
  EXPECT_EQ(f[0].where.line, 20);
}

TEST(LintNode, RamPerGpuQuietWhenEnoughOrUnknown) {
  EXPECT_TRUE(LintRule(CleanCluster(), "node.ram_per_gpu").empty());
  model::Cluster c = CleanCluster();
  GpuProfile(c).memory_bytes = 512e9;  // exactly the bound
  EXPECT_TRUE(LintRule(c, "node.ram_per_gpu").empty());
  GpuProfile(c).memory_bytes = 0;  // not stated
  EXPECT_TRUE(LintRule(c, "node.ram_per_gpu").empty());
}

TEST(LintNode, RamPerGpuOverride) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).memory_bytes = 256e9;
  Override(c, "node.ram_per_gpu.min_bytes_per_gpu", 32e9);
  EXPECT_TRUE(LintRule(c, "node.ram_per_gpu").empty());
}

TEST(LintNode, GpusPerNodeFires) {
  FixtureOptions o;
  o.gpus_per_node = 4;
  std::vector<Finding> f = LintRule(CleanCluster(o), "node.gpus_per_node");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "profile hgx (nodes gpu[001-004]) has 4 GPUs per node, below 8; fewer GPUs per node "
            "push more traffic across the network");
}

TEST(LintNode, GpusPerNodeQuietForOneNodeOrEight) {
  FixtureOptions o;
  o.gpus_per_node = 4;
  o.nodes = 1;
  EXPECT_TRUE(LintRule(CleanCluster(o), "node.gpus_per_node").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "node.gpus_per_node").empty());
}

TEST(LintNode, GpusPerNodeOverride) {
  FixtureOptions o;
  o.gpus_per_node = 4;
  model::Cluster c = CleanCluster(o);
  Override(c, "node.gpus_per_node.min_gpus", 4);
  EXPECT_TRUE(LintRule(c, "node.gpus_per_node").empty());
}

TEST(LintNode, NumaMismatchGpusWithoutNic) {
  model::Cluster c = CleanCluster();
  for (model::NicSpec& nic : GpuProfile(c).nics) nic.numa_node = 0;
  std::vector<Finding> f = LintRule(c, "node.numa_mismatch");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "profile hgx (nodes gpu[001-004]): GPUs on NUMA node 1 have no compute NIC there; GPU "
            "traffic crosses NUMA nodes (up to 30% slower)");
}

TEST(LintNode, NumaMismatchNicWithoutGpu) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).nics[3].numa_node = 2;
  std::vector<Finding> f = LintRule(c, "node.numa_mismatch");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "profile hgx (nodes gpu[001-004]): compute NIC mlx5_3 sits on NUMA node 2, which has "
            "no GPU; GPU traffic crosses NUMA nodes (up to 30% slower)");
}

TEST(LintNode, NumaMismatchQuietWhenAlignedOrUnknown) {
  EXPECT_TRUE(LintRule(CleanCluster(), "node.numa_mismatch").empty());
  model::Cluster c = CleanCluster();
  for (model::NicSpec& nic : GpuProfile(c).nics) nic.numa_node = 0;
  GpuProfile(c).gpus[0].numa_nodes.clear();  // GPU placement unknown: nothing to compare
  EXPECT_TRUE(LintRule(c, "node.numa_mismatch").empty());
  model::Cluster d = CleanCluster();
  GpuProfile(d).nics[0].numa_node.reset();  // one compute NIC's placement unknown
  for (model::NicSpec& nic : GpuProfile(d).nics) {
    if (nic.numa_node) nic.numa_node = 0;
  }
  EXPECT_TRUE(LintRule(d, "node.numa_mismatch").empty());
}

}  // namespace
}  // namespace gpuforge::lint
