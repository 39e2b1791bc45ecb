// The cabling comparison on plain data (#31): designed links from an inventory, the measured
// fabric built by hand as the parsers would give it, every verdict and the rail rule.

#include "gpuforge/facts/cabling.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "gpuforge/facts/measure_fabric.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/switch_names.h"

namespace gpuforge::facts {
namespace {

// Two nodes with two IB NICs each (rails 0 and 1) on a rail-optimized fabric: NIC k on leafk+1.
// Two Ethernet NICs on a RoCE leaf with SONiC port names.
constexpr std::string_view kInventory = R"(version: 1
cluster: {name: t}
profiles:
  hgx:
    nics:
      - {name: mlx5_0, kind: infiniband, rate: 400Gb/s, network: ib, rail: 0}
      - {name: mlx5_1, kind: infiniband, rate: 400Gb/s, network: ib, rail: 1}
      - {name: mlx5_2, kind: infiniband, rate: 400Gb/s, network: ib}
      - {name: eth1, kind: ethernet, rate: 100Gb/s, network: roce, netdev: ens1f0np0}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s, topology: rail-optimized}
  roce: {role: storage, kind: ethernet, rate: 100Gb/s}
switches:
  - {name: "leaf[1-2]", tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}
  - {name: spine1, tier: spine, network: ib, ports: 64, port_rate: 400Gb/s, aliases: ["0x0000000000000f01"]}
  - {name: tor1, tier: leaf, network: roce, ports: 32, port_rate: 100Gb/s, port_pattern: "Ethernet{port0*4}"}
links:
  - {from: "gpu[1-2]:mlx5_0", to: "leaf1:[1-2]"}
  - {from: "gpu[1-2]:mlx5_1", to: "leaf2:[1-2]"}
  - {from: "leaf[1-2]:33", to: "spine1:[1-2]"}
  - {from: "gpu[1-2]:eth1", to: "tor1:[1-2]"}
nodes:
  - {name: "gpu[1-2]", address: "198.18.0.[1-2]", profile: hgx}
)";

model::Cluster Load() {
  inventory::LoadOutcome o = inventory::LoadString(kInventory, "t.yaml");
  EXPECT_TRUE(o.ok()) << o.FormatDiagnostics();
  return *o.cluster;
}

IbNodeRef Ca(std::string host, std::string dev) { return {"", host + " " + dev, false, 0}; }
IbNodeRef Sw(std::string desc, std::string guid = "") { return {std::move(guid), std::move(desc), true, 0}; }

// One cable, listed from both ends as iblinkinfo does.
void AddCable(IbSubnet& s, const IbNodeRef& a, int ap, const IbNodeRef& b, int bp, int width = 4, double rate = 400) {
  IbPortSeen x;
  x.node = a;
  x.port = ap;
  x.peer = b;
  x.peer_port = bp;
  x.width = width;
  x.rate_gbps = rate;
  x.state = "Active";
  x.phys_state = "LinkUp";
  x.line = static_cast<int>(s.ports.size()) + 1;
  s.ports.push_back(x);
  std::swap(x.node, *x.peer);
  std::swap(x.port, x.peer_port);
  x.line = static_cast<int>(s.ports.size()) + 1;
  s.ports.push_back(x);
}

void AddDown(IbSubnet& s, const IbNodeRef& a, int ap) {
  IbPortSeen x;
  x.node = a;
  x.port = ap;
  x.state = "Down";
  x.phys_state = "Polling";
  x.line = static_cast<int>(s.ports.size()) + 1;
  s.ports.push_back(x);
}

// The IB fabric as designed.
IbSubnet AsDesigned() {
  IbSubnet s;
  s.source = "iblinkinfo on gpu1";
  for (int n = 1; n <= 2; ++n) {
    AddCable(s, Ca(fmt::format("gpu{}", n), "mlx5_0"), 1, Sw("MF0;leaf1:MQM9700/U1"), n);
    AddCable(s, Ca(fmt::format("gpu{}", n), "mlx5_1"), 1, Sw("leaf2"), n);
  }
  AddCable(s, Sw("MF0;leaf1:MQM9700/U1"), 33, Sw("Quantum spine", "0x0000000000000f01"), 1);
  AddCable(s, Sw("leaf2"), 33, Sw("Quantum spine", "0x0000000000000f01"), 2);
  return s;
}

