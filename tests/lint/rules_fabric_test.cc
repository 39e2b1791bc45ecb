// fabric.* and network.* rules.

#include <gtest/gtest.h>

#include <algorithm>

#include "gpuforge/lint/lint.h"
#include "lint/cluster_builder.h"

namespace gpuforge::lint {
namespace {

using fixture::At;
using fixture::CleanCluster;
using fixture::Dump;
using fixture::FixtureOptions;
using fixture::GpuProfile;
using fixture::kGbps;
using fixture::LintRule;
using fixture::Override;
using model::Endpoint;

Endpoint Nic(std::string node, std::string nic) {
  Endpoint e;
  e.kind = Endpoint::Kind::kNic;
  e.device = std::move(node);
  e.nic = std::move(nic);
  return e;
}

Endpoint Port(std::string sw, int port) {
  Endpoint e;
  e.kind = Endpoint::Kind::kSwitchPort;
  e.device = std::move(sw);
  e.port = port;
  return e;
}

// The link that cables a node's NIC; the fixture has one per compute NIC.
model::Link* LinkOf(model::Cluster& c, const std::string& node, const std::string& nic) {
  for (model::Link& l : c.links) {
    if (l.a.kind == Endpoint::Kind::kNic && l.a.device == node && l.a.nic == nic) return &l;
  }
  return nullptr;
}

// One NIC per node, spine-leaf: gpu001-002 on leaf1, gpu003-004 on leaf2, each leaf with two
// uplinks to spine1 when `uplinks`.
model::Cluster TwoLeaves(bool leaf1_uplinks, bool leaf2_uplinks) {
  FixtureOptions o;
  o.nics_per_node = 1;
  model::Cluster c = CleanCluster(o);
  c.networks[0].topology = model::Topology::kSpineLeaf;
  c.switches = {
      model::Switch{"leaf1", model::SwitchTier::kLeaf, "compute", "QM9700", 64, 400 * kGbps, {}, "",
                    At(60)},
      model::Switch{"leaf2", model::SwitchTier::kLeaf, "compute", "QM9700", 64, 400 * kGbps, {}, "",
                    At(61)},
      model::Switch{"spine1", model::SwitchTier::kSpine, "compute", "QM9700", 64, 400 * kGbps, {}, "",
                    At(62)},
  };
  c.links.clear();
  for (int i = 0; i < 4; ++i) {
    std::string leaf = i < 2 ? "leaf1" : "leaf2";
    c.links.push_back({Nic(fmt::format("gpu{:03}", i + 1), "mlx5_0"), Port(leaf, i % 2 + 1),
                       400 * kGbps, At(70)});
    if ((i < 2 && leaf1_uplinks) || (i >= 2 && leaf2_uplinks)) {
      c.links.push_back({Port(leaf, 10 + i % 2), Port("spine1", i + 1), 400 * kGbps, At(71)});
    }
  }
  if (!leaf1_uplinks && !leaf2_uplinks) c.switches.pop_back();  // no spine at all
  return c;
}

// ---------------------------------------------------------------- no_compute_network

TEST(LintFabric, NoComputeNetworkFiresWithoutNetwork) {
  model::Cluster c = CleanCluster();
  c.networks.erase(c.networks.begin());
  std::vector<Finding> f = LintRule(c, "fabric.no_compute_network");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "4 GPU nodes (gpu[001-004]) but no network has role compute; multi-node training "
            "needs a compute fabric");
}

TEST(LintFabric, NoComputeNetworkFiresForNodesWithoutNic) {
  model::Cluster c = CleanCluster();
  model::Profile bare = GpuProfile(c);
  bare.name = "bare";
  bare.nics.erase(bare.nics.begin(), bare.nics.begin() + 4);  // keep eth0 only
  c.profiles.push_back(bare);
  c.nodes[3].profile = "bare";
  std::vector<Finding> f = LintRule(c, "fabric.no_compute_network");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "GPU node gpu004 has no NIC on the compute network compute");
  EXPECT_EQ(f[0].objects, std::vector<std::string>{"gpu004"});
}

TEST(LintFabric, NoComputeNetworkQuietForOneNode) {
  FixtureOptions o;
  o.nodes = 1;
  model::Cluster c = CleanCluster(o);
  c.networks.erase(c.networks.begin());
  EXPECT_TRUE(LintRule(c, "fabric.no_compute_network").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "fabric.no_compute_network").empty());
}

// ---------------------------------------------------------------- kind and scale

