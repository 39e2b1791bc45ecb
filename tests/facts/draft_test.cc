#include "gpuforge/facts/draft.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/report/init_yaml.h"

namespace gpuforge::facts {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

// An HGX H200 node as the gather script reports it: 8 GPUs, 4 NDR HCAs, 2 x 56 cores, 2 TB,
// 8 NVMe drives, one Ethernet port; the kind most nodes of a delivery are.
NodeFacts H200(const std::string& node) {
  NodeFacts f;
  f.node = node;
  for (std::string_view sec : {"pci", "nvidia-smi-query", "infiniband"}) {
    f.sections.push_back(Section{std::string(sec), std::string(sec), Outcome::kOk, 0, ""});
  }
  f.os = OsRelease{"ubuntu", "24.04", "Ubuntu 24.04.1 LTS"};
  f.cpu = CpuInfo{"INTEL(R) XEON(R) PLATINUM 8580", 224, "0-223", 2, 56, 2, 2};
  f.memory_bytes = 2'063'340 * kMiB;
  f.driver = DriverInfo{"580.95.05", true};
  for (int i = 0; i < 8; ++i) {
    Gpu g;
    g.index = i;
    g.name = "NVIDIA H200";
    g.pci_device_id = 0x2335;
    g.memory_total_bytes = 143771 * kMiB;
    g.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + i * 0x10);
    f.gpus.push_back(g);
    f.pci.push_back(PciDevice{g.pci_bus_id, PciKind::kGpu, 0x10de, 0x2335, 0x030200, i / 4, 32.0, 32.0, 16, 16, {}, {}});
  }
  for (int i = 0; i < 4; ++i) {
    std::string name = fmt::format("mlx5_{}", i);
    f.pci.push_back(PciDevice{fmt::format("0000:{:02x}:00.0", 0x17 + i * 0x20), PciKind::kNic, 0x15b3, 0x1021,
                              0x020700, i / 2, 32.0, 32.0, 16, 16, {fmt::format("ibp{}s0", i)}, {name}});
    IbDevice d{name, "28.39.1002", "MT_0000000838", "", {fmt::format("ibp{}s0", i)}, {}};
    d.ports.push_back(IbPort{1, "ACTIVE", "LinkUp", "400 Gb/sec (4X NDR)", 400.0, 4, "NDR", "InfiniBand", 7, ""});
    f.ib.push_back(d);
  }
  f.pci.push_back(PciDevice{"0000:c1:00.0", PciKind::kNic, 0x8086, 0x1593, 0x020000, 1, 8.0, 8.0, 8, 8, {"eno1"}, {}});
  f.net_speed_mbps["eno1"] = 25000;
  for (int i = 0; i < 8; ++i) f.nvme.push_back({fmt::format("nvme{}n1", i), 3'840'755'982'336, "SAMSUNG MZWLO3T8HCLS-00A07"});
  f.versions.cuda = "12.8.93";
  f.versions.nccl = "2.26.2";
  f.versions.rdma_core = "50.0";
  return f;
}

NodeFacts Cpu(const std::string& node) {
  NodeFacts f;
  f.node = node;
  f.os = OsRelease{"ubuntu", "24.04", ""};
  f.cpu = CpuInfo{"AMD EPYC 9124 16-Core Processor", 32, "0-31", 1, 16, 2, 1};
  f.memory_bytes = 257'000 * kMiB;
  return f;
}

std::vector<Gathered> Nodes(int n, const std::function<void(int, NodeFacts&)>& change = {}) {
  std::vector<Gathered> out;
  for (int i = 1; i <= n; ++i) {
    std::string name = fmt::format("gpu{:03}", i);
    NodeFacts f = H200(name);
    if (change) change(i, f);
    out.push_back({name, std::move(f)});
  }
  return out;
}