std::map<std::string, CableState> States(const CablingResult& r) {
  std::map<std::string, CableState> out;
  for (const CableCheck& k : r.cables) out[k.near + (k.state == CableState::kUnexpected ? "+" : "")] = k.state;
  return out;
}

TEST(CheckCabling, AsDesignedIsOkAndEthernetWithoutLldpIsUnmeasured) {
  const model::Cluster c = Load();
  CablingInputs in;
  in.subnets.push_back(AsDesigned());
  CablingResult r = CheckCabling(c, c.links, in);
  ASSERT_EQ(r.cables.size(), 8u);
  for (const CableCheck& k : r.cables) {
    if (k.network == "ib") {
      EXPECT_EQ(k.state, CableState::kOk) << k.near << ": " << k.detail;
      EXPECT_EQ(k.got, k.want);
    } else {
      EXPECT_EQ(k.state, CableState::kUnmeasured) << k.near;
      EXPECT_EQ(k.detail, "node not measured");
    }
  }
  EXPECT_FALSE(r.Miswired());
  // The leaf's uplink is looked at from the leaf.
  EXPECT_EQ(r.cables[4].near, "leaf1:33");
  EXPECT_EQ(r.cables[4].want, "spine1:1");
  ASSERT_EQ(r.rails.size(), 2u);
  EXPECT_EQ(r.rails[0].rail, 0);
  EXPECT_EQ(r.rails[0].leaves, std::vector<std::string>{"leaf1"});
  EXPECT_EQ(r.rails[0].checked, 2);
  EXPECT_TRUE(r.rails[0].exceptions.empty());
}

TEST(CheckCabling, NoSubnetViewIsUnmeasuredNeverOk) {
  const model::Cluster c = Load();
  CablingResult r = CheckCabling(c, c.links, {});
  for (const CableCheck& k : r.cables) EXPECT_EQ(k.state, CableState::kUnmeasured) << k.near;
  EXPECT_NE(r.cables[0].detail.find("--subnet-from"), std::string::npos) << r.cables[0].detail;
}

TEST(CheckCabling, SwappedMiswiredMissingDegradedUnexpected) {
  const model::Cluster c = Load();
  IbSubnet s;
  s.source = "iblinkinfo on gpu1";
  // gpu1 and gpu2's rail-0 cables exchanged on leaf1.
  AddCable(s, Ca("gpu1", "mlx5_0"), 1, Sw("leaf1"), 2);
  AddCable(s, Ca("gpu2", "mlx5_0"), 1, Sw("leaf1"), 1);
  // gpu1's rail-1 NIC on the rail-0 leaf.
  AddCable(s, Ca("gpu1", "mlx5_1"), 1, Sw("leaf1"), 9);
  // gpu2's rail-1 cable dark: the leaf port polls and the HCA is not on the subnet.
  AddDown(s, Sw("leaf2"), 2);
  // leaf1's uplink trained at 2X HDR; leaf2's uplink fine.
  AddCable(s, Sw("leaf1"), 33, Sw("spine", "0x0000000000000f01"), 1, 2, 100);
  AddCable(s, Sw("leaf2"), 33, Sw("spine", "0x0000000000000f01"), 2);
  // mlx5_2 has no designed link.
  AddCable(s, Ca("gpu2", "mlx5_2"), 1, Sw("leaf2"), 40);
  CablingInputs in;
  in.subnets.push_back(s);
  CablingResult r = CheckCabling(c, c.links, in);
  const std::map<std::string, CableState> want = {
      {"gpu1:mlx5_0", CableState::kSwapped},   {"gpu2:mlx5_0", CableState::kSwapped},
      {"gpu1:mlx5_1", CableState::kMiswired},  {"gpu2:mlx5_1", CableState::kMissing},
      {"leaf1:33", CableState::kDegraded},     {"leaf2:33", CableState::kOk},
      {"gpu1:eth1", CableState::kUnmeasured},  {"gpu2:eth1", CableState::kUnmeasured},
      {"gpu2:mlx5_2+", CableState::kUnexpected}};
  EXPECT_EQ(States(r), want);
  EXPECT_TRUE(r.Miswired());
  EXPECT_EQ(r.cables[0].detail,
            "swap the cables in leaf1:1 and leaf1:2 (gpu1:mlx5_0 and gpu2:mlx5_0 are on each other's port)");
  EXPECT_EQ(r.cables[0].swap_with, "gpu2:mlx5_0");
  EXPECT_EQ(r.cables[2].got, "leaf1:9");
  EXPECT_EQ(r.cables[2].detail,
            "move the cable at gpu1:mlx5_1 from leaf1:9 to leaf2:1 (it is on a rail-0 leaf; this NIC is rail 1)");
  EXPECT_EQ(r.cables[3].detail,
            "leaf2:2 is Down/Polling and gpu2:mlx5_1 is not on the subnet: reseat or replace the cable, check the "
            "NIC's port with ibstat");
  EXPECT_EQ(r.cables[4].detail,
            "trained at 2X 100 Gb/s, designed 400 Gb/s: reseat or replace the cable or transceiver");
  EXPECT_EQ(r.cables[8].got, "leaf2:40");
  // The rail rule: rail 1 has one NIC off its leaf; rail 0's swap stays on its leaf.
  ASSERT_EQ(r.rails.size(), 2u);
  EXPECT_TRUE(r.rails[0].exceptions.empty());
  ASSERT_EQ(r.rails[1].exceptions.size(), 1u);
  EXPECT_EQ(r.rails[1].exceptions[0], (std::pair<std::string, std::string>{"gpu1:mlx5_1", "leaf1"}));
  EXPECT_EQ(r.counts[CableState::kSwapped], 2u);
}

