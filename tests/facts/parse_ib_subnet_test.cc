#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "gpuforge/facts/fabric.h"

namespace gpuforge::facts {
namespace {

std::string Fabric(std::string_view name) {
  std::ifstream in(std::string(GPUFORGE_TEST_DATA_DIR) + "/fabric/" + std::string(name),
                   std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

IbSubnet MustParseLinks(std::string_view name) {
  Result<IbSubnet> r = ParseIblinkinfo(Fabric(name), name);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : IbSubnet{};
}

IbSubnet MustParseDisc(std::string_view name) {
  Result<IbSubnet> r = ParseIbnetdiscover(Fabric(name), name);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : IbSubnet{};
}

const IbPortSeen* AtLine(const IbSubnet& s, int line) {
  for (const IbPortSeen& p : s.ports) {
    if (p.line == line) return &p;
  }
  return nullptr;
}

std::string ErrorOf(const Result<IbSubnet>& r) { return r.ok() ? "(parsed)" : r.error().message; }

// ---------------------------------------------------------------------------------------

TEST(ParseIblinkinfo, QdrFabricReadsEveryPortAndResolvesPeersByLid) {
  IbSubnet s = MustParseLinks("iblinkinfo/qdr-1switch-5hca.txt");
  EXPECT_EQ(s.source, "iblinkinfo/qdr-1switch-5hca.txt");
  ASSERT_EQ(s.ports.size(), 41u);  // 5 CA ports and 36 switch ports
  EXPECT_TRUE(s.warnings.empty());

  const IbPortSeen& ca = s.ports[0];
  EXPECT_EQ(ca.line, 2);
  EXPECT_EQ(ca.node.desc, "ip-160 HCA-1");
  EXPECT_FALSE(ca.node.is_switch);
  EXPECT_EQ(ca.node.guid, "");  // iblinkinfo prints a CA's port GUID, not its node GUID
  EXPECT_EQ(ca.port_guid, "0x0002c903000d7aad");
  EXPECT_EQ(ca.node.lid, 5);
  EXPECT_EQ(ca.port, 1);
  EXPECT_EQ(ca.state, "Active");
  EXPECT_EQ(ca.phys_state, "LinkUp");
  EXPECT_EQ(ca.width, 4);
  EXPECT_EQ(ca.lane_gbps, 10.0);
  EXPECT_EQ(ca.speed, "QDR");
  EXPECT_EQ(ca.rate_gbps, 40.0);
  EXPECT_EQ(ca.could_be, "");
  ASSERT_TRUE(ca.peer);
  EXPECT_EQ(ca.peer->desc, "Infiniscale-IV Mellanox Technologies");
  EXPECT_EQ(ca.peer->guid, "0x0002c9020046c588");  // LID 2 is the switch's, at line 10
  EXPECT_TRUE(ca.peer->is_switch);
  EXPECT_EQ(ca.peer->lid, 2);
  EXPECT_EQ(ca.peer_port, 33);

  const IbPortSeen* sw1 = AtLine(s, 10);
  ASSERT_NE(sw1, nullptr);
  EXPECT_EQ(sw1->node.guid, "0x0002c9020046c588");
  EXPECT_TRUE(sw1->node.is_switch);
  EXPECT_EQ(sw1->node.lid, 2);
  EXPECT_EQ(sw1->port, 1);
  ASSERT_TRUE(sw1->peer);
  EXPECT_EQ(sw1->peer->desc, "ip-211 mlx4_0");
  EXPECT_EQ(sw1->peer->guid, "");
  EXPECT_EQ(sw1->peer_port_guid, "0x0002c90300293e1f");  // LID 6, line 8
  EXPECT_EQ(sw1->peer_port, 1);

  const IbPortSeen* down = AtLine(s, 11);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->port, 2);
  EXPECT_EQ(down->state, "Down");
  EXPECT_EQ(down->phys_state, "Polling");
  EXPECT_FALSE(down->peer);
  EXPECT_FALSE(down->width);
  EXPECT_FALSE(down->rate_gbps);
}

TEST(ParseIblinkinfo, HdrQuantumFabric) {
  IbSubnet s = MustParseLinks("iblinkinfo/hdr-quantum-22hca.txt");
  ASSERT_EQ(s.ports.size(), 63u);  // 22 CA ports, 41 switch ports
  EXPECT_TRUE(s.warnings.empty());
  const IbPortSeen* agg = AtLine(s, 4);
  ASSERT_NE(agg, nullptr);
  EXPECT_EQ(agg->node.desc, "Mellanox Technologies Aggregation Node");
  EXPECT_EQ(agg->port_guid, "0x0c42a103008982ac");
  EXPECT_EQ(agg->lane_gbps, 53.125);
  EXPECT_EQ(agg->speed, "HDR");
  EXPECT_EQ(agg->rate_gbps, 200.0);
  ASSERT_TRUE(agg->peer);
  EXPECT_EQ(agg->peer->guid, "0x0c42a103008982a4");
  EXPECT_EQ(agg->peer_port, 41);
  const IbPortSeen* last = AtLine(s, 86);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->node.desc, "cu02 HCA-1");
  EXPECT_EQ(last->port_guid, "0xb8cef60300025b90");
  EXPECT_EQ(last->peer_port, 39);
}

TEST(ParseIblinkinfo, PortTrainedBelowItsCapabilityKeepsCouldBe) {
  IbSubnet s = MustParseLinks("iblinkinfo/hdr-quantum-switch-could-be.txt");
  ASSERT_EQ(s.ports.size(), 41u);
  const IbPortSeen* p = AtLine(s, 22);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->node.guid, "0x08c0eb0300add04e");
  EXPECT_EQ(p->port, 21);
  EXPECT_EQ(p->lane_gbps, 25.78125);
  EXPECT_EQ(p->speed, "EDR");
  EXPECT_EQ(p->rate_gbps, 100.0);
  EXPECT_EQ(p->could_be, "Could be 53.125 Gbps");
  ASSERT_TRUE(p->peer);
  EXPECT_EQ(p->peer->desc, "node3 HCA-2");
  EXPECT_EQ(p->peer->lid, 40);
  EXPECT_EQ(p->peer->guid, "");  // -S lists one switch: LID 40 is not in this output
  EXPECT_EQ(p->peer_port_guid, "");
  const IbPortSeen* up = AtLine(s, 41);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->could_be, "");
  EXPECT_EQ(up->peer->desc, "MF0;d32-03-1:MQM8700/U1");
  EXPECT_EQ(up->peer_port, 40);
}

