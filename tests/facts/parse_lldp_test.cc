// lldpctl's neighbour listings on real output (tests/data/fabric/lldpctl, sources in
// README-lldp-design.md) and on hostile input: every way the text can be wrong is an error
// naming the source, or a warning where the neighbour is still read.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpuforge/facts/fabric.h"

namespace gpuforge::facts {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(GPUFORGE_TEST_DATA_DIR) + "/fabric/lldpctl/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Summary(const LldpNeighbor& n) {
  return n.local_if + " <- " + n.chassis_name + " [" + n.chassis_id_type + " " + n.chassis_id +
         "] port " + n.port_id_type + " " + n.port_id + " '" + n.port_descr + "' @ " + n.where;
}

TEST(ParseLldpctlJson, LldpdIntegrationNeighbors) {
  auto r = ParseLldpctlJson(Fixture("json-lldpd-integration-neighbors.json"), "lldpctl on gpu001");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 1u);
  EXPECT_EQ(Summary(r->neighbors[0]),
            "eth0 <- ns-2.example.com [mac 00:00:00:00:00:02] port mac 00:00:00:00:00:02 'eth1' @ "
            "lldpctl on gpu001: "
            "interface eth0");
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_EQ(r->source, "lldpctl on gpu001");
}

TEST(ParseLldpctlJson, Json0ReadsTheSameNeighbor) {
  auto a = ParseLldpctlJson(Fixture("json-lldpd-integration-neighbors.json"), "s");
  auto b = ParseLldpctlJson(Fixture("json0-lldpd-integration-neighbors.json"), "s");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(b->neighbors.size(), 1u);
  EXPECT_EQ(Summary(a->neighbors[0]), Summary(b->neighbors[0]));
}

TEST(ParseLldpctlJson, SeveralInterfacesAreAList) {
  auto r = ParseLldpctlJson(Fixture("json-sonic-two-interfaces.json"), "s");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 2u);
  EXPECT_EQ(Summary(r->neighbors[0]),
            "eth0 <- c6500-vxlan [mac 00:1c:0f:5f:c7:c0] port ifname Gi3/36 "
            "'GigabitEthernet3/36' @ s: interface eth0");
  EXPECT_EQ(Summary(r->neighbors[1]),
            "Ethernet8 <- MKTK-SW01 [mac b8:69:f4:99:d1:4a] port ifname bond1.100 '' @ s: "
            "interface Ethernet8");
}

TEST(ParseLldpctlJson, TwoNeighborsOnOneInterface) {
  auto r = ParseLldpctlJson(R"({"lldp": {"interface": [
    {"eth0": {"via": "LLDP", "chassis": {"a": {"id": {"type": "mac", "value": "m1"}}}, "port": {"id": {"type": "ifname", "value": "p1"}}}},
    {"eth0": {"via": "CDPv2", "chassis": {"id": {"type": "local", "value": "x"}}, "port": {"id": {"type": "local", "value": "p2"}, "descr": "d"}}}]}})",
                            "s");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 2u);
  EXPECT_EQ(Summary(r->neighbors[0]), "eth0 <- a [mac m1] port ifname p1 '' @ s: interface eth0");
  // A chassis without a name is not wrapped in {NAME: ...}.
  EXPECT_EQ(Summary(r->neighbors[1]), "eth0 <-  [local x] port local p2 'd' @ s: interface eth0");
}

TEST(ParseLldpctlJson, NoNeighborsAtAll) {
  for (const char* text :
       {"{\n  \"lldp\": {\n  }\n}\n", R"({"lldp": [{}]})", R"({"lldp": [{"interface": []}]})"}) {
    auto r = ParseLldpctlJson(text, "s");
    ASSERT_TRUE(r.ok()) << text << r.error().message;
    EXPECT_TRUE(r->neighbors.empty());
  }
}

TEST(ParseLldpctlJson, InterfaceWithoutNeighborIsAWarning) {
  auto r =
      ParseLldpctlJson(R"({"lldp": {"interface": {"eth3": {"via": "LLDP", "rid": "0"}}}})", "s");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->neighbors.empty());
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0], "s: interface eth3: no chassis and no port: no neighbour read here");
}

TEST(ParseLldpctlJson, UnknownKeysAreIgnored) {
  auto r = ParseLldpctlJson(
      R"({"lldp": {"future": 1, "interface": {"eth0": {"via": "LLDP", "new-tlv": {"x": [1, 2]},
    "chassis": {"sw": {"id": {"type": "mac", "value": "m"}, "extra": true}}, "port": {"id": {"type": "ifname", "value": "p"}, "power": {}}}}}})",
      "s");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 1u);
  EXPECT_EQ(Summary(r->neighbors[0]), "eth0 <- sw [mac m] port ifname p '' @ s: interface eth0");
}