TEST(CheckCabling, ASplitPortDesignedAt200IsNotDegraded) {
  model::Cluster c = Load();
  for (model::Link& l : c.links) l.rate_bytes_per_s = 200e9 / 8;
  IbSubnet s = AsDesigned();
  for (IbPortSeen& p : s.ports) {
    p.width = 2;
    p.rate_gbps = 200;
  }
  CablingInputs in;
  in.subnets.push_back(s);
  CablingResult r = CheckCabling(c, c.links, in);
  for (const CableCheck& k : r.cables) {
    if (k.network == "ib") {
      EXPECT_EQ(k.state, CableState::kOk) << k.near << " " << k.detail;
    }
  }
}

TEST(CheckCabling, CaGuidsFromSysfsBeatNodeDescriptions) {
  const model::Cluster c = Load();
  IbSubnet s = AsDesigned();
  // Descriptions a site changed to something that names no node; GUIDs still map them.
  for (IbPortSeen& p : s.ports) {
    for (IbNodeRef* r : {&p.node, p.peer ? &*p.peer : nullptr}) {
      if (r == nullptr || r->is_switch) continue;
      r->guid = r->desc == "gpu1 mlx5_0" ? "0x00000000000000a0" : r->desc == "gpu1 mlx5_1" ? "0x00000000000000a1"
              : r->desc == "gpu2 mlx5_0" ? "0x00000000000000b0" : "0x00000000000000b1";
      r->desc = "MT_0000000838 HCA";
    }
  }
  CablingInputs in;
  in.subnets.push_back(s);
  for (const char* node : {"gpu1", "gpu2"}) {
    NodeFacts f;
    f.node = node;
    const std::string base = node == std::string("gpu1") ? "a" : "b";
    f.ib.push_back({"mlx5_0", "", "", "0x00000000000000" + base + "0", {}, {}});
    f.ib.push_back({"mlx5_1", "", "", "0x00000000000000" + base + "1", {}, {}});
    in.nodes.push_back(f);
  }
  CablingResult r = CheckCabling(c, c.links, in);
  for (const CableCheck& k : r.cables) {
    if (k.network == "ib") {
      EXPECT_EQ(k.state, CableState::kOk) << k.near << " " << k.detail;
    }
  }
  // Without the facts the same subnet names no node: MISSING, never OK.
  in.nodes.clear();
  r = CheckCabling(c, c.links, in);
  EXPECT_EQ(r.cables[0].state, CableState::kMissing) << r.cables[0].detail;
}