TEST(ParseIblinkinfo, LineModeGivesGuidsOnEachLine) {
  IbSubnet s = MustParseLinks("iblinkinfo/line-ibsim-could-be.txt");
  ASSERT_EQ(s.ports.size(), 2u);
  const IbPortSeen& p = s.ports[0];
  EXPECT_EQ(p.line, 1);
  EXPECT_EQ(p.node.desc, "hxa-su1-leaf-r1");  // "%30s" padding dropped
  EXPECT_TRUE(p.node.is_switch);              // one GUID with ports 1 and 2
  EXPECT_EQ(p.node.guid, "0x0000000000200002");
  EXPECT_EQ(p.port_guid, "");
  EXPECT_EQ(p.node.lid, 4);
  EXPECT_EQ(p.port, 1);
  EXPECT_EQ(p.width, 4);
  EXPECT_EQ(p.speed, "SDR");
  EXPECT_EQ(p.rate_gbps, 10.0);
  EXPECT_EQ(p.could_be, "Could be 12X Could be 10.0 Gbps");
  ASSERT_TRUE(p.peer);
  EXPECT_EQ(p.peer->desc, "hxa-gpu01 mlx5_0");
  EXPECT_FALSE(p.peer->is_switch);
  EXPECT_EQ(p.peer_port_guid, "0x0000000000100002");
  EXPECT_EQ(p.peer->lid, 5);
  EXPECT_EQ(p.peer_port, 1);
  EXPECT_EQ(s.ports[1].peer_port_guid, "0x0000000000100006");
  EXPECT_EQ(s.ports[1].port, 2);
}

