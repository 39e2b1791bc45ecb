// software.* rules.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "gpuforge/model/gpu_catalog.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::LintRule;

TEST(LintSoftware, DriverBranchFires) {
  model::Cluster c = CleanCluster();
  c.software.driver_branch = "535";
  c.software.driver_version = "535.104.05";
  std::vector<Finding> f = LintRule(c, "software.driver_branch");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "NVIDIA driver 535.104.05 is on branch 535, which the guides say not to use: guide 000 "
            "reports bugs with H100/RCCL on it and recommends the 560 series");
  EXPECT_EQ(f[0].where.line, 100);
}

TEST(LintSoftware, DriverBranchFromVersionAlone) {
  model::Cluster c = CleanCluster();
  c.software.driver_branch = "";
  c.software.driver_version = "535.161.08";
  EXPECT_EQ(LintRule(c, "software.driver_branch").size(), 1u);
  c.software.driver_version = "";
  c.software.driver_branch = "535";
  std::vector<Finding> f = LintRule(c, "software.driver_branch");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.substr(0, 42), "NVIDIA driver branch 535 is on branch 535,");
}

TEST(LintSoftware, DriverBranchQuietForOtherBranches) {
  EXPECT_TRUE(LintRule(CleanCluster(), "software.driver_branch").empty());
  model::Cluster c = CleanCluster();
  c.software.driver_branch = "5350";  // not a prefix match
  c.software.driver_version = "";
  EXPECT_TRUE(LintRule(c, "software.driver_branch").empty());
}

TEST(LintSoftware, VersionsWarnsWhenUnstated) {
  model::Cluster c = CleanCluster();
  c.software.cuda_version = "";
  c.software.nccl_version = "";
  std::vector<Finding> f = LintRule(c, "software.versions");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "software does not state cuda_version, nccl_version; version checks cannot judge what "
            "is not written down");
}

TEST(LintSoftware, VersionsWarnsOnBranchMismatch) {
  model::Cluster c = CleanCluster();
  c.software.driver_version = "550.54.15";
  std::vector<Finding> f = LintRule(c, "software.versions");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message, "driver_version 550.54.15 is not on driver_branch 560");
}

TEST(LintSoftware, VersionsErrorsWhenDriverTooOldForCuda) {
  model::Cluster c = CleanCluster();
  c.software.cuda_version = "13.0";
  std::vector<Finding> f = LintRule(c, "software.versions");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "CUDA 13.0 needs NVIDIA driver 580 or newer, but the driver is 560.35.03");

  c.software.cuda_version = "12.4";
  c.software.driver_branch = "470";
  c.software.driver_version = "470.82.01";
  f = LintRule(c, "software.versions");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "CUDA 12.4 needs NVIDIA driver 525 or newer, but the driver is 470.82.01");
}

TEST(LintSoftware, VersionsQuietWhenConsistent) {
  EXPECT_TRUE(LintRule(CleanCluster(), "software.versions").empty());
  model::Cluster c = CleanCluster();
  c.software.cuda_version = "13.0";
  c.software.driver_branch = "580";
  c.software.driver_version = "580.65.06";
  EXPECT_TRUE(LintRule(c, "software.versions").empty());
}

TEST(LintSoftware, VersionsQuietWithoutGpuNodes) {
  model::Cluster c = CleanCluster();
  c.software = model::Software{};
  for (model::Node& n : c.nodes) n.role = model::NodeRole::kLogin;
  EXPECT_TRUE(LintRule(c, "software.versions").empty());
}

}  // namespace
}  // namespace gpuforge::lint

namespace gpuforge::lint {
namespace {

// #28 item 3: a B200 on driver 550 and CUDA 12.4 passed lint (and plan installed nvidia-open-550).
TEST(LintSoftware, GpuMinimumsRefuseADriverOrCudaTooOldForTheGpu) {
  fixture::FixtureOptions o;
  o.gpu_model = "B200";
  model::Cluster c = fixture::CleanCluster(o);
  c.software.driver_branch = "550";
  c.software.driver_version = "550.90.07";
  c.software.cuda_version = "12.4";
  std::vector<Finding> f = fixture::LintRule(c, "software.gpu_minimums");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "B200 needs NVIDIA driver 570.133.20 or newer (branch 570 or later), but the driver is 550.90.07; plan "
            "would install a driver that does not know the GPU");
  EXPECT_EQ(f[1].message,
            "B200 needs CUDA 12.8 or newer (the first toolkit with its compute capability), but software.cuda is 12.4");
  // The same branch, older than the first release listing the GPU: a warning only.
  c.software.driver_branch = "570";
  c.software.driver_version = "570.86.15";
  c.software.cuda_version = "12.8";
  f = fixture::LintRule(c, "software.gpu_minimums");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message, "B200: NVIDIA lists it from driver 570.133.20, and the driver is 570.86.15, older on the same branch");
  // Unstated, the driver is gpuforge's default branch (580), which knows every GPU in the catalogue.
  c.software.driver_branch.clear();
  c.software.driver_version.clear();
  EXPECT_TRUE(fixture::LintRule(c, "software.gpu_minimums").empty());
  EXPECT_TRUE(fixture::LintRule(fixture::CleanCluster(), "software.gpu_minimums").empty());
}

TEST(CompareVersions, DottedFieldsNumerically) {
  EXPECT_EQ(model::CompareVersions("550.90.07", "570.133.20"), -1);
  EXPECT_EQ(model::CompareVersions("570.133.20", "570.86.15"), 1);
  EXPECT_EQ(model::CompareVersions("12", "12.0"), 0);
  EXPECT_EQ(model::CompareVersions("12.10", "12.8"), 1);
  EXPECT_EQ(model::CompareVersions("12.x", "12.8"), std::nullopt);
  EXPECT_EQ(model::CompareVersions("12.", "12"), std::nullopt);
  EXPECT_EQ(model::CompareVersions("", "12"), std::nullopt);
}

}  // namespace
}  // namespace gpuforge::lint
