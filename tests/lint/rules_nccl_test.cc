// nccl.* rules.

#include <gtest/gtest.h>

#include "gpuforge/lint/lint.h"
#include "gpuforge/model/nccl_defaults.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::At;
using fixture::CleanCluster;
using fixture::FixtureOptions;
using fixture::GpuProfile;
using fixture::LintRule;
using fixture::Override;
using fixture::SetEnv;
using fixture::UnsetEnv;

// Adds an RDMA NIC on the storage network, which NCCL must not use for training traffic.
model::Cluster WithStorageHca() {
  model::Cluster c = CleanCluster();
  model::NicSpec nic;
  nic.name = "mlx5_4";
  nic.kind = model::NetKind::kRoce;
  nic.rate_bytes_per_s = 200 * fixture::kGbps;
  nic.numa_node = 1;
  nic.network = "storage";
  nic.where = At(28);
  GpuProfile(c).nics.push_back(nic);
  return c;
}

// ---------------------------------------------------------------- NCCL_IB_HCA

TEST(LintNccl, IbHcaUnsetWarnsWithSeveralNics) {
  model::Cluster c = CleanCluster();
  UnsetEnv(c, "NCCL_IB_HCA");
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA is unset while GPU nodes have 4 RDMA compute NICs each; bind them "
            "explicitly so NCCL cannot pick a storage NIC or mix devices");
  EXPECT_EQ(f[0].where.line, 110);
}

TEST(LintNccl, IbHcaUnsetQuietWithOneNic) {
  FixtureOptions o;
  o.nics_per_node = 1;
  model::Cluster c = CleanCluster(o);
  UnsetEnv(c, "NCCL_IB_HCA");
  EXPECT_TRUE(LintRule(c, "nccl.ib_hca").empty());
}

TEST(LintNccl, IbHcaNamingAMissingDevice) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_8:1");
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_8:1 names 'mlx5_8:1', which is "
            "no compute NIC of any GPU node");
}

TEST(LintNccl, IbHcaLeavingOutComputeNics) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1");  // the guides' two-NIC example on four NICs
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 leaves out compute NICs mlx5_2 (network compute) on "
            "gpu[001-004]; mlx5_3 (network compute) on gpu[001-004]; NCCL will not use them");
}

TEST(LintNccl, IbHcaWrongPort) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_HCA", "=mlx5_0:2,mlx5_1:1,mlx5_2:1,mlx5_3:1");
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA==mlx5_0:2,mlx5_1:1,mlx5_2:1,mlx5_3:1 names 'mlx5_0:2', which is no "
            "compute NIC of any GPU node");
  EXPECT_NE(f[1].message.find("leaves out compute NICs mlx5_0 (network compute)"),
            std::string::npos);
}

TEST(LintNccl, IbHcaPrefixAlsoMatchingAStorageNic) {
  model::Cluster c = WithStorageHca();
  SetEnv(c, "NCCL_IB_HCA", "mlx5");
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA=mlx5: 'mlx5' also matches mlx5_4 (network storage) on gpu[001-004], "
            "which is not a compute NIC");
}

TEST(LintNccl, IbHcaPrefixMatchesComputeNics) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_HCA", "mlx5");
  EXPECT_TRUE(LintRule(c, "nccl.ib_hca").empty());
  SetEnv(c, "NCCL_IB_HCA", "mlx5_0,mlx5_1,mlx5_2,mlx5_3");
  EXPECT_TRUE(LintRule(c, "nccl.ib_hca").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "nccl.ib_hca").empty());
}

TEST(LintNccl, IbHcaExactDoesNotPrefixMatch) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_HCA", "=mlx5");
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA==mlx5 names 'mlx5', which is no compute NIC of any GPU node");
}

TEST(LintNccl, IbHcaExcludeList) {
  model::Cluster c = WithStorageHca();
  SetEnv(c, "NCCL_IB_HCA", "^mlx5_4");
  EXPECT_TRUE(LintRule(c, "nccl.ib_hca").empty());

  SetEnv(c, "NCCL_IB_HCA", "^=mlx5_0,mlx5_4");
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA=^=mlx5_0,mlx5_4 excludes compute NICs mlx5_0 (network compute) on "
            "gpu[001-004]; NCCL will not use them");

  SetEnv(c, "NCCL_IB_HCA", "^mlx5_9");
  f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].message, "NCCL_IB_HCA=^mlx5_9 excludes 'mlx5_9', which no GPU node has");
  EXPECT_EQ(f[1].message,
            "NCCL_IB_HCA=^mlx5_9 still lets NCCL use mlx5_4 (network storage) on gpu[001-004], "
            "which are not compute NICs");
}

TEST(LintNccl, IbHcaBadPort) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_HCA", "mlx5_0:x,mlx5_1,mlx5_2,mlx5_3");
  std::vector<Finding> f = LintRule(c, "nccl.ib_hca");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_HCA=mlx5_0:x,mlx5_1,mlx5_2,mlx5_3: entry 'mlx5_0:x' has a port that is not a "
            "positive number");
}