// Constructed from the printf formats in rdma-core's iblinkinfo.c (FDR10, --switch-settings,
// a 2X NDR split port, "Port not available"), not from a captured output.
TEST(ParseIblinkinfo, VariantsOfTheLinkField) {
  std::string text =
      "Switch: 0x0002c9020046c588 leaf1:\n"
      "           2    1[  ] ==( 4X  10.0 Gbps (FDR10) Active/  LinkUp)==>       6    1[  ] "
      "\"gpu001 mlx5_0\" ( )\n"
      "           2    2[  ] ==( 4X          14.0625 Gbps Active/  LinkUp) (HOQ:14 VL_Stall:7)==>  "
      "     7    1[  ] "
      "\"gpu002 mlx5_0\" ( )\n"
      "           2    3[ 2] ==( 2X            106.25 Gbps Active/  LinkUp)==>       8    1[  ] "
      "\"gpu003 mlx5_0\" "
      "(Could be 4X )\n"
      "           2    4[  ] ==( 4X           212.5 Gbps   Init/  LinkUp)==>      \"Port not "
      "available\"\n";
  Result<IbSubnet> r = ParseIblinkinfo(text, "t");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  ASSERT_EQ(r->ports.size(), 4u);
  EXPECT_EQ(r->ports[0].speed, "FDR10");
  EXPECT_EQ(r->ports[0].rate_gbps, 40.0);
  EXPECT_EQ(r->ports[1].speed, "FDR");
  EXPECT_EQ(r->ports[1].rate_gbps, 56.0);
  EXPECT_EQ(r->ports[2].width, 2);
  EXPECT_EQ(r->ports[2].speed, "NDR");
  EXPECT_EQ(r->ports[2].rate_gbps, 200.0);
  EXPECT_EQ(r->ports[2].could_be, "Could be 4X");
  EXPECT_EQ(r->ports[3].state, "Init");
  EXPECT_EQ(r->ports[3].speed, "XDR");
  EXPECT_EQ(r->ports[3].rate_gbps, 800.0);
  EXPECT_FALSE(r->ports[3].peer);
}

TEST(ParseIblinkinfo, TruncatedLineIsAnErrorNotASmallerFabric) {
  Result<IbSubnet> r =
      ParseIblinkinfo(Fabric("iblinkinfo/constructed-truncated.txt"), "iblinkinfo on gpu001");
  EXPECT_EQ(
      ErrorOf(r),
      "iblinkinfo on gpu001:4: expected \")==>\" closing the link (truncated line?), got '      "
      "0x0002c903005925f1      9    1[  ] ==( 4X          10.0 Gbps Act'");
}

TEST(ParseIblinkinfo, EmptyOutputHasNoDevices) {
  EXPECT_EQ(ErrorOf(ParseIblinkinfo("", "x")), "x: no devices in the iblinkinfo output");
  EXPECT_EQ(ErrorOf(ParseIblinkinfo("\n  \n", "x")), "x: no devices in the iblinkinfo output");
}

