#include "gpuforge/facts/draft.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gpuforge/facts/cabling.h"
#include "gpuforge/facts/gather.h"
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

// A node's HCA k: node GUID 0x0002c90300NNKK00, port 1's GUID one more (iblinkinfo prints the port's).
std::string HcaGuid(int node, int k, int plus = 0) { return fmt::format("0x0002c90300{:02x}{:02x}{:02x}", node, k, plus); }

std::vector<Gathered> NodesWithGuids(int n) {
  return Nodes(n, [](int i, NodeFacts& f) {
    for (std::size_t k = 0; k < f.ib.size(); ++k) {
      f.ib[k].node_guid = HcaGuid(i, static_cast<int>(k));
      f.ib[k].ports[0].port_guid = HcaGuid(i, static_cast<int>(k), 1);
    }
  });
}

// One `iblinkinfo --line` line from the switch's side.
std::string LineOf(std::string_view sw_guid, std::string_view sw_desc, int port, std::string_view peer_guid,
                   std::string_view peer_desc, int peer_port) {
  return fmt::format("{} \"{:>30}\"      4 {:4}[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>  {}     10 {:4}[  ] \"{}\" ( )\n",
                     sw_guid, sw_desc, port, peer_guid, peer_port, peer_desc);
}

// Four H200 nodes, rails 0-1 on leaf-a and 2-3 on an unnamed leaf, both up to one spine; a
// storage host no node drafted; port 40 of leaf-a listed down.
std::string FourNodeSubnet() {
  const std::string a = "0x98039b0300a00001", b = "0x98039b0300b00002", sp = "0x98039b0300c00003";
  const std::string a_desc = "MF0;leaf-a:MQM9700/U1", b_desc = "Quantum Mellanox Technologies",
                    sp_desc = "MF0;spine-1:MQM9700/U1";
  std::string t;
  for (int i = 1; i <= 4; ++i) {
    for (int k = 0; k < 4; ++k) {
      const bool on_a = k < 2;
      t += LineOf(on_a ? a : b, on_a ? a_desc : b_desc, (i - 1) * 2 + k % 2 + 1, HcaGuid(i, k, 1),
                  fmt::format("gpu{:03} mlx5_{}", i, k), 1);
    }
  }
  t += LineOf(a, a_desc, 9, sp, sp_desc, 1);
  t += LineOf(b, b_desc, 9, sp, sp_desc, 2);
  t += LineOf(sp, sp_desc, 1, a, a_desc, 9);
  t += LineOf(sp, sp_desc, 2, b, b_desc, 9);
  t += LineOf(b, b_desc, 12, "0x0002c90300ff0001", "stor01 mlx5_0", 1);
  t += fmt::format("{} \"{:>30}\"      4   40[  ] ==(                Down/ Polling)==>                             [  ] \"\" ( )\n", a,
                   a_desc);
  return t;
}

TEST(DraftSubnet, SwitchesAndCablesFromTheSubnetLoadAsTheDesign) {
  const std::vector<Gathered> g = NodesWithGuids(4);
  Draft d = MakeDraft(g);
  Result<IbSubnet> s = ParseIblinkinfo(FourNodeSubnet(), "iblinkinfo on gpu001");
  ASSERT_TRUE(s.ok()) << s.error().message;
  DraftSubnet(d, g, std::span(&*s, 1));
  ASSERT_TRUE(d.fabric);
  const DraftFabric& f = *d.fabric;
  ASSERT_EQ(f.switches.size(), 3u);
  // The managed switch by its own host name and model; the unnamed one by its GUID's tail.
  EXPECT_EQ(f.switches[0].name, "ibsw-b00002");
  EXPECT_EQ(f.switches[0].tier, "leaf");
  EXPECT_EQ(f.switches[1].name, "leaf-a");
  EXPECT_EQ(f.switches[1].model, "MQM9700");
  EXPECT_EQ(f.switches[1].guid, "0x98039b0300a00001");
  EXPECT_EQ(f.switches[1].ports, 40);
  EXPECT_EQ(f.switches[1].cabled, 9);
  EXPECT_EQ(f.switches[1].port_rate_gbps, 400);
  EXPECT_EQ(f.switches[2].name, "spine-1");
  EXPECT_EQ(f.switches[2].tier, "spine");
  // 16 node cables, each once though iblinkinfo lists each cable from both of its ends where
  // both are switches; then 2 uplinks.
  ASSERT_EQ(f.cables.size(), 18u);
  EXPECT_EQ(f.cables[0].from, "gpu001:mlx5_0");
  EXPECT_EQ(f.cables[0].to, "leaf-a:1");
  EXPECT_EQ(f.cables[3].from, "gpu001:mlx5_3");
  EXPECT_EQ(f.cables[3].to, "ibsw-b00002:2");
  EXPECT_EQ(f.cables[16].from, "ibsw-b00002:9");
  EXPECT_EQ(f.cables[16].to, "spine-1:2");
  EXPECT_EQ(f.cables[17].from, "leaf-a:9");
  EXPECT_EQ(f.rate_gbps, 400);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("'stor01 mlx5_0' (0x0002c90300ff0001) is on the subnet but is no InfiniBand NIC"),
            std::string::npos)
      << f.notes[0];
  EXPECT_EQ(d.profiles[0].nics[0].network, "ib");

  report::InitYamlOptions o;
  o.generated_by = "gpuforge init --nodes gpu[001-004] --subnet-from gpu001";
  o.generated_at = "2026-12-06T23:00:00Z";
  const std::string yaml = report::InitYaml(d, o);
  inventory::LoadOutcome l = inventory::LoadString(yaml, "draft.yaml");
  ASSERT_TRUE(l.ok()) << l.FormatDiagnostics() << "\n" << yaml;
  EXPECT_EQ(l.cluster->links.size(), 18u);
  ASSERT_NE(l.cluster->FindSwitch("leaf-a"), nullptr);
  EXPECT_EQ(l.cluster->FindSwitch("leaf-a")->ports, 40);
  EXPECT_NE(yaml.find("  - {from: \"gpu004:mlx5_3\", to: \"ibsw-b00002:8\"}\n"), std::string::npos) << yaml;

  // The design drafted from a subnet is that subnet: cabling finds every cable OK.
  CablingInputs in;
  in.subnets.push_back(*s);
  for (const Gathered& x : g) in.nodes.push_back(*x.facts);
  const CablingResult r = CheckCabling(*l.cluster, l.cluster->links, in);
  ASSERT_EQ(r.cables.size(), 18u);
  for (std::size_t i = 0; i < 18; ++i) EXPECT_EQ(r.cables[i].state, CableState::kOk) << i;
  EXPECT_FALSE(r.Miswired());
}

