// The pci-tree section: parsing the measured HGX H100 tree, NCCL's view of it (chains and
// distances), hostile input, and isolation of a refused section from the node's other facts.

#include "facts/pci_tree.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "facts/fixtures.h"
#include "gpuforge/facts/gather.h"

namespace gpuforge::facts {
namespace {

using testing::ReadFixture;

model::PciTree Hgx() {
  Result<model::PciTree> t = ParsePciTree(ReadFixture("pci-tree-hgx-h100.txt"));
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : model::PciTree{};
}

TEST(PciTree, ParsesTheMeasuredHgxTree) {
  model::PciTree t = Hgx();
  ASSERT_EQ(t.endpoints.size(), 16u);
  const model::PciEndpoint* gpu = t.Endpoint("0000:d9:00.0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->kind, model::PciEndpointKind::kGpu);
  EXPECT_EQ(gpu->host_bridge, "pci0000:d6");
  EXPECT_EQ(gpu->path, (std::vector<std::string>{"0000:d6:01.0", "0000:d7:00.0", "0000:d8:00.0",
                                                 "0000:d9:00.0"}));
  EXPECT_EQ(gpu->numa_node, 1);
  const model::PciEndpoint* nic = t.Endpoint("0000:da:00.0");
  ASSERT_NE(nic, nullptr);
  EXPECT_EQ(nic->kind, model::PciEndpointKind::kNic);
  EXPECT_EQ(nic->rdma_devices, std::vector<std::string>{"mlx5_7"});
  const model::PciFunction* sw = t.Function("0000:d7:00.0");
  ASSERT_NE(sw, nullptr);
  EXPECT_EQ(sw->class_code, 0x060400u);
  EXPECT_EQ(sw->vendor, 0x1000u);
  EXPECT_EQ(sw->device, 0xc030u);
  EXPECT_EQ(sw->max_link_speed_gts, 32.0);
  EXPECT_EQ(sw->max_link_width, 16);
  ASSERT_EQ(t.cpumaps.size(), 2u);
  EXPECT_EQ(t.cpumaps[0].second, "00000000,000000ff,ffffffff,ffff0000,00000000,00ffffff,ffffffff");
  EXPECT_EQ(t.cpu_vendor, "GenuineIntel");
  EXPECT_EQ(t.arch, "x86_64");
}

// NCCL's chain skips root and downstream ports: the switch appears as its upstream port.
TEST(PciTree, NcclChainAndDistances) {
  model::PciTree t = Hgx();
  EXPECT_EQ(model::NcclPciChain(*t.Endpoint("0000:d9:00.0")),
            (std::vector<std::string>{"0000:d7:00.0", "0000:d9:00.0"}));
  EXPECT_EQ(PciDistance(t, "0000:d9:00.0", "0000:da:00.0"), "PIX");   // one switch
  EXPECT_EQ(PciDistance(t, "0000:18:00.0", "0000:39:00.0"), "PHB");   // two host bridges
  EXPECT_EQ(PciDistance(t, "0000:18:00.0", "0000:da:00.0"), "SYS");   // two sockets
  EXPECT_EQ(PciDistance(t, "0000:18:00.0", "0000:00:00.0"), std::nullopt);
  // A second switch level under one root port: PXB.
  model::PciEndpoint deep = *t.Endpoint("0000:d9:00.0");
  deep.bdf = "0000:f0:00.0";
  deep.path = {"0000:d6:01.0", "0000:d7:00.0", "0000:d8:02.0", "0000:e0:00.0", "0000:e1:00.0",
               "0000:f0:00.0"};
  t.endpoints.push_back(deep);
  EXPECT_EQ(PciDistance(t, "0000:da:00.0", "0000:f0:00.0"), "PXB");
}

TEST(PciTree, HostileInputIsRefusedWithTheLine) {
  EXPECT_EQ(ParsePciTree("path /etc/passwd\n").error().message,
            "line 1: expected a path under /sys/devices, got '/etc/passwd'");
  EXPECT_EQ(ParsePciTree("path /sys/devices/pci0000:00/0000:00:01.0/../../x\n").error().message,
            "line 1: '..' below bus id 0000:00:01.0 is not a bus id");
  EXPECT_EQ(ParsePciTree("rdma 0000:00:01.0 mlx5_0\x1b[2J\n").error().message.substr(0, 47),
            "line 1: expected 'rdma <bus id> <value>', got '");
  EXPECT_EQ(ParsePciTree("fn 0000:00:01.0 class $(reboot)\n").error().message,
            "line 1: 0000:00:01.0 class: expected a hex number, got '$(reboot)'");
  EXPECT_EQ(ParsePciTree("cpumap 0 ffff;rm\n").error().message,
            "line 1: expected 'cpumap <node> <hex mask>', got 'cpumap 0 ffff;rm'");
  // A path whose functions never got their attributes: cut off.
  EXPECT_EQ(ParsePciTree("path /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0\n").error().message,
            "0000:01:00.0: no class or vendor of 0000:00:01.0 on its path (truncated output?)");
  std::string many;
  for (int i = 0; i <= 1024; ++i) {
    many += fmt::format("path /sys/devices/pci0000:00/0000:{:02x}:{:02x}.{}\n", i / 256, (i / 8) % 32, i % 8);
  }
  EXPECT_EQ(ParsePciTree(many).error().message, "line 1025: more than 1024 GPUs and NICs");
  EXPECT_FALSE(ParsePciTree(std::string(17u << 20, 'a')).ok());
}

// A refused pci-tree section costs the node nothing else.
TEST(PciTree, RefusedSectionKeepsTheNodesOtherFacts) {
  std::string out = "@@gpuforge-facts begin format=1@@\n";
  for (const SectionSpec& s : GatherSections()) {
    if (s.name == "uname") {
      out += "@@gpuforge-facts section=uname rc=0@@\n6.8.0-45-generic\n";
    } else if (s.name == "meminfo") {
      out += "@@gpuforge-facts section=meminfo rc=0@@\nMemTotal: 1024 kB\n";
    } else if (s.name == "pci-tree") {
      out += "@@gpuforge-facts section=pci-tree rc=0@@\npath /proc/self/../../etc\n";
    } else {
      out += fmt::format("@@gpuforge-facts section={} rc=absent@@\n", s.name);
    }
  }
  out += "@@gpuforge-facts end@@\n";
  Result<NodeFacts> f = ParseGather("gpu01", out);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_FALSE(f->pci_tree);
  EXPECT_EQ(f->pci_tree_refused, "line 1: expected a path under /sys/devices, got '/proc/self/../../etc'");
  EXPECT_EQ(f->kernel, "6.8.0-45-generic");
  EXPECT_EQ(f->memory_bytes, 1024u * 1024u);
}

}  // namespace
}  // namespace gpuforge::facts