TEST(ParseIblinkinfo, RefusesUnknownLinesAndBadNumbers) {
  EXPECT_EQ(
      ErrorOf(ParseIblinkinfo("ibwarn: [123] mad_rpc: _do_madrpc failed\n", "x")),
      "x:1: expected an iblinkinfo node header (CA:, Switch:, Router:) or a --line port line, got "
      "'ibwarn: [123] mad_rpc: _do_madrpc failed'");
  EXPECT_EQ(
      ErrorOf(ParseIblinkinfo(
          "CA: a mlx5_0:\n      0x0002c903000d7aad      5    1[  ] ==( 4X          10.0 "
          "Gbps Active/  LinkUp)==>       2   33[  ] \"sw\" ( )\nHost: b:\n",
          "x")),
      "x:3: expected a node header (CA: NAME:, Switch: GUID NAME:) or a port line, got 'Host: b:'");
  EXPECT_EQ(ErrorOf(ParseIblinkinfo(
                "Switch: 0x0002c9020046c588 sw:\n           2  300[  ] ==(                Down/ "
                "Polling)==>             [  ] \"\" ( )\n",
                "x")),
            "x:2: port number out of range (1 to 254), got '           2  300[  ] ==(              "
            "  Down/ "
            "Polling)==>             [  ] \"\" ( )'");
  EXPECT_EQ(ErrorOf(ParseIblinkinfo(
                "Switch: 0x0002c9020046c588 sw:\n           2    1[  ] ==( 3X          10.0 Gbps "
                "Active/  LinkUp)==>       6    1[  ] \"h\" ( )\n",
                "x")),
            "x:2: expected a link width (1X, 2X, 4X, 8X, 12X), got '           2    1[  ] ==( 3X   "
            "       10.0 Gbps "
            "Active/  LinkUp)==>       6    1[  ] \"h\" ( )'");
  EXPECT_EQ(ErrorOf(ParseIblinkinfo("Switch: 0x0002c9020046c588 sw:\nCA: h mlx5_0:\n", "x")),
            "x:1: node header with no port lines after it (truncated output?), got 'Switch: "
            "0x0002c9020046c588 sw:'");
  EXPECT_EQ(ErrorOf(ParseIblinkinfo(
                "CA: h:\n      0x1 5 1[  ] ==( 4X 10.0 Gbps Active/ LinkUp)==> 2 1[  ] \"s\" ( )\n"
                "\x01garbage\n",
                "x")),
            "x:3: expected a node header (CA: NAME:, Switch: GUID NAME:) or a port line, got "
            "'\\x01garbage'");
}

TEST(ParseIblinkinfo, EscapesControlCharactersInDescriptionsAndWarns) {
  std::string text =
      "CA: \x1b[31mgpu001\x1b[0m mlx5_0:\n"
      "      0x0002c903000d7aad      5    1[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>      "
      " 2   33[  ] \"sw\" ( )\n";
  Result<IbSubnet> r = ParseIblinkinfo(text, "x");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->ports[0].node.desc, "\\x1b[31mgpu001\\x1b[0m mlx5_0");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0],
            "x:1: node description has control or non-ASCII bytes, kept escaped: "
            "'\\x1b[31mgpu001\\x1b[0m mlx5_0'");
}

TEST(ParseIblinkinfo, DuplicateGuidWithTwoNamesWarnsNamingBothLines) {
  std::string text =
      "Switch: 0x0002c9020046c588 leaf1:\n"
      "           2    1[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n"
      "Switch: 0x0002c9020046c588 leaf2:\n"
      "           3    1[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n";
  Result<IbSubnet> r = ParseIblinkinfo(text, "x");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0],
            "x:3: node GUID 0x0002c9020046c588 is \"leaf2\" here but \"leaf1\" at line 1");
}

// A 2,048-switch fabric with 16,384 cables (each printed from both ends): counts, and the
// last cable still resolved. How long it takes is bench/'s business.
TEST(ParseIblinkinfo, LargeFabric) {
  constexpr int kSwitches = 2048;
  constexpr int kPorts = 16;
  std::string text;
  auto lid = [](int sw) { return sw + 1; };
  for (int sw = 0; sw < kSwitches; ++sw) {
    text += fmt::format("Switch: 0x{:016x} sw{}:\n", 0x1000 + sw, sw);
    for (int p = 1; p <= kPorts; ++p) {
      // Port p of switch s is cabled to port p of switch s ^ 1 (pairs) or s ^ 2 (p > 8).
      int peer = p <= 8 ? sw ^ 1 : sw ^ 2;
      text += fmt::format(
          "      {:6d} {:4d}[  ] ==( 4X        53.125 Gbps Active/  LinkUp)==>  {:6d} {:4d}[  ] "
          "\"sw{}\" ( )\n",
          lid(sw), p, lid(peer), p, peer);
    }
  }
  Result<IbSubnet> r = ParseIblinkinfo(text, "big");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  ASSERT_EQ(r->ports.size(), static_cast<std::size_t>(kSwitches * kPorts));
  EXPECT_TRUE(r->warnings.empty());
  const IbPortSeen& last = r->ports.back();
  ASSERT_TRUE(last.peer);
  EXPECT_EQ(last.peer->guid, fmt::format("0x{:016x}", 0x1000 + ((kSwitches - 1) ^ 2)));
  IbSubnet copy = *r;
  EXPECT_TRUE(CrossCheckSubnets(*r, copy).empty());
}

