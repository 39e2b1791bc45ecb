// k8s.* and slurm.* rules.

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::LintRule;

model::Cluster Kubernetes(std::string policy, bool volcano) {
  model::Cluster c = CleanCluster();
  c.software.scheduler.kind = model::SchedulerKind::kKubernetes;
  c.software.scheduler.topology_manager_policy = std::move(policy);
  c.software.scheduler.volcano = volcano;
  return c;
}

TEST(LintScheduler, TopologyManagerUnset) {
  std::vector<Finding> f = LintRule(Kubernetes("", true), "k8s.topology_manager");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "Kubernetes kubelet topology manager policy is unset; pods then land on arbitrary NUMA "
            "nodes (up to 30% slower); set best-effort, restricted or single-numa-node");
  EXPECT_EQ(f[0].where.line, 101);
}

TEST(LintScheduler, TopologyManagerNone) {
  std::vector<Finding> f = LintRule(Kubernetes("none", true), "k8s.topology_manager");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("policy is 'none';"), std::string::npos);
}

TEST(LintScheduler, TopologyManagerQuietWhenSetOrSlurm) {
  EXPECT_TRUE(LintRule(Kubernetes("single-numa-node", true), "k8s.topology_manager").empty());
  EXPECT_TRUE(LintRule(Kubernetes("best-effort", true), "k8s.topology_manager").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "k8s.topology_manager").empty());
}

TEST(LintScheduler, NoVolcanoFires) {
  std::vector<Finding> f = LintRule(Kubernetes("best-effort", false), "k8s.no_volcano");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "Kubernetes without the Volcano scheduler: the default scheduler does not gang-"
            "schedule training pods or understand GPU affinity");
}

TEST(LintScheduler, NoVolcanoQuietWithVolcanoOrSlurm) {
  EXPECT_TRUE(LintRule(Kubernetes("best-effort", true), "k8s.no_volcano").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "k8s.no_volcano").empty());
}

TEST(LintScheduler, SlurmWithoutController) {
  model::Cluster c = CleanCluster();
  c.software.scheduler.controller = "";
  std::vector<Finding> f = LintRule(c, "slurm.no_controller");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "Slurm scheduler with no controller node");
}

TEST(LintScheduler, SlurmControllerNotInInventory) {
  model::Cluster c = CleanCluster();
  c.software.scheduler.controller = "head02";
  std::vector<Finding> f = LintRule(c, "slurm.no_controller");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message, "Slurm controller 'head02' is not a node in the inventory");
  EXPECT_EQ(f[0].objects, std::vector<std::string>{"head02"});
}

TEST(LintScheduler, SlurmControllerQuietWhenPresent) {
  EXPECT_TRUE(LintRule(CleanCluster(), "slurm.no_controller").empty());
  model::Cluster c = CleanCluster();
  c.software.scheduler.kind = model::SchedulerKind::kNone;
  c.software.scheduler.controller = "";
  EXPECT_TRUE(LintRule(c, "slurm.no_controller").empty());
}

// AutoDetect=nvml needs gpu_nvml.so: on Debian and Ubuntu the plan installs
// slurm-wlm-nvml-plugin (contrib / multiverse), on RHEL no package is known. A warning either way,
// naming what the operator must provide.
TEST(LintScheduler, AutodetectNvmlSaysWhereTheGpuNvmlPluginComesFrom) {
  model::Cluster c = CleanCluster();
  c.software.scheduler.gres_autodetect_nvml = true;
  for (const auto& [distro, version, words] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"", "", "slurm-wlm-nvml-plugin, which the plan installs"},
           {"debian", "12", "Debian's contrib component"},
           {"ubuntu", "24.04", "Ubuntu's multiverse"},
           {"rocky", "9", "no RHEL or EPEL package gpuforge knows carries slurmd's gpu_nvml.so"}}) {
    c.software.os_distro = distro;
    c.software.os_version = version;
    std::vector<Finding> f = LintRule(c, "slurm.autodetect_without_nvml");
    ASSERT_EQ(f.size(), 1u) << distro << " " << version;
    EXPECT_EQ(f[0].severity, Severity::kWarning);
    EXPECT_NE(f[0].message.find(words), std::string::npos) << f[0].message;
    EXPECT_NE(f[0].message.find("every GPU node registers 0 GPUs"), std::string::npos) << f[0].message;
  }
  c.software.os_distro = "debian";
  c.software.os_version = "12";
  c.software.scheduler.gres_autodetect_nvml = false;
  EXPECT_TRUE(LintRule(c, "slurm.autodetect_without_nvml").empty()) << "File= lines need no plugin";
}

}  // namespace
}  // namespace gpuforge::lint