// ---------------------------------------------------------------- timeouts

TEST(LintNccl, IbTimeoutBelowGuide) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_TIMEOUT", "18");
  SetEnv(c, "NCCL_IB_RETRY_CNT", "5");
  std::vector<Finding> f = LintRule(c, "nccl.ib_timeout");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message, "NCCL_IB_TIMEOUT=18 is below 22");
  EXPECT_EQ(f[1].message, "NCCL_IB_RETRY_CNT=5 is below 7");
}

// #28 item 9: unset in the inventory, both are what render writes into nccl.conf on RDMA nodes
// (22 and 7, model/nccl_defaults.h), so lint judges those and is quiet at the guide's marks;
// it used to say "unset, NCCL uses its default 20" while the rendered file said 22.
TEST(LintNccl, IbTimeoutUnsetIsWhatRenderWrites) {
  model::Cluster c = CleanCluster();
  UnsetEnv(c, "NCCL_IB_TIMEOUT");
  UnsetEnv(c, "NCCL_IB_RETRY_CNT");
  EXPECT_TRUE(LintRule(c, "nccl.ib_timeout").empty());
  ASSERT_EQ(model::RdmaNcclDefaultOf("NCCL_IB_TIMEOUT"), std::optional<std::string_view>("22"));
  Override(c, "nccl.ib_timeout.min_timeout", 23);
  std::vector<Finding> f = LintRule(c, "nccl.ib_timeout");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_TIMEOUT is unset in the inventory, so gpuforge renders NCCL_IB_TIMEOUT=22 into nccl.conf, below 23");
}

TEST(LintNccl, IbTimeoutNotANumber) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_TIMEOUT", "22s");
  std::vector<Finding> f = LintRule(c, "nccl.ib_timeout");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "NCCL_IB_TIMEOUT=22s is not a whole number");
}

TEST(LintNccl, IbTimeoutQuietWithoutRdmaOrWithOverride) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kEthernet;
  o.nodes = 2;
  EXPECT_TRUE(LintRule(CleanCluster(o), "nccl.ib_timeout").empty());
  model::Cluster c = CleanCluster();
  UnsetEnv(c, "NCCL_IB_TIMEOUT");
  Override(c, "nccl.ib_timeout.min_timeout", 20);
  EXPECT_TRUE(LintRule(c, "nccl.ib_timeout").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "nccl.ib_timeout").empty());
}

TEST(LintNccl, IbRetryOverride) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_RETRY_CNT", "5");
  EXPECT_EQ(LintRule(c, "nccl.ib_timeout").size(), 1u);
  Override(c, "nccl.ib_timeout.min_retry", 5);
  EXPECT_TRUE(LintRule(c, "nccl.ib_timeout").empty());
}

TEST(LintNccl, IbTimeoutLeavesTheGidIndexToNcclOnRoce) {
  // #13 part 3: the GID index is NCCL's auto-selection unless the network pins it (roce.nccl).
  FixtureOptions o;
  o.net_kind = model::NetKind::kRoce;
  model::Cluster c = CleanCluster(o);
  EXPECT_TRUE(LintRule(c, "nccl.ib_timeout").empty());
  UnsetEnv(c, "NCCL_IB_GID_INDEX");
  EXPECT_TRUE(LintRule(c, "nccl.ib_timeout").empty());
  // Unset, the timeout is what render writes on RoCE too (22, #28 item 9): quiet at the guide's
  // mark, named when the mark is raised.
  UnsetEnv(c, "NCCL_IB_TIMEOUT");
  EXPECT_TRUE(LintRule(c, "nccl.ib_timeout").empty());
  Override(c, "nccl.ib_timeout.min_timeout", 24);
  std::vector<Finding> f = LintRule(c, "nccl.ib_timeout");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].message.find("NCCL_IB_TIMEOUT"), std::string::npos) << f[0].message;
}

TEST(LintNccl, IbDisabledFires) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_DISABLE", "1");
  std::vector<Finding> f = LintRule(c, "nccl.ib_disabled");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "NCCL_IB_DISABLE=1 on an InfiniBand/RoCE compute fabric: NCCL falls back to TCP "
            "sockets");
}

TEST(LintNccl, IbDisabledQuietWhenZeroOrEthernet) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_IB_DISABLE", "0");  // what guide 000's job script sets
  EXPECT_TRUE(LintRule(c, "nccl.ib_disabled").empty());
  FixtureOptions o;
  o.net_kind = model::NetKind::kEthernet;
  o.nodes = 2;
  model::Cluster e = CleanCluster(o);
  SetEnv(e, "NCCL_IB_DISABLE", "1");
  EXPECT_TRUE(LintRule(e, "nccl.ib_disabled").empty());
}

// ---------------------------------------------------------------- algorithm