TEST(LintFabric, EthernetScaleFires) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kEthernet;
  std::vector<Finding> f = LintRule(CleanCluster(o), "fabric.ethernet_scale");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "compute network compute is plain Ethernet (no RDMA) carrying 32 GPUs, above the 16 "
            "GPU limit for Ethernet training; use InfiniBand or RoCE");
  EXPECT_EQ(f[0].where.line, 50);
  EXPECT_EQ(f[0].objects, std::vector<std::string>{"compute"});
}

TEST(LintFabric, EthernetScaleQuietAtSixteen) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kEthernet;
  o.nodes = 2;
  EXPECT_TRUE(LintRule(CleanCluster(o), "fabric.ethernet_scale").empty());
  FixtureOptions roce;
  roce.net_kind = model::NetKind::kRoce;
  EXPECT_TRUE(LintRule(CleanCluster(roce), "fabric.ethernet_scale").empty());
}

TEST(LintFabric, EthernetScaleOverride) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kEthernet;
  model::Cluster c = CleanCluster(o);
  Override(c, "fabric.ethernet_scale.max_gpus", 32);
  EXPECT_TRUE(LintRule(c, "fabric.ethernet_scale").empty());
}

TEST(LintFabric, NoInfinibandFires) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kRoce;
  std::vector<Finding> f = LintRule(CleanCluster(o), "fabric.no_infiniband");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "compute network compute is roce, not InfiniBand, at 32 GPUs (InfiniBand advised "
            "from 32 GPUs)");
}

TEST(LintFabric, NoInfinibandQuietBelowThirtyTwoOrOnIb) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kRoce;
  o.nodes = 3;
  EXPECT_TRUE(LintRule(CleanCluster(o), "fabric.no_infiniband").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "fabric.no_infiniband").empty());
}

TEST(LintFabric, NoInfinibandOverride) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kRoce;
  model::Cluster c = CleanCluster(o);
  Override(c, "fabric.no_infiniband.min_gpus", 64);
  EXPECT_TRUE(LintRule(c, "fabric.no_infiniband").empty());
}

TEST(LintFabric, RoceScaleFires) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kRoce;
  o.nodes = 17;
  std::vector<Finding> f = LintRule(CleanCluster(o), "fabric.roce_scale");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "compute network compute is RoCE carrying 136 GPUs, above 128 GPUs; at this scale use "
            "InfiniBand");
}

TEST(LintFabric, RoceScaleQuietAtOneTwentyEight) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kRoce;
  o.nodes = 16;
  EXPECT_TRUE(LintRule(CleanCluster(o), "fabric.roce_scale").empty());
}

TEST(LintFabric, RoceScaleOverride) {
  FixtureOptions o;
  o.net_kind = model::NetKind::kRoce;
  o.nodes = 17;
  model::Cluster c = CleanCluster(o);
  Override(c, "fabric.roce_scale.max_gpus", 256);
  EXPECT_TRUE(LintRule(c, "fabric.roce_scale").empty());
}

TEST(LintFabric, L2TopologyFires) {
  model::Cluster c = CleanCluster();
  c.networks[0].topology = model::Topology::kL2;
  std::vector<Finding> f = LintRule(c, "fabric.l2_topology");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "compute network compute is a flat L2 network (spanning tree); use a fat-tree, "
            "spine-leaf or torus");
}

TEST(LintFabric, L2TopologyQuietOnStorageNetwork) {
  model::Cluster c = CleanCluster();
  c.networks[1].topology = model::Topology::kL2;
  EXPECT_TRUE(LintRule(c, "fabric.l2_topology").empty());
}

// ---------------------------------------------------------------- oversubscription

model::Cluster HalfUplinksOnLeaf1() {
  model::Cluster c = CleanCluster();
  // leaf1's uplinks are its ports 5-8; drop 7 and 8.
  std::erase_if(c.links, [](const model::Link& l) {
    return l.a.kind == Endpoint::Kind::kSwitchPort && l.a.device == "leaf1" && l.a.port >= 7;
  });
  return c;
}

TEST(LintFabric, OversubscriptionFires) {
  std::vector<Finding> f = LintRule(HalfUplinksOnLeaf1(), "fabric.oversubscription");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "leaf1: 4 x 400 Gb/s down vs 2 x 400 Gb/s up = 2:1 oversubscribed (limit 1:1)");
  EXPECT_EQ(f[0].objects, std::vector<std::string>{"leaf1"});
  EXPECT_EQ(f[0].where.line, 60);
}