TEST(ParseLldpctlJson, TruncatedOutputIsAnErrorWithItsLine) {
  std::string text = Fixture("json-sonic-two-interfaces.json");
  text.resize(text.size() / 2);
  auto r = ParseLldpctlJson(text, "lldpctl on gpu001");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("lldpctl on gpu001:", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("not lldpctl JSON (cut short or garbled)"), std::string::npos)
      << r.error().message;
}

TEST(ParseLldpctlJson, GarbledOutputNamesTheLine) {
  auto r = ParseLldpctlJson("{\n  \"lldp\": {\n    \"interface\": ]\n}\n", "s");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("s:3: not lldpctl JSON (cut short or garbled): parse error", 0),
            0u)
      << r.error().message;
}

TEST(ParseLldpctlJson, WrongShapes) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"", "s:1: empty output, not lldpctl JSON"},
      {R"({"neighbors": []})",
       "s:1: no \"lldp\" object at the top; not the output of `lldpctl -f json` or `-f json0`"},
      {R"([1, 2])",
       "s:1: no \"lldp\" object at the top; not the output of `lldpctl -f json` or `-f json0`"},
      {R"({"lldp": "x"})", "s: \"lldp\" holds string, not an object"},
      {R"({"lldp": {"interface": {"eth0": {"chassis": {"id": {"type": "mac", "value": "m"}}}}}})",
       "s: interface eth0: a chassis but no port"},
      {R"({"lldp": {"interface": {"eth0": {"port": {"id": {"type": "mac", "value": "m"}}}}}})",
       "s: interface eth0: a port but no chassis"},
      {R"({"lldp": {"interface": {"eth0": {"chassis": {"sw": {"descr": "x"}}, "port": {"id": {"value": "p"}}}}}})",
       "s: interface eth0: the chassis has no id"},
      {R"({"lldp": {"interface": {"eth0": {"chassis": {"id": {"type": "mac", "value": "m"}}, "port": {"descr": "x"}}}}})",
       "s: interface eth0: the port has no id"},
      {R"({"lldp": {"interface": [7]}})",
       "s: an interface entry is neither {\"name\": IF, ...} (json0) nor {IF: {...}} (json): '7'"},
  };
  for (const Case& c : cases) {
    auto r = ParseLldpctlJson(c.text, "s");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().message, c.error) << c.text;
  }
}

TEST(ParseLldpctlJson, DeepNestingIsRefused) {
  std::string text = R"({"lldp": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto r = ParseLldpctlJson(text, "s");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "s:1: nested over 64 levels deep; not lldpctl JSON");
}

TEST(ParseLldpctlJson, RawEscapeInNameFromLldpd1016IsKeptEscaped) {
  auto r =
      ParseLldpctlJson(Fixture("json-lldpd-1.0.16-raw-escape-in-name.json"), "lldpctl on gpu001");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 1u);
  EXPECT_EQ(r->neighbors[0].chassis_name, "leaf\\x1b[2J1");
  EXPECT_EQ(r->neighbors[0].port_id, "swp1");
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_EQ(r->warnings[0],
            "lldpctl on gpu001:9: a raw control byte inside a JSON string (lldpd before 1.0.17 "
            "wrote names unescaped); "
            "read as its \\u escape");
  EXPECT_EQ(r->warnings[1],
            "lldpctl on gpu001: interface ens1f0np0: chassis name 'leaf\\x1b[2J1' has control or "
            "non-ASCII bytes; kept "
            "escaped");
}

TEST(ParseLldpctlJson, EscapedControlCharactersInNamesAreWarned) {
  auto r = ParseLldpctlJson(
      R"({"lldp": {"interface": {"eth\u001b]0;x\u0007": {"chassis": {"sw\u001b[31m": {"id": {"type": "mac", "value": "m"}}},
      "port": {"id": {"type": "ifname", "value": "p\u0000"}}}}}})",
      "s");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 1u);
  EXPECT_EQ(r->neighbors[0].local_if, "eth\\x1b]0;x\\x07");
  EXPECT_EQ(r->neighbors[0].chassis_name, "sw\\x1b[31m");
  EXPECT_EQ(r->neighbors[0].port_id, "p\\x00");
  EXPECT_EQ(r->neighbors[0].where, "s: interface eth\\x1b]0;x\\x07");
  ASSERT_EQ(r->warnings.size(), 3u);
  EXPECT_EQ(r->warnings[0],
            "s: interface: interface name 'eth\\x1b]0;x\\x07' has control or non-ASCII bytes; kept "
            "escaped");
}