// ---------------------------------------------------------------------------------------

TEST(ParseIbnetdiscover, QdrFabricSwitchAndCaPortLines) {
  IbSubnet s = MustParseDisc("ibnetdiscover/qdr-1switch-5hca.txt");
  ASSERT_EQ(s.ports.size(), 10u);  // 5 switch port lines, 5 CA port lines
  EXPECT_TRUE(s.warnings.empty());
  const IbPortSeen& p = s.ports[0];
  EXPECT_EQ(p.line, 6);
  EXPECT_EQ(p.node.guid, "0x0002c9020046c588");
  EXPECT_EQ(p.node.desc, "Infiniscale-IV Mellanox Technologies");
  EXPECT_TRUE(p.node.is_switch);
  EXPECT_EQ(p.node.lid, 2);
  EXPECT_EQ(p.port, 1);
  ASSERT_TRUE(p.peer);
  EXPECT_EQ(p.peer->guid, "0x0002c90300293e1e");
  EXPECT_EQ(p.peer_port_guid, "0x0002c90300293e1f");
  EXPECT_EQ(p.peer->desc, "ip-211 mlx4_0");
  EXPECT_FALSE(p.peer->is_switch);
  EXPECT_EQ(p.peer->lid, 6);
  EXPECT_EQ(p.peer_port, 1);
  EXPECT_EQ(p.width, 4);
  EXPECT_EQ(p.speed, "QDR");
  EXPECT_EQ(p.lane_gbps, 10.0);
  EXPECT_EQ(p.rate_gbps, 40.0);
  EXPECT_EQ(p.state, "");

  const IbPortSeen* ca = AtLine(s, 17);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->node.guid, "0x0002c903000d7aac");
  EXPECT_EQ(ca->node.desc, "ip-160 HCA-1");
  EXPECT_FALSE(ca->node.is_switch);
  EXPECT_EQ(ca->port_guid, "0x0002c903000d7aad");
  EXPECT_EQ(ca->node.lid, 5);
  EXPECT_EQ(ca->peer->guid, "0x0002c9020046c588");
  EXPECT_TRUE(ca->peer->is_switch);
  EXPECT_EQ(ca->peer_port, 33);
  EXPECT_EQ(ca->peer->lid, 2);
}

TEST(ParseIbnetdiscover, ManPageExampleWithGroupingAndDisagreeingEnds) {
  IbSubnet s = MustParseDisc("ibnetdiscover/manpage-sdr-2switch-grouped.txt");
  ASSERT_EQ(s.ports.size(), 14u);
  const IbPortSeen* narrow = AtLine(s, 52);
  ASSERT_NE(narrow, nullptr);
  EXPECT_EQ(narrow->node.guid, "0x0008f10403960558");
  EXPECT_EQ(narrow->port_guid, "0x0008f10403960559");
  EXPECT_EQ(narrow->node.lid, 10);
  EXPECT_EQ(narrow->width, 1);
  EXPECT_EQ(narrow->rate_gbps, 2.5);
  // The example's two ends of two cables disagree on width: both are named.
  ASSERT_EQ(s.warnings.size(), 2u);
  EXPECT_EQ(
      s.warnings[0],
      "ibnetdiscover/manpage-sdr-2switch-grouped.txt:15: \"ISR9024 Voltaire\"[10] to \"SW-6IB4 "
      "Voltaire\"[1] is "
      "4X SDR, but ibnetdiscover/manpage-sdr-2switch-grouped.txt:26: the same cable is 1X SDR");
  EXPECT_EQ(s.warnings[1],
            "ibnetdiscover/manpage-sdr-2switch-grouped.txt:18: \"ISR9024 Voltaire\"[12] to "
            "\"MT23108 InfiniHost "
            "Mellanox Technologies\"[1] is 4X SDR, but "
            "ibnetdiscover/manpage-sdr-2switch-grouped.txt:52: the same "
            "cable is 1X SDR");
}