TEST(LintFabric, OversubscriptionShowsMixedRates) {
  model::Cluster c = HalfUplinksOnLeaf1();
  LinkOf(c, "gpu001", "mlx5_0")->rate_bytes_per_s = 200 * kGbps;
  std::vector<Finding> f = LintRule(c, "fabric.oversubscription");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "leaf1: 3 x 400 Gb/s + 1 x 200 Gb/s down vs 2 x 400 Gb/s up = 1.75:1 oversubscribed "
            "(limit 1:1)");
}

TEST(LintFabric, OversubscriptionOverride) {
  model::Cluster c = HalfUplinksOnLeaf1();
  Override(c, "fabric.oversubscription.max_ratio", 2);
  EXPECT_TRUE(LintRule(c, "fabric.oversubscription").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "fabric.oversubscription").empty());
}

TEST(LintFabric, OversubscriptionIgnoresStorageFabric) {
  model::Cluster c = CleanCluster();
  c.switches.push_back(
      {"sleaf", model::SwitchTier::kLeaf, "storage", "SN4600", 64, 100 * kGbps, {}, "", At(90)});
  c.switches.push_back(
      {"sspine", model::SwitchTier::kSpine, "storage", "SN4600", 64, 100 * kGbps, {}, "", At(91)});
  for (int i = 0; i < 4; ++i) {
    c.links.push_back(
        {Nic(fmt::format("gpu{:03}", i + 1), "eth0"), Port("sleaf", i + 1), 100 * kGbps, At(92)});
  }
  c.links.push_back({Nic("head01", "eth0"), Port("sleaf", 5), 100 * kGbps, At(92)});
  c.links.push_back({Port("sleaf", 40), Port("sspine", 1), 100 * kGbps, At(93)});
  EXPECT_TRUE(LintRule(c, "fabric.oversubscription").empty());  // 5:1, but not the compute fabric
}

// ---------------------------------------------------------------- missing uplinks

TEST(LintFabric, MissingUplinksFiresForIslands) {
  std::vector<Finding> f = LintRule(TwoLeaves(false, false), "fabric.missing_uplinks");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message,
            "nodes on network compute are split into 2 islands with no switch path between them: "
            "gpu[001-002] (leaf1); gpu[003-004] (leaf2)");
  EXPECT_EQ(f[0].objects, (std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu004"}));
}

TEST(LintFabric, MissingUplinksFiresForOneLeafWithoutUplinks) {
  std::vector<Finding> f = LintRule(TwoLeaves(false, true), "fabric.missing_uplinks");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "nodes on network compute are split into 2 islands with no switch path between them: "
            "gpu[001-002] (leaf1); gpu[003-004] (leaf2)");
}

TEST(LintFabric, MissingUplinksFiresForLoneLeaf) {
  model::Cluster c = TwoLeaves(true, true);
  c.switches.push_back(
      {"leaf3", model::SwitchTier::kLeaf, "compute", "QM9700", 64, 400 * kGbps, {}, "", At(63)});
  std::vector<Finding> f = LintRule(c, "fabric.missing_uplinks");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "leaf leaf3 on network compute has no uplinks; with 3 leaves the fabric is "
            "partitioned");
  EXPECT_EQ(f[0].where.line, 63);
}

TEST(LintFabric, MissingUplinksQuietWhenConnected) {
  EXPECT_TRUE(LintRule(TwoLeaves(true, true), "fabric.missing_uplinks").empty());
  EXPECT_TRUE(LintRule(CleanCluster(), "fabric.missing_uplinks").empty());
}

TEST(LintFabric, MissingUplinksToleratesRailOnlyFabric) {
  // No spine: every node reaches every rail leaf, so nodes still form one island.
  model::Cluster c = CleanCluster();
  std::erase_if(c.links,
                [](const model::Link& l) { return l.a.kind == Endpoint::Kind::kSwitchPort; });
  std::erase_if(c.switches, [](const model::Switch& s) { return s.name == "spine1"; });
  EXPECT_TRUE(LintRule(c, "fabric.missing_uplinks").empty());
}

// ---------------------------------------------------------------- rail alignment

TEST(LintFabric, RailAlignmentFiresForCrossedCables) {
  model::Cluster c = CleanCluster();
  std::swap(LinkOf(c, "gpu003", "mlx5_0")->b, LinkOf(c, "gpu003", "mlx5_1")->b);
  std::vector<Finding> f = LintRule(c, "fabric.rail_alignment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "gpu003 on rail-optimized network compute: rail 0 lands on leaf2 and rail 1 on leaf1, each on the "
            "other's leaf; swap the two cables");
}

