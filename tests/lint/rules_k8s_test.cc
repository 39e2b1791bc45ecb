// k8s.single_numa_gpus and k8s.rdma_resource (rules_k8s.cc, #14): each fires on the setting
// the kubelet or NCCL would turn into a pod that never starts or runs on TCP, and stays quiet
// on the settings around it.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::CleanCluster;
using fixture::LintRule;

// The fixture's 8 GPUs per node, 4 on NUMA 0 and 4 on NUMA 1, under Kubernetes with Volcano.
model::Cluster Kubernetes(std::string policy) {
  model::Cluster c = CleanCluster();
  c.software.scheduler.kind = model::SchedulerKind::kKubernetes;
  c.software.scheduler.topology_manager_policy = std::move(policy);
  c.software.scheduler.volcano = true;
  for (model::Node& n : c.nodes) n.vars["k8s_rdma_resource"] = "rdma/ib";
  return c;
}

TEST(LintK8s, SingleNumaNodeWithPodsSpanningNumaNodesIsAnError) {
  std::vector<Finding> f = LintRule(Kubernetes("single-numa-node"), "k8s.single_numa_gpus");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "topology_manager_policy single-numa-node with training pods of 8 GPUs on nodes gpu[001-004]: profile 'hgx' "
            "has at most 4 GPUs on one NUMA node (4 on NUMA 0, 4 on NUMA 1), so the kubelet rejects every such pod "
            "(TopologyAffinityError); use restricted or best-effort, or pods of at most 4 GPUs; render does not write "
            "the Volcano Job");
  EXPECT_EQ(f[0].objects, std::vector<std::string>{"hgx"});
}

TEST(LintK8s, SingleNumaNodeQuietWhenTheGpusShareOneNumaNodeOrThePolicyIsLooser) {
  model::Cluster one = Kubernetes("single-numa-node");
  for (model::Profile& p : one.profiles) {
    for (model::GpuSpec& g : p.gpus) std::fill(g.numa_nodes.begin(), g.numa_nodes.end(), 1);
  }
  EXPECT_TRUE(LintRule(one, "k8s.single_numa_gpus").empty()) << "all 8 GPUs on NUMA 1 fit one NUMA node";
  EXPECT_TRUE(LintRule(Kubernetes("restricted"), "k8s.single_numa_gpus").empty());
  EXPECT_TRUE(LintRule(Kubernetes("best-effort"), "k8s.single_numa_gpus").empty());
  model::Cluster unknown = Kubernetes("single-numa-node");
  for (model::Profile& p : unknown.profiles) {
    for (model::GpuSpec& g : p.gpus) g.numa_nodes.clear();
  }
  EXPECT_TRUE(LintRule(unknown, "k8s.single_numa_gpus").empty()) << "no NUMA placement, nothing to hold it to";
  model::Cluster slurm = CleanCluster();
  slurm.software.scheduler.topology_manager_policy = "single-numa-node";
  EXPECT_TRUE(LintRule(slurm, "k8s.single_numa_gpus").empty());
}

TEST(LintK8s, RdmaFabricWithoutTheDevicePluginsResourceIsAnError) {
  model::Cluster c = Kubernetes("best-effort");
  for (model::Node& n : c.nodes) n.vars.erase("k8s_rdma_resource");
  std::vector<Finding> f = LintRule(c, "k8s.rdma_resource");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_NE(f[0].message.find("no defaults.vars.k8s_rdma_resource: the training pods get no RDMA device"),
            std::string::npos)
      << f[0].message;
}

TEST(LintK8s, RdmaResourceQuietWhenNamedOrNotNeeded) {
  EXPECT_TRUE(LintRule(Kubernetes("best-effort"), "k8s.rdma_resource").empty());
  fixture::FixtureOptions eth;
  eth.net_kind = model::NetKind::kEthernet;
  model::Cluster ethernet = CleanCluster(eth);
  ethernet.software.scheduler.kind = model::SchedulerKind::kKubernetes;
  ethernet.software.scheduler.volcano = true;
  for (model::Network& n : ethernet.networks) n.kind = model::NetKind::kEthernet;
  EXPECT_TRUE(LintRule(ethernet, "k8s.rdma_resource").empty()) << "no RDMA on an Ethernet fabric";
  EXPECT_TRUE(LintRule(CleanCluster(), "k8s.rdma_resource").empty()) << "Slurm";
}

}  // namespace
}  // namespace gpuforge::lint