TEST(ParseIbnetdiscover, EdrFatTreeWithADegradedInterSwitchLink) {
  IbSubnet s = MustParseDisc("ibnetdiscover/edr-switchib-excerpt.txt");
  ASSERT_EQ(s.ports.size(), 96u);
  EXPECT_TRUE(s.warnings.empty());
  const IbPortSeen* ddr = AtLine(s, 61);
  ASSERT_NE(ddr, nullptr);
  EXPECT_EQ(ddr->node.guid, "0xec0d9a0300ec8480");
  EXPECT_EQ(ddr->port, 11);
  EXPECT_EQ(ddr->peer->guid, "0xec0d9a0300ec8200");
  EXPECT_EQ(ddr->peer_port, 11);
  EXPECT_EQ(ddr->speed, "DDR");
  EXPECT_EQ(ddr->rate_gbps, 20.0);
  const IbPortSeen* short_guid =
      AtLine(s, 21);  // "(8c0eb0300ddc0f6)": printed without its leading 0
  ASSERT_NE(short_guid, nullptr);
  EXPECT_EQ(short_guid->peer_port_guid, "0x08c0eb0300ddc0f6");
  EXPECT_EQ(short_guid->peer->lid, 103);
}

TEST(ParseIbnetdiscover, RedactedOutputIsRefused) {
  EXPECT_EQ(ErrorOf(ParseIbnetdiscover(Fabric("ibnetdiscover/redacted-2xndr-qm9700.txt"), "d")),
            "d:10: expected \"S-\" and a 16-digit node GUID, got 'Switch\\t129 "
            "\"S-9c05<redacted>\"\\t\\t# "
            "\"MF0;CNTSN-POD229-QM97-IB-02:MQM9700/U1\" enhanced port 0 lid 1 lmc 0'");
}

// Constructed from ibnetdiscover.c's formats: a 2X NDR split port, -g's [ext N], a router.
TEST(ParseIbnetdiscover, SplitPortExtPortsAndRouters) {
  std::string text =
      "Switch\t129 \"S-fc6a1c0300e7a8c0\"\t\t# \"MF0;leaf01:MQM9700/U1\" enhanced port 0 lid 1 lmc "
      "0\n"
      "[1][ext 1]\t\"H-b83fd20300a1b2c0\"[1](b83fd20300a1b2c1) \t\t# \"gpu001 mlx5_0\" lid 22 "
      "2xNDR\n"
      "[3]\t\"R-0002c90300000001\"[2]\t\t# \"router\" lid 9 4xHDR s=4 w=2 v=4\n"
      "\n"
      "Rt\t2 \"R-0002c90300000001\"\t\t# \"router\"\n"
      "[2](2c90300000003) \t\"S-fc6a1c0300e7a8c0\"[3][ext 3]\t\t# lid 9 lmc 0 "
      "\"MF0;leaf01:MQM9700/U1\" lid 1 4xHDR\n";
  Result<IbSubnet> r = ParseIbnetdiscover(text, "g");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  ASSERT_EQ(r->ports.size(), 3u);
  EXPECT_EQ(r->ports[0].width, 2);
  EXPECT_EQ(r->ports[0].speed, "NDR");
  EXPECT_EQ(r->ports[0].rate_gbps, 200.0);
  EXPECT_EQ(r->ports[1].rate_gbps, 200.0);
  EXPECT_EQ(r->ports[2].node.guid, "0x0002c90300000001");
  EXPECT_EQ(r->ports[2].port_guid, "0x0002c90300000003");
  EXPECT_EQ(r->ports[2].peer_port, 3);
  EXPECT_TRUE(r->warnings.empty()) << r->warnings[0];
}