// #28 item 4: 4 rails on 2 leaves, each rail whole on one leaf, is aligned (it used to warn that
// a leaf "carries NICs of 2 rails"); one NIC on the other leaf is named with its rail's leaf.
TEST(LintFabric, RailAlignmentAcceptsSeveralWholeRailsPerLeafAndNamesAStray) {
  model::Cluster c = CleanCluster();
  const std::vector<std::string> nodes = {"gpu001", "gpu002", "gpu003", "gpu004"};
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    for (int r = 0; r < 4; ++r) {
      LinkOf(c, nodes[n], fmt::format("mlx5_{}", r))->b = Port(r < 2 ? "leaf1" : "leaf2", 1 + static_cast<int>(n) * 4 + r);
    }
  }
  EXPECT_TRUE(LintRule(c, "fabric.rail_alignment").empty()) << Dump(Lint(c));
  LinkOf(c, "gpu004", "mlx5_3")->b = Port("leaf1", 40);
  std::vector<Finding> f = LintRule(c, "fabric.rail_alignment");
  ASSERT_EQ(f.size(), 1u) << Dump(Lint(c));
  EXPECT_EQ(f[0].message,
            "rail 3 of node gpu004 on rail-optimized network compute lands on leaf1; rail 3 of the other 3 nodes "
            "sharing a leaf with it lands on leaf2");
  EXPECT_EQ(f[0].objects, (std::vector<std::string>{"gpu004", "leaf1"}));
}

// Two scalable units, each with its own leaf per rail: the same rail on different leaves is the
// design, not a miswire.
TEST(LintFabric, RailAlignmentAcceptsARailPerLeafPerUnit) {
  model::Cluster c = CleanCluster();
  for (int r = 0; r < 4; ++r) {
    model::Switch second = *c.FindSwitch(fmt::format("leaf{}", r + 1));
    second.name = fmt::format("leaf{}", r + 5);
    c.switches.push_back(second);
  }
  for (const std::string node : {"gpu003", "gpu004"}) {
    for (int r = 0; r < 4; ++r) {
      LinkOf(c, node, fmt::format("mlx5_{}", r))->b = Port(fmt::format("leaf{}", r + 5), node == "gpu003" ? 1 : 2);
    }
  }
  EXPECT_TRUE(LintRule(c, "fabric.rail_alignment").empty()) << Dump(Lint(c));
  // A cable of the second unit on the first unit's leaf does not join the units; in a unit of
  // two there is no majority, so the split is named without blame.
  LinkOf(c, "gpu004", "mlx5_2")->b = Port("leaf3", 40);
  std::vector<Finding> f = LintRule(c, "fabric.rail_alignment");
  ASSERT_EQ(f.size(), 1u) << Dump(Lint(c));
  EXPECT_EQ(f[0].message,
            "rail 2 on rail-optimized network compute splits across leaf3 (gpu004), leaf7 (gpu003) within one "
            "scalable unit; the same rail of nodes that share a leaf should share its leaf too");
}

TEST(LintFabric, RailAlignmentFiresForAllRailsOnOneLeaf) {
  model::Cluster c = CleanCluster();
  for (int r = 1; r < 4; ++r) {
    LinkOf(c, "gpu001", fmt::format("mlx5_{}", r))->b = Port("leaf1", 20 + r);
  }
  std::vector<Finding> f = LintRule(c, "fabric.rail_alignment");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "node gpu001 on rail-optimized network compute lands all its rails (4) on leaf1; "
            "each rail belongs on its own leaf");
}

TEST(LintFabric, RailAlignmentQuietWhenAlignedOrNotRailOptimized) {
  EXPECT_TRUE(LintRule(CleanCluster(), "fabric.rail_alignment").empty());
  model::Cluster c = CleanCluster();
  c.networks[0].topology = model::Topology::kFatTree;
  std::swap(LinkOf(c, "gpu003", "mlx5_0")->b, LinkOf(c, "gpu003", "mlx5_1")->b);
  EXPECT_TRUE(LintRule(c, "fabric.rail_alignment").empty());
}

// ---------------------------------------------------------------- cabling

