// networks.NAME.roce and nodes[].port_addresses (issue #13): what loads, and every mistake
// with the position and message an operator reads.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/model/roce.h"

namespace gpuforge::inventory {
namespace {

constexpr std::string_view kBase = R"y(version: 1
cluster: {name: t}
networks:
  r: {role: compute, kind: roce, rate: 400Gb/s, roce: {mtu: 4200, dscp: 24, pfc_priority: 4, ecn: false}}
  s: {role: storage, kind: ethernet, rate: 100Gb/s}
profiles:
  p:
    gpus: {model: H200, count: 2}
    nics:
      - {name: "mlx5_[0-1]", kind: roce, rate: 400Gb/s, network: r, netdev: [eth1, eth2]}
      - {name: mlx5_2, kind: roce, rate: 400Gb/s, network: r}
      - {name: eth0, kind: ethernet, rate: 100Gb/s, network: s, netdev: eth0}
nodes:
  - name: "gpu[1-2]"
    profile: p
    port_addresses: {mlx5_0: "198.18.8.[1-2]/24", mlx5_1: "198.18.8.[11-12]/24"}
)y";

std::string Edit(std::string_view from, std::string_view to) {
  std::string base(kBase);
  std::size_t at = base.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) base.replace(at, from.size(), to);
  return base;
}

std::vector<std::string> Errors(std::string_view yaml) {
  LoadOutcome out = LoadString(yaml, "inv.yaml");
  EXPECT_FALSE(out.ok());
  std::vector<std::string> errors;
  for (const Diagnostic& d : out.diags.items()) {
    errors.push_back(std::to_string(d.pos.line) + ":" + std::to_string(d.pos.col) + ": " + d.message);
  }
  return errors;
}

TEST(LoadRoce, SettingsAndPortAddresses) {
  LoadOutcome out = LoadString(kBase, "inv.yaml");
  ASSERT_TRUE(out.ok()) << out.FormatDiagnostics();
  const model::Cluster& c = *out.cluster;
  const model::Network* r = c.FindNetwork("r");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->roce.has_value());
  EXPECT_EQ(r->roce->mtu, 4200);
  EXPECT_EQ(r->roce->dscp, 24);
  EXPECT_EQ(r->roce->pfc_priority, 4);
  EXPECT_FALSE(r->roce->ecn);
  EXPECT_FALSE(r->roce->gid_index.has_value());
  const model::Node* g2 = c.FindNode("gpu2");
  ASSERT_NE(g2, nullptr);
  EXPECT_EQ(g2->port_addresses.at("mlx5_0"), "198.18.8.2/24");
  EXPECT_EQ(g2->port_addresses.at("mlx5_1"), "198.18.8.12/24");
  std::vector<model::RocePort> ports = model::RocePorts(c, *g2);
  ASSERT_EQ(ports.size(), 3u);  // mlx5_2 is on the RoCE network too, without netdev or address
  EXPECT_EQ(ports[1].address->Subnet(), "198.18.8.0/24");
  EXPECT_EQ(ports[1].table, 101);
  EXPECT_EQ(ports[1].rule_pref, 1001);
  EXPECT_FALSE(ports[2].address.has_value());
  EXPECT_EQ(ports[0].settings.mtu, 4200);
}

TEST(LoadRoce, DefaultsWithoutARoceBlock) {
  LoadOutcome out = LoadString(Edit(", roce: {mtu: 4200, dscp: 24, pfc_priority: 4, ecn: false}", ""), "inv.yaml");
  ASSERT_TRUE(out.ok()) << out.FormatDiagnostics();
  std::vector<model::RocePort> ports = model::RocePorts(*out.cluster, *out.cluster->FindNode("gpu1"));
  ASSERT_FALSE(ports.empty());
  EXPECT_EQ(ports[0].settings.mtu, 9000);
  EXPECT_EQ(ports[0].settings.dscp, 26);
  EXPECT_EQ(ports[0].settings.pfc_priority, 3);
  EXPECT_TRUE(ports[0].settings.ecn);
  EXPECT_EQ(model::TrafficClassOf(ports[0].settings.dscp), 104);
}