TEST(ParseIbnetdiscover, RefusesHostileInput) {
  EXPECT_EQ(ErrorOf(ParseIbnetdiscover("", "d")), "d: no devices in the ibnetdiscover output");
  EXPECT_EQ(ErrorOf(ParseIbnetdiscover(
                "#\n# Topology file: generated on Mon Dec 18 12:34:08 2023\n#\n", "d")),
            "d: no devices in the ibnetdiscover output");
  const std::string sw = "Switch\t36 \"S-0002c9020046c588\"\t\t# \"sw\" base port 0 lid 2 lmc 0\n";
  EXPECT_EQ(
      ErrorOf(ParseIbnetdiscover(
          sw + "[300]\t\"H-0002c90300293e1e\"[1](2c90300293e1f) \t\t# \"h\" lid 6 4xQDR\n", "d")),
      "d:2: expected [PORT] with a port number from 1 to 254, got "
      "'[300]\\t\"H-0002c90300293e1e\"[1](2c90300293e1f) "
      "\\t\\t# \"h\" lid 6 4xQDR'");
  EXPECT_EQ(ErrorOf(ParseIbnetdiscover(
                sw + "[1]\t\"H-0002c90300293e1e\"[1](2c90300293e1f) \t\t# \"h\" li", "d")),
            "d:2: expected \"PEER DESCRIPTION\" lid N WIDTHxSPEED (truncated line?), got "
            "'[1]\\t\"H-0002c90300293e1e\""
            "[1](2c90300293e1f) \\t\\t# \"h\" li'");
  EXPECT_EQ(ErrorOf(ParseIbnetdiscover(
                sw + "[1]\t\"H-0002c90300293e1e\"[1] \t\t# \"h\" lid 6 4xQQR\n", "d")),
            "d:2: expected a width and speed like 4xHDR, got '[1]\\t\"H-0002c90300293e1e\"[1] "
            "\\t\\t# \"h\" lid 6 "
            "4xQQR'");
  EXPECT_EQ(
      ErrorOf(ParseIbnetdiscover("[1]\t\"S-0002c9020046c588\"[1]\t\t# \"sw\" lid 2 4xQDR\n", "d")),
      "d:1: port line before any node line, got '[1]\\t\"S-0002c9020046c588\"[1]\\t\\t# \"sw\" lid "
      "2 4xQDR'");
  EXPECT_EQ(ErrorOf(ParseIbnetdiscover(sw + "Hca\t1 \"H-0002c90300293e1e\"\n", "d")),
            "d:2: expected a node line (Switch, Ca, Rt) or a port line, got 'Hca\\t1 "
            "\"H-0002c90300293e1e\"'");
}

TEST(ParseIbnetdiscover, DuplicateGuidAndEscapedNames) {
  std::string text =
      "Switch\t36 \"S-0002c9020046c588\"\t\t# \"leaf1\" base port 0 lid 2 lmc 0\n"
      "[1]\t\"H-0002c90300293e1e\"[1](2c90300293e1f) \t\t# \"gpu\x07"
      "001 mlx5_0\" lid 6 4xQDR\n"
      "Switch\t36 \"S-0002c9020046c588\"\t\t# \"leaf9\" base port 0 lid 2 lmc 0\n";
  Result<IbSubnet> r = ParseIbnetdiscover(text, "d");
  ASSERT_TRUE(r.ok()) << ErrorOf(r);
  EXPECT_EQ(r->ports[0].peer->desc, "gpu\\x07001 mlx5_0");
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_EQ(
      r->warnings[0],
      "d:2: node description has control or non-ASCII bytes, kept escaped: 'gpu\\x07001 mlx5_0'");
  EXPECT_EQ(r->warnings[1],
            "d:3: node GUID 0x0002c9020046c588 is \"leaf9\" here but \"leaf1\" at line 1");
}

