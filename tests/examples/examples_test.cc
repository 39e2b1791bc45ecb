// The shipped example inventories: each loads, the good ones lint clean of errors, the bad one
// trips exactly the error rules it was written to trip, and the resolved models say what the
// files' comments say.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/slurm_roles.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge {
namespace {

namespace fs = std::filesystem;

const char* const kBadDesign = "bad-design.yaml";

fs::path ExamplesDir() { return fs::path(GPUFORGE_SOURCE_DIR) / "inventories" / "examples"; }

std::vector<fs::path> ExampleFiles() {
  std::vector<fs::path> out;
  for (const fs::directory_entry& e : fs::directory_iterator(ExamplesDir())) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

model::Cluster Load(const std::string& file) {
  inventory::LoadOutcome out = inventory::LoadFile((ExamplesDir() / file).string());
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  return out.ok() ? std::move(*out.cluster) : model::Cluster{};
}

std::string Describe(const lint::LintResult& r) {
  std::string s;
  for (const lint::Finding& f : r.findings) {
    s += fmt::format("  [{}] {}: {}\n", lint::ToString(f.severity), f.rule, f.message);
  }
  return s;
}

std::set<std::string> RuleIds(const lint::LintResult& r, lint::Severity severity) {
  std::set<std::string> ids;
  for (const lint::Finding& f : r.findings) {
    if (f.severity == severity) ids.insert(f.rule);
  }
  return ids;
}

TEST(ExamplesLoad, EveryExampleLoadsWithoutErrors) {
  std::vector<fs::path> files = ExampleFiles();
  ASSERT_GE(files.size(), 4u) << "expected the four shipped examples in " << ExamplesDir();
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    inventory::LoadOutcome out = inventory::LoadFile(f.string());
    EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
    EXPECT_EQ(out.diags.error_count(), 0u) << out.FormatDiagnostics();
  }
}

TEST(ExamplesLoad, ShippedExamplesArePresent) {
  std::set<std::string> names;
  for (const fs::path& f : ExampleFiles()) names.insert(f.filename().string());
  for (const char* want : {"h200-ib-32gpu.yaml", "a100-roce-k8s.yaml", "h200-single-node.yaml",
                           kBadDesign}) {
    EXPECT_TRUE(names.count(want)) << want << " is missing from " << ExamplesDir();
  }
}

TEST(ExamplesLint, GoodExamplesHaveNoErrors) {
  for (const fs::path& f : ExampleFiles()) {
    if (f.filename() == kBadDesign) continue;
    SCOPED_TRACE(f.string());
    inventory::LoadOutcome out = inventory::LoadFile(f.string());
    ASSERT_TRUE(out.ok()) << out.FormatDiagnostics();
    lint::LintResult r = lint::Lint(*out.cluster);
    EXPECT_EQ(r.errors, 0u) << "findings:\n" << Describe(r);
    EXPECT_TRUE(RuleIds(r, lint::Severity::kError).empty()) << Describe(r);
  }
}

TEST(ExamplesLint, BadDesignTripsExactlyTheExpectedErrors) {
  model::Cluster c = Load(kBadDesign);
  lint::LintResult r = lint::Lint(c);
  // Every error rule the file was written to trip. A rule that stops firing, or a new error
  // rule that fires, shows up here; update the file's header comment with this list.
  const std::set<std::string> want = {
      "fabric.ethernet_scale",   "fabric.l2_topology",       "fabric.missing_uplinks",
      "fabric.no_compute_network", "fabric.oversubscription", "gpu.mixed_in_node",
      "gpu.mixed_models",        "k8s.topology_manager",     "nccl.ib_hca",
      "power.air_cooling",       "power.gpu_air_cooled",     "power.rack_limit",
      "software.driver_branch",  "software.gpu_minimums",    "storage.nfs_hot_tier",
      "storage.read_bandwidth",  "workload.tensor_across_nodes",
  };
  std::set<std::string> got = RuleIds(r, lint::Severity::kError);
  EXPECT_EQ(got, want) << "got:  " << fmt::format("{}", fmt::join(got, ", ")) << "\nwant: " << fmt::format("{}", fmt::join(want, ", ")) << "\nfindings:\n"
                       << Describe(r);
  EXPECT_GE(r.errors, want.size());
}

TEST(ExamplesLint, BadDesignTripsTheWarningRulesToo) {
  model::Cluster c = Load(kBadDesign);
  lint::LintResult r = lint::Lint(c);
  // At least these; warnings are advice, and other rules may add to them.
  const std::set<std::string> want = {
      "fabric.dangling",           "fabric.nic_rate",          "fabric.no_infiniband",
      "fabric.switch_capacity",    "k8s.no_volcano",           "nccl.algo",
      "nccl.ib_timeout",           "nccl.topo_file",           "network.no_storage_network",
      "node.gpus_per_node",        "node.numa_mismatch",       "node.ram_per_gpu",
      "software.versions",         "storage.capacity",         "storage.checkpoint_time",
      "storage.latency",           "storage.object_training_tier",
      "workload.parallelism_product", "workload.tensor_without_nvlink",
  };
  std::set<std::string> got = RuleIds(r, lint::Severity::kWarning);
  std::set<std::string> missing;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::inserter(missing, missing.end()));
  EXPECT_TRUE(missing.empty()) << "warning rules that did not fire: " << fmt::format("{}", fmt::join(missing, ", "))
                               << "\nfindings:\n" << Describe(r);
  std::set<std::string> infos = RuleIds(r, lint::Severity::kInfo);
  EXPECT_TRUE(infos.count("nccl.debug")) << Describe(r);
  EXPECT_TRUE(infos.count("workload.pipeline_small_model")) << Describe(r);
}