TEST(ParseLldpctlJson, BinaryInputIsRefused) {
  auto r = ParseLldpctlJson(std::string("{\"lldp\"\0:{}}", 12), "s");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "s: line 1: binary data (NUL byte), not command output");
}

TEST(ParseLldpctlKeyvalue, JuniperTor) {
  auto r = ParseLldpctlKeyvalue(Fixture("keyvalue-juniper-qfx5200-tor.txt"), "lldpctl on gpu001");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 1u);
  EXPECT_EQ(Summary(r->neighbors[0]),
            "ens1f0 <- tor-sw-413-1.infra.xxxx.lab [mac xx:xx:xx:xx:xx:xx] port ifname "
            "et-0/0/1:3 'et-0/0/1:3' @ lldpctl on gpu001:1");
  EXPECT_TRUE(r->warnings.empty());
}

TEST(ParseLldpctlKeyvalue, TwoNeighboursAVlanInterfaceAndAnAlias) {
  auto r = ParseLldpctlKeyvalue(Fixture("keyvalue-two-neighbours-vlan-if.txt"), "s");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 3u);
  EXPECT_EQ(Summary(r->neighbors[0]),
            "eth0.100 <- leaf1 [mac 0c:42:a1:00:00:01] port ifname swp12 'to gpu001' @ s:1");
  EXPECT_EQ(Summary(r->neighbors[1]),
            "eth0.100 <-  [local rack3-pdu] port mac 0c:42:a1:00:00:99 '' @ s:11");
  EXPECT_EQ(Summary(r->neighbors[2]),
            "ens1f1np1 <- leaf2 [mac b8:59:9f:00:00:02] port local Ethernet48 'Ethernet48' @ s:16");
}

TEST(ParseLldpctlKeyvalue, EmptyOutputIsNoNeighbours) {
  auto r = ParseLldpctlKeyvalue("", "s");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->neighbors.empty());
}

TEST(ParseLldpctlKeyvalue, BadLines) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"lldp.eth0.via=LLDP\ngarbage\n",
       "s:2: expected lldp.INTERFACE.KEY=VALUE (lldpctl -f keyvalue), got 'garbage'"},
      {"lldp.eth0.chassis.mac=m\n",
       "s:1: 'lldp.eth0.chassis.mac' is not in an interface block (each starts with lldp.IF.via=)"},
      {"lldp.eth0.via=LLDP\nlldp.eth1.port.ifname=p\n",
       "s:2: 'lldp.eth1.port.ifname' is not in an interface block (each starts with lldp.IF.via=)"},
      {"lldp.eth0.via=LLDP\nlldp.eth0.chassis.mac=m\nlldp.eth0.port.ifna",
       "s:3: expected lldp.INTERFACE.KEY=VALUE (lldpctl -f keyvalue), got 'lldp.eth0.port.ifna'"},
      {"lldp.eth0.via=LLDP\nlldp.eth0.chassis.mac=m\n",
       "s:1: interface eth0: no port id (lldp.eth0.port.TYPE=...); the output may be cut short"},
      {"lldp.eth0.via=LLDP\nlldp.eth0.port.ifname=p\nlldp.eth1.via=LLDP\n",
       "s:1: interface eth0: no chassis id (lldp.eth0.chassis.TYPE=...); the output may be cut "
       "short"},
      {"lldp.eth0.via=LLDP\nlldp.eth0.port.ifname=p\nlldp.eth0.port.mac=q\n",
       "s:3: interface 'eth0': a second port id in one block"},
  };
  for (const Case& c : cases) {
    auto r = ParseLldpctlKeyvalue(c.text, "s");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().message, c.error) << c.text;
  }
}

TEST(ParseLldpctlKeyvalue, CrLfAndEscapesInNames) {
  auto r = ParseLldpctlKeyvalue(
      "lldp.eth0.via=LLDP\r\nlldp.eth0.chassis.mac=m\r\nlldp.eth0.chassis.name=evil\x1b["
      "2Jsw\r\nlldp.eth0.port.ifname=swp1\r\n",
      "s");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->neighbors.size(), 1u);
  EXPECT_EQ(r->neighbors[0].chassis_name, "evil\\x1b[2Jsw");
  EXPECT_EQ(r->neighbors[0].port_id, "swp1");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0],
            "s:1: chassis name 'evil\\x1b[2Jsw' has control or non-ASCII bytes; kept escaped");
}

}  // namespace
}  // namespace gpuforge::facts