// ---------------------------------------------------------------------------------------

TEST(CrossCheckSubnets, IblinkinfoAndIbnetdiscoverOfOneFabricAgree) {
  IbSubnet links = MustParseLinks("iblinkinfo/qdr-1switch-5hca.txt");
  IbSubnet disc = MustParseDisc("ibnetdiscover/qdr-1switch-5hca.txt");
  EXPECT_TRUE(CrossCheckSubnets(links, disc).empty());
  EXPECT_TRUE(CrossCheckSubnets(disc, links).empty());
}

TEST(CrossCheckSubnets, MissingMovedAndSlowerCables) {
  Result<IbSubnet> parsed =
      ParseIblinkinfo(Fabric("iblinkinfo/qdr-1switch-5hca.txt"), "iblinkinfo");
  ASSERT_TRUE(parsed.ok()) << ErrorOf(parsed);
  const IbSubnet& links = *parsed;
  std::string text = Fabric("ibnetdiscover/qdr-1switch-5hca.txt");
  // ip-212 moved from switch port 14 to 15, and ip-213's cable runs at 1X (both ends), and
  // ip-160's cable is gone from both ends.
  auto replace = [&](std::string_view from, std::string_view to) {
    std::size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("[14]    \"H-0002c90300293eba\"", "[15]    \"H-0002c90300293eba\"");
  replace("\"S-0002c9020046c588\"[14]", "\"S-0002c9020046c588\"[15]");
  replace("\"ip-213 mlx4_0\" lid 9 4xQDR", "\"ip-213 mlx4_0\" lid 9 1xQDR");
  replace(
      "\"Infiniscale-IV Mellanox Technologies\" lid 2 "
      "4xQDR\n\nvendid=0x2c9\ndevid=0x673c\nsysimgguid=0x2c90300293ebd",
      "\"Infiniscale-IV Mellanox Technologies\" lid 2 "
      "1xQDR\n\nvendid=0x2c9\ndevid=0x673c\nsysimgguid=0x2c90300293ebd");
  replace("[33]    \"H-0002c903000d7aac\"[1](2c903000d7aad)      # \"ip-160 HCA-1\" lid 5 4xQDR\n",
          "");
  replace(
      "[1](2c903000d7aad)  \"S-0002c9020046c588\"[33]        # lid 5 lmc 0 \"Infiniscale-IV "
      "Mellanox Technologies\" lid 2 4xQDR\n",
      "");
  Result<IbSubnet> disc = ParseIbnetdiscover(text, "ibnetdiscover");
  ASSERT_TRUE(disc.ok()) << ErrorOf(disc);
  std::vector<std::string> d = CrossCheckSubnets(links, *disc);
  ASSERT_EQ(d.size(), 3u) << fmt::format("{}", fmt::join(d, "\n"));
  EXPECT_EQ(d[0],
            "iblinkinfo:2: \"ip-160 HCA-1\"[1] to \"Infiniscale-IV Mellanox Technologies\"[33], "
            "but ibnetdiscover "
            "lists no cable there");
  EXPECT_EQ(d[1],
            "iblinkinfo:4: \"ip-213 mlx4_0\"[1] to \"Infiniscale-IV Mellanox Technologies\"[16] is "
            "4X QDR, but "
            "ibnetdiscover:8: 1X QDR");
  EXPECT_EQ(d[2],
            "iblinkinfo:6: \"ip-212 mlx4_0\"[1] to \"Infiniscale-IV Mellanox Technologies\"[14], "
            "but ibnetdiscover:7: "
            "\"Infiniscale-IV Mellanox Technologies\"[15] to \"ip-212 mlx4_0\"[1]");
}

}  // namespace
}  // namespace gpuforge::facts