TEST(ExamplesLint, NoExampleMisconfiguresLint) {
  for (const fs::path& f : ExampleFiles()) {
    SCOPED_TRACE(f.string());
    inventory::LoadOutcome out = inventory::LoadFile(f.string());
    ASSERT_TRUE(out.ok()) << out.FormatDiagnostics();
    lint::LintResult r = lint::Lint(*out.cluster);
    for (const lint::Finding& f2 : r.findings) EXPECT_NE(f2.rule, "lint.config") << f2.message;
  }
}

// ---------------------------------------------------------------- resolved models

TEST(ExamplesModel, H200InfinibandCluster) {
  model::Cluster c = Load("h200-ib-32gpu.yaml");
  EXPECT_EQ(c.TotalGpus(), 32);
  EXPECT_EQ(c.ComputeNodes().size(), 4u);
  EXPECT_EQ(c.links.size(), 64u);  // 4 x 8 NIC links, 4 x 8 leaf-spine links
  ASSERT_NE(c.ComputeNetwork(), nullptr);
  EXPECT_EQ(c.ComputeNetwork()->kind, model::NetKind::kInfiniband);
  EXPECT_EQ(c.software.scheduler.kind, model::SchedulerKind::kSlurm);
  EXPECT_EQ(c.software.scheduler.controller, "head01");
  const model::Node* n = c.FindNode("gpu003");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->address, "198.18.0.13");
  EXPECT_EQ(n->rack, "r02");
  // A controller and a login node beside the compute nodes (#14 "Done when"): slurmctld on
  // one, Slurm's commands without slurmd on the other.
  const model::Node* login = c.FindNode("login01");
  ASSERT_NE(login, nullptr);
  EXPECT_EQ(login->role, model::NodeRole::kLogin);
  const model::SlurmRole lr = model::SlurmRoleOf(c, *login);
  EXPECT_TRUE(lr.client && lr.munge);
  EXPECT_FALSE(lr.slurmd || lr.slurmctld);
  const model::SlurmRole hr = model::SlurmRoleOf(c, *c.FindNode("head01"));
  EXPECT_TRUE(hr.slurmctld && hr.munge);
  EXPECT_FALSE(hr.slurmd);
  EXPECT_EQ(c.software.scheduler.munge_key,
            (ExamplesDir() / "munge.key.example").lexically_normal().string());
  ASSERT_TRUE(c.software.scheduler.health_check.has_value());
  EXPECT_EQ(c.software.scheduler.health_check->interval_s, 300);
}