TEST(CheckCabling, LldpMatchesByPortPatternAndFallsBackToTheDescription) {
  const model::Cluster c = Load();
  CablingInputs in;
  for (int n = 1; n <= 2; ++n) {
    NodeFacts f;
    f.node = fmt::format("gpu{}", n);
    LldpSeen l;
    l.source = "lldpctl on " + f.node;
    // gpu1: SONiC's name for port 1 as ifname; gpu2: a MAC as port id, the name in the description.
    if (n == 1) l.neighbors.push_back({"ens1f0np0", "tor1.example.net", "", "mac", "Ethernet0", "ifname", "", ""});
    if (n == 2) l.neighbors.push_back({"ens1f0np0", "tor1", "", "mac", "0c:42:a1:00:00:01", "mac", "Ethernet4", ""});
    l.neighbors.push_back({"eno1", "mgmt-sw", "", "", "ge-0/0/1", "ifname", "", ""});  // not an inventory NIC
    f.lldp = l;
    f.net_speed_mbps["ens1f0np0"] = n == 1 ? 100000 : 25000;
    in.nodes.push_back(f);
  }
  CablingResult r = CheckCabling(c, c.links, in);
  EXPECT_EQ(r.cables[6].near, "gpu1:eth1");
  EXPECT_EQ(r.cables[6].state, CableState::kOk) << r.cables[6].detail;
  EXPECT_EQ(r.cables[7].state, CableState::kDegraded) << r.cables[7].detail;
  EXPECT_EQ(r.cables[7].got, "tor1:2");
  EXPECT_EQ(r.cables[7].detail,
            "link at 25 Gb/s, designed 100 Gb/s: check the cable, the optic and the port's speed setting");
  // A port name that fits no port: the switch is right, the port unknown.
  in.nodes[1].lldp->neighbors[0].port_descr = "Ethernet5";
  r = CheckCabling(c, c.links, in);
  EXPECT_EQ(r.cables[7].state, CableState::kPortUnknown) << r.cables[7].detail;
  EXPECT_EQ(r.cables[7].got, "tor1 port '0c:42:a1:00:00:01'");
}

TEST(CheckCabling, LldpAbsentOrFailedSaysWhy) {
  const model::Cluster c = Load();
  CablingInputs in;
  NodeFacts f;
  f.node = "gpu1";
  f.sections.push_back({"lldp", "lldpctl -f json0", Outcome::kFailed, 1, "cannot find lldpd socket"});
  in.nodes.push_back(f);
  in.unreached.emplace_back("gpu2", "node gpu2: connection refused");
  CablingResult r = CheckCabling(c, c.links, in);
  EXPECT_EQ(r.cables[6].state, CableState::kUnmeasured);
  EXPECT_EQ(r.cables[6].detail, "lldpctl failed: cannot find lldpd socket (it reads lldpd's socket: run as root or a "
                                "member of _lldpd)");
  EXPECT_EQ(r.cables[7].detail, "node not reached: node gpu2: connection refused");
}

TEST(CheckCabling, AnEscapedNeighbourNameMatchesNothing) {
  const model::Cluster c = Load();
  CablingInputs in;
  NodeFacts f;
  f.node = "gpu1";
  LldpSeen l;
  l.source = "lldpctl on gpu1";
  l.neighbors.push_back({"ens1f0np0", "tor1\\x1b[2J", "", "", "Ethernet0", "ifname", "", "lldpctl on gpu1:12"});
  f.lldp = l;
  in.nodes.push_back(f);
  CablingResult r = CheckCabling(c, c.links, in);
  EXPECT_EQ(r.cables[6].state, CableState::kMiswired);
  EXPECT_EQ(r.cables[6].source, "lldpctl on gpu1:12");
}

TEST(CheckCabling, TwoThousandNodesSixteenThousandCables) {
  // Scale on plain data: 2,048 nodes x 8 rails, each rail on its own leaves (64 nodes a leaf).
  std::string inv = R"(version: 1
cluster: {name: big}
profiles:
  hgx:
    nics:
      - {name: "mlx5_[0-7]", kind: infiniband, rate: 400Gb/s, network: ib, rail: [0, 1, 2, 3, 4, 5, 6, 7]}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s, topology: rail-optimized}
switches:
  - {name: "leaf[001-256]", tier: leaf, network: ib, ports: 64, port_rate: 400Gb/s}