TEST(LintFabric, DanglingFiresForUncabledNicsAndIdleSwitches) {
  model::Cluster c = CleanCluster();
  std::erase_if(c.links, [](const model::Link& l) {
    return l.a.kind == Endpoint::Kind::kNic && l.a.nic == "mlx5_3" &&
           (l.a.device == "gpu002" || l.a.device == "gpu003");
  });
  c.switches.push_back(
      {"spare", model::SwitchTier::kLeaf, "compute", "QM9700", 64, 400 * kGbps, {}, "", At(66)});
  std::vector<Finding> f = LintRule(c, "fabric.dangling");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "NIC mlx5_3 on gpu[002-003] (network compute) is not cabled to any switch");
  EXPECT_EQ(f[0].objects, (std::vector<std::string>{"gpu002", "gpu003"}));
  EXPECT_EQ(f[0].where.line, 26);
  EXPECT_EQ(f[1].message, "switch spare (network compute) has no links");
}

TEST(LintFabric, DanglingQuietWhenCabled) {
  // The storage network has no switches, so its NICs are not expected to have links.
  EXPECT_TRUE(LintRule(CleanCluster(), "fabric.dangling").empty());
}

TEST(LintFabric, SwitchCapacityFiresForTooManyPorts) {
  model::Cluster c = CleanCluster();
  c.switches[0].ports = 6;  // leaf1 uses 8
  std::vector<Finding> f = LintRule(c, "fabric.switch_capacity");
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].message, "switch leaf1 has 8 ports cabled but only 6");
  EXPECT_EQ(f[1].message, "link to leaf1 port 7 (spine1:3) is past its 6 ports");
  EXPECT_EQ(f[2].message, "link to leaf1 port 8 (spine1:4) is past its 6 ports");
}

TEST(LintFabric, SwitchCapacityFiresForPortCabledTwice) {
  model::Cluster c = CleanCluster();
  LinkOf(c, "gpu002", "mlx5_0")->b.port = 1;
  std::vector<Finding> f = LintRule(c, "fabric.switch_capacity");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message, "port leaf1:1 is cabled 2 times (gpu[001-002]:mlx5_0)");
  EXPECT_EQ(f[0].where.line, 70);
}

TEST(LintFabric, SwitchCapacityWarnsForSlowLink) {
  model::Cluster c = CleanCluster();
  LinkOf(c, "gpu001", "mlx5_0")->rate_bytes_per_s = 200 * kGbps;
  std::vector<Finding> f = LintRule(c, "fabric.switch_capacity");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "leaf1: 1 link is written at 200 Gb/s (gpu001:mlx5_0), below both ends (the slower runs 400 Gb/s): a "
            "slower cable, or a link up at reduced width, which halves bandwidth");
}

// #28 item 12: a switch port faster than the NIC on it is a split port or a slower NIC, never
// "reduced width: bandwidth halved"; the message says how to declare a split made on purpose.
TEST(LintFabric, SwitchCapacityCallsAFasterPortASplitOrASlowerNicNotReducedWidth) {
  model::Cluster c = CleanCluster();
  c.switches[0].port_rate_bytes_per_s = 800 * kGbps;  // leaf1: its NICs run at 400
  for (model::Link& l : c.links) {
    if (l.b.kind == Endpoint::Kind::kSwitchPort && l.b.device == "leaf1" && l.a.kind == Endpoint::Kind::kNic) {
      l.rate_bytes_per_s = 400 * kGbps;
    }
  }
  std::vector<Finding> f = LintRule(c, "fabric.switch_capacity");
  std::vector<std::string> messages;
  for (const Finding& x : f) messages.push_back(x.message);
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.front(),
            "leaf1: 8 links run at 400 Gb/s on leaf1's 800 Gb/s ports (gpu[001-004]:mlx5_0, spine1:[1-4]): a slower NIC, "
            "or a port "
            "split on purpose; declare a split switch by its logical ports (port_rate: 400 Gb/s, ports: the count "
            "after the split)")
      << ::testing::PrintToString(messages);
  for (const std::string& m : messages) EXPECT_EQ(m.find("reduced width"), std::string::npos) << m;
}

TEST(LintFabric, SwitchCapacityWarnsForNicFasterThanPort) {
  model::Cluster c = CleanCluster();
  c.switches[1].port_rate_bytes_per_s = 200 * kGbps;  // leaf2
  for (model::Link& l : c.links) {
    for (Endpoint* e : {&l.a, &l.b}) {
      if (e->kind == Endpoint::Kind::kSwitchPort && e->device == "leaf2")
        l.rate_bytes_per_s = 200 * kGbps;
    }
  }
  std::vector<Finding> f = LintRule(c, "fabric.switch_capacity");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "leaf2: 8 links run at 200 Gb/s, the switch's port rate, below the 400 Gb/s of their other ends "
            "(gpu[001-004]:mlx5_1, spine1:[5-8])");
}

