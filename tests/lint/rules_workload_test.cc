// workload.* rules.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::GpuProfile;
using fixture::LintRule;
using fixture::Override;

TEST(LintWorkload, TensorAcrossNodesFires) {
  model::Cluster c = CleanCluster();
  c.workload.parallelism = model::Parallelism{2, 16, 1};
  std::vector<Finding> f = LintRule(c, "workload.tensor_across_nodes");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "tensor parallelism 16 is larger than the 8 GPUs per node; tensor-parallel groups "
            "would talk over the network instead of NVLink");
  EXPECT_EQ(f[0].where.line, 120);
}

TEST(LintWorkload, TensorAcrossNodesQuietWithinNodeOrWithoutWorkload) {
  EXPECT_TRUE(LintRule(CleanCluster(), "workload.tensor_across_nodes").empty());
  model::Cluster c = CleanCluster();
  c.workload.parallelism.tensor = 16;
  c.workload.present = false;
  EXPECT_TRUE(LintRule(c, "workload.tensor_across_nodes").empty());
}

TEST(LintWorkload, TensorWithoutNvlinkFires) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).gpus[0].model = "L40S";
  GpuProfile(c).gpus[0].nvlink_bytes_per_s = 0;
  std::vector<Finding> f = LintRule(c, "workload.tensor_without_nvlink");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "tensor parallelism 8 on nodes gpu[001-004] whose L40S GPUs have no NVLink; tensor "
            "parallelism needs NVLink inside the node");
}

TEST(LintWorkload, TensorWithoutNvlinkQuietWithoutTensorParallelism) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).gpus[0].nvlink_bytes_per_s = 0;
  c.workload.parallelism = model::Parallelism{32, 1, 1};
  EXPECT_TRUE(LintRule(c, "workload.tensor_without_nvlink").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "workload.tensor_without_nvlink").empty());
}

TEST(LintWorkload, ParallelismProductFires) {
  model::Cluster c = CleanCluster();
  c.workload.parallelism = model::Parallelism{2, 8, 1};
  std::vector<Finding> f = LintRule(c, "workload.parallelism_product");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "data 2 x tensor 8 x pipeline 1 = 16 ranks, but the cluster has 32 GPUs");
}

TEST(LintWorkload, ParallelismProductQuietWhenEqual) {
  EXPECT_TRUE(LintRule(CleanCluster(), "workload.parallelism_product").empty());
}

TEST(LintWorkload, PipelineSmallModelFires) {
  model::Cluster c = CleanCluster();
  c.workload.parallelism = model::Parallelism{2, 8, 2};
  std::vector<Finding> f = LintRule(c, "workload.pipeline_small_model");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].message,
            "pipeline parallelism 2 for a 70B-parameter model; the guide adds pipeline "
            "parallelism only from 100B parameters");
}

TEST(LintWorkload, PipelineSmallModelQuietForLargeModels) {
  model::Cluster c = CleanCluster();
  c.workload.parallelism = model::Parallelism{2, 8, 2};
  c.workload.params = 175e9;
  EXPECT_TRUE(LintRule(c, "workload.pipeline_small_model").empty());
}

TEST(LintWorkload, PipelineSmallModelOverride) {
  model::Cluster c = CleanCluster();
  c.workload.parallelism = model::Parallelism{2, 8, 2};
  Override(c, "workload.pipeline_small_model.min_params", 50e9);
  EXPECT_TRUE(LintRule(c, "workload.pipeline_small_model").empty());
}

}  // namespace
}  // namespace gpuforge::lint