TEST(LoadRoce, BadSettingsAreErrors) {
  EXPECT_EQ(Errors(Edit("dscp: 24", "dscp: 64")),
            std::vector<std::string>{"4:73: 'dscp' in 'roce' of network 'r' is 64; it must be between 0 and 63"});
  std::vector<std::string> e = Errors(Edit("s: {role: storage, kind: ethernet, rate: 100Gb/s}",
                                           "s: {role: storage, kind: ethernet, rate: 100Gb/s, roce: {mtu: 9000}}"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("network 's' is a ethernet network; 'roce' settings belong to a network of kind roce"),
            std::string::npos) << e[0];
  e = Errors(Edit("ecn: false", "ecn: false, pfc: 3"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NE(e[0].find("pfc"), std::string::npos) << e[0];
}

TEST(LoadRoce, BadPortAddressesAreErrors) {
  auto one = [](const std::string& yaml) {
    std::vector<std::string> e = Errors(yaml);
    EXPECT_EQ(e.size(), 1u) << ::testing::PrintToString(e);
    return e.empty() ? std::string() : e[0];
  };
  EXPECT_EQ(one(Edit("\"198.18.8.[1-2]/24\"", "\"198.18.8.[1-3]/24\"")),
            "16:30: node entry 'gpu[1-2]' names 2 nodes but the port address of NIC 'mlx5_0' expands to 3; they are "
            "paired in order, so the counts must match");
  EXPECT_EQ(one(Edit("\"198.18.8.[1-2]/24\"", "\"198.18.8.[1-2]\"")),
            "16:30: port address '198.18.8.1' of node gpu1 NIC 'mlx5_0' is not an IPv4 ADDRESS/PREFIX such as "
            "198.18.8.1/24");
  EXPECT_EQ(one(Edit("\"198.18.8.[1-2]/24\"", "\"198.18.8.[300-301]/24\"")),
            "16:30: port address '198.18.8.300/24' of node gpu1 NIC 'mlx5_0' is not an IPv4 ADDRESS/PREFIX such as "
            "198.18.8.1/24");
  EXPECT_EQ(one(Edit("\"198.18.8.[11-12]/24\"", "\"198.18.8.[2-3]/24\"")),
            "16:59: port address 198.18.8.2 of node gpu1 NIC 'mlx5_1' is already used at inv.yaml:16:30");
  std::string e = one(Edit("mlx5_1: \"198", "mlx5_9: \"198"));
  EXPECT_NE(e.find("profile 'p' has no NIC 'mlx5_9'"), std::string::npos) << e;
  e = one(Edit("mlx5_1: \"198", "eth0: \"198"));
  EXPECT_NE(e.find("NIC 'eth0' of profile 'p' is ethernet; port addresses are for RoCE ports"), std::string::npos) << e;
  e = one(Edit("mlx5_1: \"198", "mlx5_2: \"198"));
  EXPECT_NE(e.find("NIC 'mlx5_2' of profile 'p' has no 'netdev'"), std::string::npos) << e;
  e = one(Edit("\"198.18.8.[1-2]/24\"", "\"198.18.8.[1-2]/24; rm -rf /\""));
  EXPECT_NE(e.find("port address '198.18.8.[1-2]/24; rm -rf /' contains"), std::string::npos) << e;
  e = one(Edit("port_addresses: {mlx5_0: \"198.18.8.[1-2]/24\", mlx5_1: \"198.18.8.[11-12]/24\"}",
               "port_addresses: [198.18.8.1/24]"));
  EXPECT_NE(e.find("must be a map from NIC name to IPv4 ADDRESS/PREFIX"), std::string::npos) << e;
}

TEST(LoadRoce, ParseIpv4PrefixIsStrict) {
  EXPECT_EQ(model::ParseIpv4Prefix("198.18.8.1/24")->ToString(), "198.18.8.1/24");
  EXPECT_EQ(model::ParseIpv4Prefix("198.19.255.254/15")->Subnet(), "198.18.0.0/15");
  for (const char* bad : {"198.18.8.1", "198.18.8/24", "198.18.8.1/0", "198.18.8.1/33", "198.018.8.1/24",
                          "198.18.8.1.1/24", " 198.18.8.1/24", "198.18.8.1/24 ", "a.b.c.d/24", "198.18.8.-1/24", ""}) {
    EXPECT_FALSE(model::ParseIpv4Prefix(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace gpuforge::inventory