const DraftProfile* Find(const Draft& d, std::string_view name) {
  for (const DraftProfile& p : d.profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(MakeDraft, IdenticalNodesAreOneProfileWithWhatTheyReported) {
  const Draft d = MakeDraft(Nodes(16));
  ASSERT_EQ(d.profiles.size(), 1u);
  const DraftProfile& p = d.profiles[0];
  EXPECT_EQ(p.name, "h200x8");
  EXPECT_EQ(p.nodes.size(), 16u);
  ASSERT_TRUE(p.gpus);
  EXPECT_EQ(p.gpus->model, "H200");
  EXPECT_TRUE(p.gpus->in_catalogue);
  EXPECT_EQ(p.gpus->count, 8);
  EXPECT_EQ(p.gpus->pci[3], "0000:48:00.0");
  EXPECT_EQ(p.gpus->numa, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  ASSERT_EQ(p.nics.size(), 5u);
  EXPECT_EQ(p.nics[0].name, "mlx5_0");
  EXPECT_EQ(p.nics[0].kind, "infiniband");
  EXPECT_EQ(p.nics[0].rate_gbps, 400);
  EXPECT_EQ(p.nics[0].netdev, "ibp0s0");
  EXPECT_EQ(p.nics[0].pci_id, "15b3:1021");
  EXPECT_EQ(p.nics[4].name, "eno1");
  EXPECT_EQ(p.nics[4].kind, "ethernet");
  EXPECT_EQ(p.nics[4].rate_gbps, 25);
  EXPECT_EQ(p.nvme_count, 8);
  // MemTotal 2,063,340 MiB is 2014.98 GiB: the next whole GiB, never below what the node has.
  EXPECT_EQ(p.memory_bytes, 2015ULL << 30);
  EXPECT_TRUE(p.outlier_of.empty());
  EXPECT_EQ(d.software.driver.value, "580.95.05");
  EXPECT_TRUE(d.software.driver.dissent.empty());
  EXPECT_TRUE(d.unreached.empty());
}

TEST(MakeDraft, TheOneNodeThatDiffersIsItsMajoritysOutlierAndSaysHow) {
  std::vector<Gathered> g = Nodes(16, [](int i, NodeFacts& f) {
    if (i == 7) {  // one GPU fell off the bus
      f.gpus.pop_back();
      f.pci.erase(f.pci.begin() + 7);
    }
    if (i == 11) f.ib[2].ports[0].rate_gbps = 200, f.ib[2].ports[0].rate = "200 Gb/sec (2X NDR)";
    if (i == 13) *f.memory_bytes -= 128 * 1024 * kMiB;  // two 64 GB DIMMs missing
  });
  const Draft d = MakeDraft(g);
  ASSERT_EQ(d.profiles.size(), 4u);
  EXPECT_EQ(d.profiles[0].name, "h200x8");
  EXPECT_EQ(d.profiles[0].nodes.size(), 13u);
  const DraftProfile* seven = Find(d, "h200x8-gpu007");
  ASSERT_NE(seven, nullptr);
  EXPECT_EQ(seven->outlier_of, "h200x8");
  ASSERT_EQ(seven->differences.size(), 1u);
  EXPECT_EQ(seven->differences[0], "7 GPUs where h200x8 has 8");
  const DraftProfile* slow = Find(d, "h200x8-gpu011");
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->differences, std::vector<std::string>{"mlx5_2 at 200Gb/s where h200x8 has 400Gb/s"});
  const DraftProfile* small = Find(d, "h200x8-gpu013");
  ASSERT_NE(small, nullptr);
  ASSERT_EQ(small->differences.size(), 1u);
  EXPECT_EQ(small->differences[0].rfind("1886 GiB of memory (MemTotal) where h200x8 has 2014 GiB", 0), 0u)
      << small->differences[0];
  // Each node is in exactly one profile.
  std::size_t total = 0;
  for (const DraftProfile& p : d.profiles) total += p.nodes.size();
  EXPECT_EQ(total, 16u);
}

TEST(MakeDraft, OtherHardwareIsAProfileOfItsOwnNotAnOutlier) {
  std::vector<Gathered> g = Nodes(4);
  g.push_back({"head01", Cpu("head01")});
  const Draft d = MakeDraft(g);
  ASSERT_EQ(d.profiles.size(), 2u);
  EXPECT_EQ(d.profiles[1].name, "cpu-16c");
  EXPECT_TRUE(d.profiles[1].outlier_of.empty());
  EXPECT_FALSE(d.profiles[1].gpus);
}

TEST(MakeDraft, MemTotalWithinTwoPercentIsTheSameMemory) {
  const Draft d = MakeDraft(Nodes(3, [](int i, NodeFacts& f) { *f.memory_bytes += static_cast<std::uint64_t>(i) * 40 * kMiB; }));
  ASSERT_EQ(d.profiles.size(), 1u);
  EXPECT_EQ(d.profiles[0].memtotal_max, (2'063'340 + 120) * kMiB);
  EXPECT_GE(d.profiles[0].memory_bytes, d.profiles[0].memtotal_max);
}

TEST(MakeDraft, UnreachedNodesAreListedNotInvented) {
  std::vector<Gathered> g = Nodes(2);
  g.push_back({"gpu003", Error{"node gpu003: connect to 198.18.0.13:22: Connection refused"}});
  const Draft d = MakeDraft(g);
  ASSERT_EQ(d.unreached.size(), 1u);
  EXPECT_EQ(d.unreached[0].node, "gpu003");
  EXPECT_NE(d.unreached[0].why.find("Connection refused"), std::string::npos);
  EXPECT_EQ(d.nodes.size(), 2u);
}

TEST(MakeDraft, WithoutADriverThePciBusStillCountsTheGpus) {
  const Draft d = MakeDraft(Nodes(2, [](int, NodeFacts& f) {
    f.gpus.clear();
    f.driver.reset();
  }));
  ASSERT_EQ(d.profiles.size(), 1u);
  ASSERT_TRUE(d.profiles[0].gpus);
  EXPECT_EQ(d.profiles[0].gpus->count, 8);
  EXPECT_EQ(d.profiles[0].gpus->model, "H200");
  EXPECT_NE(d.profiles[0].gpus->source.find("PCI bus"), std::string::npos);
}

TEST(MakeDraft, VersionsTakeTheMajorityAndNameTheOthers) {
  const Draft d = MakeDraft(Nodes(5, [](int i, NodeFacts& f) {
    if (i == 4) f.driver = DriverInfo{"550.54.15", true};
  }));
  EXPECT_EQ(d.software.driver.value, "580.95.05");
  EXPECT_EQ(d.software.driver.dissent, std::vector<std::string>{"gpu004: 550.54.15"});
}

TEST(MakeDraft, HostileNamesFromANodeAreLeftOutAndSaidSo) {
  const Draft d = MakeDraft(Nodes(1, [](int, NodeFacts& f) {
    f.ib[0].name = "mlx5_0\nnodes: [evil]";
    f.cpu->model = "Xeon\"\n- evil";
    f.nvme[0].model = "X\ny: 1";
  }));
  ASSERT_EQ(d.profiles.size(), 1u);
  const DraftProfile& p = d.profiles[0];
  EXPECT_EQ(p.nics.size(), 4u);
  EXPECT_TRUE(p.cpu && p.cpu->model.empty());
  ASSERT_FALSE(p.left_out.empty());
  EXPECT_NE(p.left_out[0].find("a name the inventory refuses"), std::string::npos);
}

TEST(MakeDraft, LldpNeighboursBecomeLinksOnInventoryNics) {
  const Draft d = MakeDraft(Nodes(1, [](int, NodeFacts& f) {
    LldpSeen s;
    s.neighbors.push_back({"eno1", "leaf1.pod2", "", "", "swp7", "ifname", "", ""});
    s.neighbors.push_back({"docker0", "x", "", "", "1", "ifname", "", ""});  // no inventory NIC
    s.neighbors.push_back({"ibp1s0", "tor-2", "", "", "aa:bb:cc:dd:ee:ff", "mac", "Ethernet48", ""});
    f.lldp = s;
  }));
  ASSERT_EQ(d.links.size(), 2u);
  EXPECT_EQ(d.links[0].nic, "eno1");
  EXPECT_EQ(d.links[0].chassis, "leaf1.pod2");
  EXPECT_EQ(d.links[0].port, 7);
  EXPECT_EQ(d.links[1].nic, "mlx5_1");
  EXPECT_EQ(d.links[1].port, 48);
}

// The written draft loads as it is, and the nodes it was drafted from show no drift against
// it: the majority is clean, and only the outlier's own profile describes the outlier.
TEST(InitYaml, TheDraftLoadsAndItsNodesDoNotDriftFromIt) {
  std::vector<Gathered> g = Nodes(8, [](int i, NodeFacts& f) {
    if (i == 3) {
      f.gpus.pop_back();
      f.pci.erase(f.pci.begin() + 7);
    }
  });
  g.push_back({"head01", Cpu("head01")});
  g.push_back({"gpu009", Error{"node gpu009: connect: No route to host"}});
  const Draft d = MakeDraft(g);
  report::InitYamlOptions o;
  o.cluster_name = "delivery";
  o.generated_by = "gpuforge init --nodes gpu[001-009],head01";
  o.generated_at = "2026-12-06T20:00:00Z";
  o.ssh_user = "ops";
  const std::string yaml = report::InitYaml(d, o);
  inventory::LoadOutcome l = inventory::LoadString(yaml, "draft.yaml");
  ASSERT_TRUE(l.ok()) << l.FormatDiagnostics() << "\n" << yaml;
  const model::Cluster& c = *l.cluster;
  EXPECT_EQ(c.name, "delivery");
  EXPECT_EQ(c.nodes.size(), 9u);
  ASSERT_NE(c.FindNode("gpu003"), nullptr);
  EXPECT_EQ(c.FindNode("gpu003")->profile, "h200x8-gpu003");
  EXPECT_EQ(c.FindNode("gpu001")->profile, "h200x8");
  EXPECT_EQ(c.FindNode("gpu001")->ssh.user, "ops");
  EXPECT_EQ(c.FindNode("gpu009"), nullptr);
  EXPECT_NE(yaml.find("#   gpu003 (profile h200x8-gpu003): 7 GPUs where h200x8 has 8"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("#   gpu009: node gpu009: connect: No route to host"), std::string::npos);
  std::vector<Gathered> reached(g.begin(), g.end() - 1);
  std::vector<std::string> drift;
  for (const Drift& x : FindDrift(c, reached)) drift.push_back(x.code + " " + x.node + " " + x.subject);
  EXPECT_EQ(drift, std::vector<std::string>{});
}

// Nothing a node sends can leave its comment: a newline in a reported name would otherwise
// start a YAML line of the node's choosing.
TEST(InitYaml, TextFromNodesStaysInsideItsComments) {
  std::vector<Gathered> g = Nodes(2, [](int i, NodeFacts& f) {
    f.gpus[0].name = "NVIDIA H200\nnodes: []";
    f.nvme[0].model = "M\ncluster: {name: x}";
    LldpSeen s;
    s.neighbors.push_back({"eno1", "leaf1\nversion: 9", "", "", "swp1\n- a", "ifname", "", ""});
    f.lldp = s;
    if (i == 2) f.driver = DriverInfo{"580.95.05\nsoftware: {}", true};
  });
  g.push_back({"gpu003", Error{"node gpu003: banner\nnodes: [evil]"}});
  const std::string yaml = report::InitYaml(MakeDraft(g), {});
  inventory::LoadOutcome l = inventory::LoadString(yaml, "draft.yaml");
  ASSERT_TRUE(l.ok()) << l.FormatDiagnostics() << "\n" << yaml;
  EXPECT_EQ(l.cluster->nodes.size(), 2u);
  for (std::string_view line : {"nodes: []", "cluster: {name: x}", "version: 9", "nodes: [evil]", "software: {}"}) {
    EXPECT_EQ(yaml.find(std::string("\n") + std::string(line)), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace gpuforge::facts