TEST(LintNccl, AlgoTreeOnSmallCluster) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_ALGO", "Tree");
  std::vector<Finding> f = LintRule(c, "nccl.algo");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "NCCL_ALGO=Tree forced on 32 GPUs, below 128; small clusters do better with Ring, or "
            "with NCCL_ALGO unset");
}

TEST(LintNccl, AlgoRingOnLargeCluster) {
  FixtureOptions o;
  o.nodes = 16;
  model::Cluster c = CleanCluster(o);
  SetEnv(c, "NCCL_ALGO", "ring");
  std::vector<Finding> f = LintRule(c, "nccl.algo");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "NCCL_ALGO=ring forced on 128 GPUs (from 128 a cluster is large); large clusters do "
            "better with Tree, or with NCCL_ALGO unset");
}

TEST(LintNccl, AlgoQuietWhenMatchingOrUnset) {
  EXPECT_TRUE(LintRule(CleanCluster(), "nccl.algo").empty());
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_ALGO", "Ring");
  EXPECT_TRUE(LintRule(c, "nccl.algo").empty());
  SetEnv(c, "NCCL_ALGO", "NVLS,Tree");  // lists are the user's informed choice
  EXPECT_TRUE(LintRule(c, "nccl.algo").empty());
}

TEST(LintNccl, AlgoOverride) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_ALGO", "Tree");
  Override(c, "nccl.algo.large_cluster_gpus", 32);
  EXPECT_TRUE(LintRule(c, "nccl.algo").empty());
}

// ---------------------------------------------------------------- topology file, debug

// Bare metal: no file is the right answer (NCCL reads sysfs), and a rendered one comes from the
// measured tree, so only a hand-set NCCL_TOPO_FILE is a finding.
TEST(LintNccl, TopoFileQuietOnBareMetalWithoutOrWithARenderedFile) {
  model::Cluster c = CleanCluster();
  c.software.nccl_topo_file.clear();
  EXPECT_TRUE(LintRule(c, "nccl.topo_file").empty());
  c.software.nccl_topo_file = "/etc/nccl-topology.xml";
  EXPECT_TRUE(LintRule(c, "nccl.topo_file").empty());
}

TEST(LintNccl, TopoFileHandWrittenOnBareMetalWarns) {
  model::Cluster c = CleanCluster();
  c.software.nccl_topo_file.clear();
  SetEnv(c, "NCCL_TOPO_FILE", "/etc/nccl/topo.xml");
  std::vector<Finding> f = LintRule(c, "nccl.topo_file");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "NCCL_TOPO_FILE=/etc/nccl/topo.xml is set by hand for bare-metal nodes gpu[001-004]; "
            "NCCL keeps every PCI parent the file gives, so a file that is not the measured tree "
            "moves GPUs and NICs off their PCIe switches and turns GPUDirect RDMA off: leave it "
            "unset and let NCCL read sysfs");
}

TEST(LintNccl, TopoFileRecommendedOnlyForVms) {
  model::Cluster c = CleanCluster();
  c.software.nccl_topo_file.clear();
  for (model::Profile& p : c.profiles) p.virtual_machine = true;
  std::vector<Finding> f = LintRule(c, "nccl.topo_file");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message.rfind("nodes gpu[001-004] are VMs (profile virtual) whose sysfs hides "
                               "the host's PCIe switches; set NCCL_TOPO_FILE to the cloud vendor's",
                               0),
            0u)
      << f[0].message;
  SetEnv(c, "NCCL_TOPO_FILE", "/opt/azurehpc/topology/ndv5-topo.xml");
  EXPECT_TRUE(LintRule(c, "nccl.topo_file").empty()) << "the vendor's file is what a VM needs";
  FixtureOptions o;
  o.gpus_per_node = 1;
  model::Cluster d = CleanCluster(o);
  for (model::Profile& p : d.profiles) p.virtual_machine = true;
  EXPECT_TRUE(LintRule(d, "nccl.topo_file").empty()) << "one GPU: no topology to describe";
}

TEST(LintNccl, DebugInfo) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_DEBUG", "INFO");
  std::vector<Finding> f = LintRule(c, "nccl.debug");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].message,
            "NCCL_DEBUG=INFO is set cluster-wide; it floods job logs in production, so set it per "
            "job when debugging");
}

TEST(LintNccl, DebugQuietForWarn) {
  model::Cluster c = CleanCluster();
  SetEnv(c, "NCCL_DEBUG", "WARN");
  EXPECT_TRUE(LintRule(c, "nccl.debug").empty());
}

TEST(LintNccl, LastExportWins) {
  model::Cluster c = CleanCluster();
  c.software.nccl_env.push_back({"NCCL_DEBUG", "INFO"});
  c.software.nccl_env.push_back({"NCCL_DEBUG", "WARN"});
  EXPECT_TRUE(LintRule(c, "nccl.debug").empty());
}

}  // namespace
}  // namespace gpuforge::lint
