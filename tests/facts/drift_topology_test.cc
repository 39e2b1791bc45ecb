// Topology and NUMA drift on the measured HGX H100 tree (tests/data/facts/pci-tree-hgx-h100.txt):
// clean, then with one thing wrong at a time.

#include "facts/drift_topology.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "facts/fixtures.h"
#include "facts/pci_tree.h"

namespace gpuforge::facts {
namespace {

using testing::ReadFixture;

constexpr const char* kGpus[] = {"0000:18:00.0", "0000:38:00.0", "0000:48:00.0", "0000:58:00.0",
                                 "0000:98:00.0", "0000:b8:00.0", "0000:c8:00.0", "0000:d9:00.0"};

model::Profile Hgx() {
  model::Profile p;
  p.name = "hgx";
  model::GpuSpec g;
  g.model = "H100";
  g.count = 8;
  for (int i = 0; i < 8; ++i) {
    g.pci_bus_ids.emplace_back(kGpus[i]);
    g.numa_nodes.push_back(i < 4 ? 0 : 1);
  }
  p.gpus.push_back(g);
  for (int i = 0; i < 8; ++i) {
    model::NicSpec n;
    n.name = fmt::format("mlx5_{}", i);
    n.kind = model::NetKind::kInfiniband;
    n.numa_node = i < 4 ? 0 : 1;
    p.nics.push_back(n);
  }
  return p;
}

NodeFacts Facts(const std::string& tree) {
  NodeFacts f;
  f.node = "gpu01";
  for (int i = 0; i < 8; ++i) {
    Gpu g;
    g.index = i;
    g.pci_bus_id = kGpus[i];
    f.gpus.push_back(g);
  }
  Result<model::PciTree> t = ParsePciTree(tree);
  EXPECT_TRUE(t.ok()) << t.error().message;
  if (t.ok()) f.pci_tree = *t;
  return f;
}

std::string Codes(const std::vector<Drift>& d) {
  std::string s;
  for (const Drift& x : d) s += fmt::format("{} {} {}->{}; ", x.code, x.subject, x.expected, x.actual);
  return s;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

const std::string kTree = ReadFixture("pci-tree-hgx-h100.txt");

TEST(DriftTopology, CleanHgxTreeHasNoFindings) {
  EXPECT_EQ(Codes(TopologyDrift(Hgx(), Facts(kTree))), "");
}

TEST(DriftTopology, GpuNumaAgainstInventory) {
  model::Profile p = Hgx();
  p.gpus[0].numa_nodes[5] = 0;
  EXPECT_EQ(Codes(TopologyDrift(p, Facts(kTree))), "topology.gpu_numa gpu5 0->1; ");
}

// The NIC beside GPU 0 reports the other socket's NUMA node: GPU 0's closest NIC on its own
// socket is then behind another host bridge (PHB), so GPUDirect RDMA would be off.
TEST(DriftTopology, NicOnTheOtherSocket) {
  std::string t = Replace(kTree, "numa 0000:19:00.0 0", "numa 0000:19:00.0 1");
  EXPECT_EQ(Codes(TopologyDrift(Hgx(), Facts(t))),
            "topology.gdr_distance gpu0 PXB or closer->PHB (mlx5_1); topology.nic_numa mlx5_0 0->1; ");
}

// No RDMA NIC left on socket 0: each of its GPUs has its rail on the other socket.
TEST(DriftTopology, RailsOnTheWrongSocket) {
  std::string t = kTree;
  for (const char* nic : {"19", "39", "49", "59"}) {
    t = Replace(t, fmt::format("numa 0000:{}:00.0 0", nic), fmt::format("numa 0000:{}:00.0 1", nic));
  }
  std::vector<Drift> d = TopologyDrift(Hgx(), Facts(t));
  int rail = 0, gdr = 0;
  for (const Drift& x : d) {
    rail += x.code == "topology.nic_numa" && x.subject.starts_with("gpu");
    gdr += x.code == "topology.gdr_distance";
  }
  EXPECT_EQ(rail, 4) << Codes(d);
  EXPECT_EQ(gdr, 4) << Codes(d);
  EXPECT_EQ(d[0].message, "gpu0 (0000:18:00.0, NUMA 0) has its closest RDMA NIC mlx5_0 on NUMA 1: no NIC on its socket");
}

TEST(DriftTopology, DegradedSwitchHop) {
  std::string t = Replace(kTree, "fn 0000:d7:00.0 current_link_width 16", "fn 0000:d7:00.0 current_link_width 8");
  std::vector<Drift> d = TopologyDrift(Hgx(), Facts(t));
  EXPECT_EQ(Codes(d), "pcie.hop_degraded 0000:d7:00.0 32 GT/s x16->32 GT/s x8; ");
  EXPECT_EQ(d[0].message, "bridge 0000:d7:00.0 above 0000:d9:00.0 links at x8 of x16");
}

TEST(DriftTopology, TreeContradictsInventory) {
  model::Profile p = Hgx();
  p.gpus[0].pci_bus_ids[2] = "0000:4a:00.0";
  p.nics[0].pci_bus_id = "0000:18:00.0";
  EXPECT_EQ(Codes(TopologyDrift(p, Facts(kTree))),
            "topology.mismatch 0000:4a:00.0 a GPU->nothing; topology.mismatch 0000:18:00.0 NIC mlx5_0->a GPU; ");
}

TEST(DriftTopology, RefusedTreeIsAFinding) {
  NodeFacts f = Facts(kTree);
  f.pci_tree.reset();
  f.pci_tree_refused = "line 1: expected a path under /sys/devices, got '/etc'";
  EXPECT_EQ(Codes(TopologyDrift(Hgx(), f)), "topology.unreadable pci-tree a PCI tree->refused; ");
}

}  // namespace
}  // namespace gpuforge::facts