// What a subnet tool prints is hostile: an end listed with two peers is written for neither, a
// host cabled to a host is no inventory link, and a name the inventory refuses is replaced. The
// draft still loads.
TEST(DraftSubnet, WhatTheInventoryCannotHoldIsANoteNotALink) {
  const std::vector<Gathered> g = NodesWithGuids(2);
  Draft d = MakeDraft(g);
  const std::string a = "0x98039b0300a00001";
  std::string t;
  t += LineOf(a, "leaf;$(reboot)", 1, HcaGuid(1, 0, 1), "gpu001 mlx5_0", 1);
  t += LineOf(a, "leaf;$(reboot)", 2, HcaGuid(1, 0, 1), "gpu001 mlx5_0", 1);  // the same NIC on a second port
  t += LineOf(a, "leaf;$(reboot)", 3, HcaGuid(2, 0, 1), "gpu002 mlx5_0", 1);
  t += fmt::format("{} \"gpu002 mlx5_1\"     12    1[  ] ==( 4X        106.25 Gbps Active/  LinkUp)==>  {}     13    1[  ] "
                   "\"gpu001 mlx5_1\" ( )\n",
                   HcaGuid(2, 1, 1), HcaGuid(1, 1, 1));
  Result<IbSubnet> s = ParseIblinkinfo(t, "saved.txt");
  ASSERT_TRUE(s.ok()) << s.error().message;
  DraftSubnet(d, g, std::span(&*s, 1));
  ASSERT_TRUE(d.fabric);
  ASSERT_EQ(d.fabric->cables.size(), 1u);
  EXPECT_EQ(d.fabric->cables[0].from, "gpu002:mlx5_0");
  EXPECT_EQ(d.fabric->cables[0].to, "ibsw-a00001:3");
  std::string notes;
  for (const std::string& n : d.fabric->notes) notes += n + "\n";
  EXPECT_NE(notes.find("gpu001:mlx5_0 is listed with two peers"), std::string::npos) << notes;
  EXPECT_NE(notes.find("is cabled to 'gpu001 mlx5_1' (0x0002c90300010101) port 1, host to host"), std::string::npos)
      << notes;
  report::InitYamlOptions o;
  const std::string yaml = report::InitYaml(d, o);
  inventory::LoadOutcome l = inventory::LoadString(yaml, "draft.yaml");
  ASSERT_TRUE(l.ok()) << l.FormatDiagnostics() << "\n" << yaml;
  EXPECT_EQ(yaml.find("$(reboot)\n"), std::string::npos);
  EXPECT_EQ(l.cluster->links.size(), 1u);
}

// The fuzz target's seed for the subnet path (tests/fuzz/corpus/fuzz_init_draft/ib-subnet)
// must reach it: two nodes' gather output and a subnet cabling their mlx5_0 to a leaf with a
// spine above, read the way fuzz_init_draft reads it. Were the seed to stop drafting cables,
// the fuzzing would stop testing them without a word.
TEST(DraftSubnet, TheFuzzSeedDraftsItsCables) {
  std::ifstream in(std::string(GPUFORGE_SOURCE_DIR) + "/tests/fuzz/corpus/fuzz_init_draft/ib-subnet");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::size_t at = text.find("\n@@subnet@@\n");
  ASSERT_NE(at, std::string::npos);
  std::vector<Gathered> g;
  for (const char* node : {"gpu01", "gpu02"}) g.push_back({node, ParseGather(node, text.substr(0, at + 1))});
  Draft d = MakeDraft(g);
  Result<IbSubnet> s = ParseIblinkinfo(text.substr(at + 12), "subnet");
  ASSERT_TRUE(s.ok()) << s.error().message;
  DraftSubnet(d, g, std::span(&*s, 1));
  ASSERT_TRUE(d.fabric);
  std::string notes;
  for (const std::string& n : d.fabric->notes) notes += n + "\n";
  EXPECT_EQ(d.fabric->cables.size(), 3u) << notes;
  EXPECT_EQ(d.fabric->switches.size(), 2u) << notes;
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