TEST(ExamplesModel, A100RoceKubernetesCluster) {
  model::Cluster c = Load("a100-roce-k8s.yaml");
  // The guide's bill of materials (4 GPUs per node), not its launch script (8).
  EXPECT_EQ(c.TotalGpus(), 16);
  ASSERT_EQ(c.ComputeNodes().size(), 4u);
  const model::Profile& p = c.ProfileOf(*c.FindNode("gpu01"));
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_EQ(p.gpus[0].generation, "ampere");
  EXPECT_EQ(p.gpus[0].memory_bytes, 80e9);
  EXPECT_EQ(p.gpus[0].pci_bus_ids,
            (std::vector<std::string>{"0000:17:00.0", "0000:1b:00.0", "0000:47:00.0",
                                      "0000:4b:00.0"}));
  EXPECT_EQ(p.gpus[0].numa_nodes, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(p.memory_bytes, 1e12);
  EXPECT_EQ(p.cpu.sockets * p.cpu.cores_per_socket, 192);
  EXPECT_EQ(p.nvme.count, 4);
  ASSERT_EQ(p.nics.size(), 5u);  // 2 cards x 2 ports, and the storage NIC
  EXPECT_EQ(p.nics[0].name, "mlx5_0");
  EXPECT_EQ(p.nics[0].kind, model::NetKind::kRoce);
  EXPECT_EQ(p.nics[0].rate_bytes_per_s, 50e9);
  EXPECT_EQ(p.nics[4].network, "storage");
  // 2 RoCE ports per node to the training switch, 1 storage NIC per node, the control plane.
  EXPECT_EQ(c.links.size(), 13u);
  ASSERT_NE(c.FindSwitch("train-sw1"), nullptr);
  EXPECT_EQ(c.FindSwitch("train-sw1")->model, "QM9700");
  EXPECT_EQ(c.FindNode("gpu01")->address, "198.18.1.100");

  const model::Scheduler& s = c.software.scheduler;
  EXPECT_EQ(s.kind, model::SchedulerKind::kKubernetes);
  EXPECT_TRUE(s.volcano);
  EXPECT_EQ(s.topology_manager_policy, "best-effort");
  EXPECT_EQ(s.reserved_cpus, 4);
  EXPECT_EQ(s.reserved_memory_bytes, 16.0 * 1024 * 1024 * 1024);

  const std::vector<std::pair<std::string, std::string>> env = {
      {"NCCL_IB_TIMEOUT", "22"},
      {"NCCL_IB_RETRY_CNT", "7"},
      {"NCCL_IB_GID_INDEX", "3"},
      {"NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1"},
  };
  EXPECT_EQ(c.software.nccl_env, env);
  EXPECT_EQ(c.software.nccl_topo_file, "/etc/nccl-topology.xml");

  ASSERT_EQ(c.storage.tiers.size(), 3u);
  EXPECT_EQ(c.storage.tiers[0].kind, model::StorageKind::kLocalNvme);
  EXPECT_EQ(c.storage.tiers[0].role, model::StorageRole::kHot);
  EXPECT_EQ(c.storage.tiers[1].kind, model::StorageKind::kNas);
  EXPECT_EQ(c.storage.tiers[1].role, model::StorageRole::kWarm);
  EXPECT_EQ(c.storage.tiers[2].kind, model::StorageKind::kObject);
  EXPECT_EQ(c.storage.tiers[2].role, model::StorageRole::kCold);

  EXPECT_TRUE(c.workload.present);
  EXPECT_EQ(c.workload.params, 13e9);
  EXPECT_EQ(c.workload.parallelism.data, 16);
  EXPECT_EQ(c.workload.parallelism.tensor, 1);
}

TEST(ExamplesModel, H200SingleNode) {
  model::Cluster c = Load("h200-single-node.yaml");
  EXPECT_EQ(c.TotalGpus(), 8);
  ASSERT_EQ(c.nodes.size(), 1u);
  EXPECT_TRUE(c.links.empty());
  EXPECT_TRUE(c.switches.empty());
  EXPECT_EQ(c.ComputeNetwork(), nullptr);
  const model::Profile& p = c.ProfileOf(c.nodes[0]);
  ASSERT_EQ(p.gpus.size(), 1u);
  EXPECT_TRUE(p.gpus[0].nvswitch);  // 8 SXM GPUs: an HGX board
  EXPECT_EQ(c.software.scheduler.kind, model::SchedulerKind::kSlurm);
  EXPECT_EQ(c.software.scheduler.controller, "gpu01");
}

TEST(ExamplesModel, BadDesign) {
  model::Cluster c = Load(kBadDesign);
  EXPECT_EQ(c.TotalGpus(), 48);
  EXPECT_EQ(c.nodes.size(), 10u);
  const model::Profile& mixed = c.ProfileOf(*c.FindNode("mixed-01"));
  EXPECT_EQ(mixed.gpus.size(), 2u);
  EXPECT_EQ(mixed.gpu_count(), 4);
  ASSERT_NE(c.ComputeNetwork(), nullptr);
  EXPECT_EQ(c.ComputeNetwork()->kind, model::NetKind::kEthernet);
  EXPECT_EQ(c.ComputeNetwork()->topology, model::Topology::kL2);
  EXPECT_EQ(c.links.size(), 8u + 4u + 6u + 3u + 4u);
  EXPECT_EQ(c.software.scheduler.kind, model::SchedulerKind::kKubernetes);
  EXPECT_TRUE(c.software.scheduler.topology_manager_policy.empty());
}

}  // namespace
}  // namespace gpuforge