TEST(LintFabric, SwitchCapacityQuietWhenWithinPorts) {
  EXPECT_TRUE(LintRule(CleanCluster(), "fabric.switch_capacity").empty());
}

// ---------------------------------------------------------------- rates

TEST(LintFabric, NicRateFires) {
  FixtureOptions o;
  o.nics_per_node = 1;
  o.nic_rate = 200 * kGbps;
  std::vector<Finding> f = LintRule(CleanCluster(o), "fabric.nic_rate");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "profile hgx (nodes gpu[001-004]) has 200 Gb/s of compute network bandwidth per node "
            "(1 x 200 Gb/s), below 400 Gb/s");
}

TEST(LintFabric, NicRateQuietAtFourHundredOrOneNode) {
  FixtureOptions o;
  o.nics_per_node = 1;
  EXPECT_TRUE(LintRule(CleanCluster(o), "fabric.nic_rate").empty());
  o.nic_rate = 200 * kGbps;
  o.nodes = 1;
  EXPECT_TRUE(LintRule(CleanCluster(o), "fabric.nic_rate").empty());
}

TEST(LintFabric, NicRateOverride) {
  FixtureOptions o;
  o.nics_per_node = 1;
  o.nic_rate = 200 * kGbps;
  model::Cluster c = CleanCluster(o);
  Override(c, "fabric.nic_rate.min_bytes_per_s", 25e9);
  EXPECT_TRUE(LintRule(c, "fabric.nic_rate").empty());
}

TEST(LintFabric, IbLinkRateFires) {
  FixtureOptions o;
  o.nic_rate = 100 * kGbps;  // EDR: 4 x 100 Gb/s passes nic_rate but is below HDR
  model::Cluster c = CleanCluster(o);
  EXPECT_TRUE(LintRule(c, "fabric.nic_rate").empty());
  std::vector<Finding> f = LintRule(c, "fabric.ib_link_rate");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "InfiniBand NICs mlx5_[0-3] on nodes gpu[001-004] run at 100 Gb/s or less, below "
            "200 Gb/s (HDR)");
}

TEST(LintFabric, IbLinkRateQuietForRoceOrOverride) {
  FixtureOptions o;
  o.nic_rate = 100 * kGbps;
  o.net_kind = model::NetKind::kRoce;
  EXPECT_TRUE(LintRule(CleanCluster(o), "fabric.ib_link_rate").empty());
  o.net_kind = model::NetKind::kInfiniband;
  model::Cluster c = CleanCluster(o);
  Override(c, "fabric.ib_link_rate.min_bytes_per_s", 12.5e9);
  EXPECT_TRUE(LintRule(c, "fabric.ib_link_rate").empty());
}

// ---------------------------------------------------------------- storage network

TEST(LintFabric, NoStorageNetworkFiresWithoutOne) {
  model::Cluster c = CleanCluster();
  c.networks.pop_back();
  std::vector<Finding> f = LintRule(c, "network.no_storage_network");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].message,
            "no storage or control network: checkpoints, data loading and control traffic share "
            "compute network compute");
}

TEST(LintFabric, NoStorageNetworkFiresForNodesOffIt) {
  model::Cluster c = CleanCluster();
  GpuProfile(c).nics.pop_back();  // eth0
  std::vector<Finding> f = LintRule(c, "network.no_storage_network");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "GPU nodes gpu[001-004] have no NIC on a storage or control network (storage), so "
            "their file I/O rides the compute fabric");
}

TEST(LintFabric, NoStorageNetworkFiresForTierOnComputeFabric) {
  model::Cluster c = CleanCluster();
  c.storage.tiers[1].network = "compute";
  std::vector<Finding> f = LintRule(c, "network.no_storage_network");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].message,
            "storage tier lustre (warm) is reached over compute network compute; data loading and "
            "checkpoints then compete with gradients");
  EXPECT_EQ(f[0].where.line, 82);
}

TEST(LintFabric, NoStorageNetworkQuietWhenSeparateOrSingleNode) {
  EXPECT_TRUE(LintRule(CleanCluster(), "network.no_storage_network").empty());
  FixtureOptions o;
  o.nodes = 1;
  model::Cluster c = CleanCluster(o);
  c.networks.pop_back();
  EXPECT_TRUE(LintRule(c, "network.no_storage_network").empty());
}

}  // namespace
}  // namespace gpuforge::lint