links:
)";
  for (int su = 0; su < 32; ++su) {
    for (int rail = 0; rail < 8; ++rail) {
      inv += fmt::format("  - {{from: \"gpu[{:04}-{:04}]:mlx5_{}\", to: \"leaf{:03}:[1-64]\"}}\n", su * 64 + 1,
                         su * 64 + 64, rail, su * 8 + rail + 1);
    }
  }
  inv += "nodes:\n  - {name: \"gpu[0001-2048]\", address: \"10.0.[0-7].[1-256]\", profile: hgx}\n";
  inventory::LoadOutcome o = inventory::LoadString(inv, "big.yaml");
  ASSERT_TRUE(o.ok()) << o.FormatDiagnostics();
  const model::Cluster& c = *o.cluster;
  ASSERT_EQ(c.links.size(), 16384u);
  IbSubnet s;
  s.source = "iblinkinfo on gpu0001";
  for (const model::Link& l : c.links) AddCable(s, Ca(l.a.device, l.a.nic), 1, Sw(l.b.device), l.b.port);
  // One rail miswire among them: gpu0002's rail-0 cable seen on leaf002 (a rail-1 leaf).
  ASSERT_EQ(s.ports[2].node.desc, "gpu0002 mlx5_0");
  s.ports[2].peer->desc = "leaf002";
  CablingInputs in;
  in.subnets.push_back(std::move(s));
  CablingResult r = CheckCabling(c, c.links, in);
  EXPECT_EQ(r.counts[CableState::kOk], 16384u - 1);
  EXPECT_EQ(r.counts[CableState::kMiswired], 1u);
  EXPECT_EQ(r.cables.size(), 16384u);  // leaf001:2's own line still names gpu0002: no UNEXPECTED
  ASSERT_EQ(r.rails[0].exceptions.size(), 1u);
  EXPECT_EQ(r.rails[0].exceptions[0].second, "leaf002");
}

std::string Fabric(const std::string& name) {
  std::ifstream in(std::string(GPUFORGE_TEST_DATA_DIR) + "/fabric/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CheckCabling, RecordedLldpd1016ReadsTheSameInEveryFormat) {
  // Real lldpd 1.0.16 between network namespaces (README-lldp-design.md).
  std::vector<Result<LldpSeen>> views;
  views.push_back(ParseLldpctlJson(Fabric("lldpctl/json0-lldpd-1.0.16-netns-two-leaves.json"), "json0"));
  views.push_back(ParseLldpctlJson(Fabric("lldpctl/json-lldpd-1.0.16-netns-two-leaves.json"), "json"));
  views.push_back(ParseLldpctlKeyvalue(Fabric("lldpctl/keyvalue-lldpd-1.0.16-netns-two-leaves.txt"), "kv"));
  for (const Result<LldpSeen>& v : views) {
    ASSERT_TRUE(v.ok()) << v.error().message;
    ASSERT_EQ(v->neighbors.size(), 2u) << v->source;
    const LldpNeighbor& a = v->neighbors[0];
    const LldpNeighbor& b = v->neighbors[1];
    EXPECT_EQ(a.local_if, "ens1f0") << v->source;
    EXPECT_EQ(a.chassis_name, "leaf1") << v->source;
    EXPECT_EQ(a.port_id, "swp3") << v->source;
    EXPECT_EQ(a.port_id_type, "ifname") << v->source;
    EXPECT_EQ(b.local_if, "ens2f0") << v->source;
    EXPECT_EQ(b.chassis_name, "leaf2.pod1.example.net") << v->source;
    EXPECT_EQ(b.port_id, "7e:6a:41:78:d0:3f") << v->source;
    EXPECT_EQ(b.port_id_type, "mac") << v->source;
    EXPECT_EQ(b.port_descr, "swp7") << v->source;
  }
  Result<LldpSeen> one = ParseLldpctlJson(Fabric("lldpctl/json-lldpd-1.0.16-netns-one-leaf.json"), "json one");
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(one->neighbors.size(), 1u);
  EXPECT_EQ(one->neighbors[0].port_id, "swp3");
}

TEST(SubnetOutput, EachToolParsedOrItsProblemNamed) {
  const std::string links = Fabric("iblinkinfo/qdr-1switch-5hca.txt");
  std::vector<std::string> problems;
  std::vector<IbSubnet> v = ParseSubnetOutput(
      "gpu1",
      "banner\n@@gpuforge-subnet tool=iblinkinfo rc=0@@\n" + links +
          "@@gpuforge-subnet tool=ibnetdiscover rc=absent@@\n@@gpuforge-subnet end@@\n",
      &problems);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].source, "iblinkinfo on gpu1");
  EXPECT_EQ(v[0].ports.size(), 41u);
  EXPECT_EQ(problems, std::vector<std::string>{
                          "ibnetdiscover on gpu1: not installed (Debian/Ubuntu: apt install infiniband-diags)"});
  problems.clear();
  v = ParseSubnetOutput("gpu1",
                        "@@gpuforge-subnet tool=iblinkinfo rc=1@@\nibwarn: [1234] mad_rpc_open_port: can't open UMAD "
                        "port ((null):0)\n@@gpuforge-subnet tool=ibnetdiscover rc=0@@\nnot a topology\n"
                        "@@gpuforge-subnet end@@\n",
                        &problems);
  EXPECT_TRUE(v.empty());
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "iblinkinfo on gpu1: exit status 1: ibwarn: [1234] mad_rpc_open_port: can't open UMAD port "
                         "((null):0)");
  EXPECT_EQ(problems[1].rfind("ibnetdiscover on gpu1:1: ", 0), 0u) << problems[1];
  problems.clear();
  v = ParseSubnetOutput("gpu1", "@@gpuforge-subnet tool=iblinkinfo rc=0@@\n" + links, &problems);
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(problems, std::vector<std::string>{
                          "subnet tools on gpu1: output ends before the end marker (cut off?)"});
}

