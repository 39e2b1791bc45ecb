// gpu.* rules.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::At;
using fixture::CleanCluster;
using fixture::GpuProfile;
using fixture::LintRule;

// Moves gpu003 and gpu004 to a copy of the GPU profile holding `model`.
model::Cluster TwoModels(const std::string& model, const std::string& generation) {
  model::Cluster c = CleanCluster();
  model::Profile other = GpuProfile(c);
  other.name = "hgx-" + model;
  other.gpus[0].model = model;
  other.gpus[0].generation = generation;
  other.gpus[0].where = At(300);
  c.profiles.push_back(other);
  c.nodes[2].profile = other.name;
  c.nodes[3].profile = other.name;
  return c;
}

TEST(LintGpu, MixedModelsFires) {
  std::vector<Finding> f = LintRule(TwoModels("H100", "hopper"), "gpu.mixed_models");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "compute nodes mix 2 GPU models of one generation: H100 (hopper) on gpu[003-004]; "
            "H200 (hopper) on gpu[001-002]; stick to one SKU per cluster (mixed clusters lose "
            "15-30% throughput)");
  EXPECT_EQ(f[0].where.line, 300) << "points at the model that broke uniformity";
  EXPECT_EQ(f[0].objects, (std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu004"}));
}

TEST(LintGpu, MixedModelsNamesGenerations) {
  std::vector<Finding> f = LintRule(TwoModels("A100", "ampere"), "gpu.mixed_models");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "compute nodes mix 2 GPU models across 2 generations: A100 (ampere) on gpu[003-004]; "
            "H200 (hopper) on gpu[001-002]; stick to one SKU per cluster (mixed clusters lose "
            "15-30% throughput)");
}

TEST(LintGpu, MixedModelsQuietForOneSkuSpelledTwoWays) {
  EXPECT_TRUE(LintRule(TwoModels("h200-sxm", "hopper"), "gpu.mixed_models").empty());
}

TEST(LintGpu, MixedModelsIgnoresNonComputeNodes) {
  model::Cluster c = TwoModels("L40S", "ada");
  c.nodes[2].role = model::NodeRole::kLogin;
  c.nodes[3].role = model::NodeRole::kLogin;
  EXPECT_TRUE(LintRule(c, "gpu.mixed_models").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "gpu.mixed_models").empty());
}

TEST(LintGpu, MixedInNodeFires) {
  model::Cluster c = CleanCluster();
  model::GpuSpec a100 = GpuProfile(c).gpus[0];
  a100.model = "A100";
  a100.generation = "ampere";
  a100.count = 4;
  a100.numa_nodes = {0, 0, 1, 1};
  GpuProfile(c).gpus.push_back(a100);
  std::vector<Finding> f = LintRule(c, "gpu.mixed_in_node");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "profile hgx (nodes gpu[001-004]) holds 2 GPU models in one node: 4 x A100, 8 x H200");
  EXPECT_EQ(f[0].where.line, 20);
  EXPECT_EQ(f[0].objects.front(), "hgx");
}

TEST(LintGpu, MixedInNodeQuietForOneModelInTwoSpecs) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).gpus[0].count = 4;
  GpuProfile(c).gpus.push_back(GpuProfile(c).gpus[0]);
  EXPECT_TRUE(LintRule(c, "gpu.mixed_in_node").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "gpu.mixed_in_node").empty());
}

TEST(LintGpu, UnknownModelFires) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).gpus[0].model = "X9000";
  GpuProfile(c).gpus[0].generation = "";
  std::vector<Finding> f = LintRule(c, "gpu.unknown_model");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "GPU model 'X9000' in profile hgx (nodes gpu[001-004]) is not in the catalogue, so its "
            "generation is unknown and generation checks are blind to it");
  EXPECT_EQ(f[0].where.line, 21);
}

TEST(LintGpu, UnknownModelQuietForCatalogueModels) {
  EXPECT_TRUE(LintRule(CleanCluster(), "gpu.unknown_model").empty());
}

}  // namespace
}  // namespace gpuforge::lint