TEST(SwitchNames, WholeNameDnsLabelWordAndAlias) {
  const model::Cluster c = Load();
  model::SwitchNames n(c);
  EXPECT_EQ(n.Find("leaf1")->name, "leaf1");
  EXPECT_EQ(n.Find("LEAF2.pod1.example.net")->name, "leaf2");
  EXPECT_EQ(n.Find("MF0;leaf1:MQM9700/U1")->name, "leaf1");
  EXPECT_EQ(n.Find("0x0000000000000F01")->name, "spine1");
  EXPECT_EQ(n.Find("leaf1 leaf2"), nullptr);  // two switches in one name: neither
  EXPECT_EQ(n.Find("Mellanox Technologies Aggregation Node"), nullptr);
  EXPECT_EQ(n.Find(""), nullptr);
}

TEST(SwitchNames, PortPatterns) {
  EXPECT_EQ(model::PortFromName("swp12", "", 64), 12);
  EXPECT_EQ(model::PortFromName("Eth1/12", "", 64), 12);
  EXPECT_EQ(model::PortFromName("swp99", "", 64), std::nullopt);
  EXPECT_EQ(model::PortFromName("Ethernet0", "Ethernet{port0*4}", 32), 1);
  EXPECT_EQ(model::PortFromName("Ethernet124", "Ethernet{port0*4}", 32), 32);
  EXPECT_EQ(model::PortFromName("Ethernet2", "Ethernet{port0*4}", 32), std::nullopt);  // a breakout lane
  EXPECT_EQ(model::PortFromName("swp3", "Ethernet{port0*4}", 32), std::nullopt);
  EXPECT_EQ(model::PortFromName("Eth1/7", "Eth1/{port}", 32), 7);
  EXPECT_EQ(model::PortFromName("00:11:22:33:44:55", "", 64), 55);  // why a MAC is never read as a name
  EXPECT_TRUE(model::CheckPortPattern("swp{port}").ok());
  EXPECT_EQ(model::CheckPortPattern("swp").error().message,
            "'swp' has no placeholder: write {port} or {port0} where the number goes");
  EXPECT_EQ(model::CheckPortPattern("Eth{lane}").error().message,
            "'Eth{lane}': unknown placeholder {lane}; expected {port}, {port0}, {port*N} or {port0*N}");
  EXPECT_EQ(model::CheckPortPattern("e{port}{port}").error().message, "'e{port}{port}' has more than one placeholder");
  EXPECT_EQ(model::CheckPortPattern("e{port*0}").error().message, "'e{port*0}': the multiplier must be a whole number from 1 to 64");
  EXPECT_FALSE(model::CheckPortPattern("e {port}").ok());
}

TEST(SwitchNames, LoaderRefusesBadKeys) {
  std::string inv(kInventory);
  inv.replace(inv.find("port_pattern: \"Ethernet{port0*4}\""), 33, "port_pattern: \"Eth{lane}\"");
  inv.replace(inv.find("tier: leaf, network: ib, ports: 64"), 0, "aliases: [x], ");
  inventory::LoadOutcome o = inventory::LoadString(inv, "t.yaml");
  ASSERT_FALSE(o.ok());
  const std::string d = o.FormatDiagnostics();
  EXPECT_NE(d.find("switch entry 'leaf[1-2]' names 2 switches; aliases belong to one switch (give it its own entry)"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("switch entry 'tor1': port_pattern 'Eth{lane}': unknown placeholder {lane}"), std::string::npos) << d;
}

}  // namespace
}  // namespace gpuforge::facts
