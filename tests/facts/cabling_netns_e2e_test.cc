// gpuforge cabling against a real Ethernet fabric (#31): test hosts (real sshd, tests/testbed)
// play the nodes, network namespaces play two leaf switches, veth pairs are the cables, and
// the real lldpd runs on every end. One test cables the fabric as designed and expects every
// cable OK; the other plants a swapped pair, a NIC on the other rail's leaf, a dark cable and
// an extra cable, and expects exactly those verdicts.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "testbed/fixture.h"

namespace gpuforge::testbed {
namespace {

class CablingNetnsE2e : public TestbedTest {
 protected:
  struct Switch {
    std::string name;
    int pid = 0;
  };

  void SetUp() override {
    std::string why;
    if (!Available(&why)) GTEST_SKIP() << why;
    Result<CommandOutput> lldpd = RunCommand({"sh", "-c", "command -v lldpd && command -v lldpctl"});
    if (!lldpd.ok() || lldpd->exit_code != 0) GTEST_SKIP() << "lldpd is not installed (scripts/deps.sh --test installs it)";
    if (!Bring(3, /*netns=*/true)) return;
  }

  void TearDown() override {
    for (const Switch& s : switches_) {
      if (s.pid > 0) (void)RunCommand({"kill", "-9", std::to_string(s.pid)});
    }
  }

  // A switch: its own network, UTS and mount namespaces (a tmpfs /run for lldpd's socket and
  // chroot), lldpd started once /run/go appears, so every cable is in place before it looks.
  // `ifname_ports`: the switch sends its interface name as port id (lldpd's portidsubtype
  // ifname, as switch OSes do); otherwise lldpd's default, the MAC as id and the name as
  // description (what some switch OSes send while a port is down, sonic-buildimage #11255).
  void StartSwitch(const std::string& name, const std::string& hostname, bool ifname_ports) {
    const std::string dir = tb_->paths().dir;
    const std::string conf = WriteFile(name + ".lldpd.conf",
                                       fmt::format("configure system hostname {}\n{}configure lldp tx-interval 1\n",
                                                   hostname, ifname_ports ? "configure lldp portidsubtype ifname\n" : ""));
    const std::string pidfile = fmt::format("{}/{}.pid", dir, name);
    const std::string inner = fmt::format(
        "echo \\$\\$ > {}; mount -t tmpfs tmpfs /run && mkdir -p /run/lldpd && hostname {} && ip link set lo up && "
        "while [ ! -e /run/go ]; do sleep 0.1; done; exec lldpd -d -O {} -I 'swp*'",
        pidfile, hostname, conf);
    const std::string cmd = fmt::format("setsid unshare --net --uts --mount --fork sh -c \"{}\" >{}/{}.log 2>&1 &",
                                        inner, dir, name);
    Result<CommandOutput> r = RunCommand({"sh", "-c", cmd});
    ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->output : r.error().message);
    for (int i = 0; i < 100; ++i) {
      std::ifstream in(pidfile);
      int pid = 0;
      if (in >> pid && pid > 0) {
        switches_.push_back({name, pid});
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "switch " << name << " did not start";
  }

  int SwitchPid(const std::string& name) const {
    for (const Switch& s : switches_) {
      if (s.name == name) return s.pid;
    }
    return 0;
  }

  // A cable: a veth pair from host i's `nic` to the switch's `port`; `up` false leaves the
  // switch's end down (a dark cable: the node sees no carrier).
  void Cable(std::size_t host, const std::string& nic, const std::string& sw, int port, bool up = true) {
    const int hp = tb_->hosts()[host].pid;
    const int sp = SwitchPid(sw);
    ASSERT_GT(sp, 0) << sw;
    const std::string swp = fmt::format("swp{}", port);
    const std::string cmd = fmt::format(
        "ip link add name {nic} netns {hp} type veth peer name {swp} netns {sp} && "
        "nsenter -t {hp} -n ip link set {nic} up && {up}",
        fmt::arg("nic", nic), fmt::arg("hp", hp), fmt::arg("swp", swp), fmt::arg("sp", sp),
        fmt::arg("up", up ? fmt::format("nsenter -t {} -n ip link set {} up", sp, swp) : std::string("true")));
    Result<CommandOutput> r = RunCommand({"sh", "-c", cmd});
    ASSERT_TRUE(r.ok() && r->exit_code == 0) << cmd << ": " << (r.ok() ? r->output : r.error().message);
  }

  // lldpd everywhere, then wait until each host sees `neighbours[i]` LLDP neighbours.
  void Go(const std::vector<int>& neighbours) {
    for (const Switch& s : switches_) {
      Result<CommandOutput> r = RunCommand({"nsenter", "-t", std::to_string(s.pid), "-m", "touch", "/run/go"});
      ASSERT_TRUE(r.ok() && r->exit_code == 0) << s.name;
    }
    for (std::size_t i = 0; i < tb_->hosts().size(); ++i) {
      Out(i, "mkdir -p /run/lldpd && printf 'configure lldp tx-interval 1\\n' >/run/gf-lldpd.conf && "
             "lldpd -O /run/gf-lldpd.conf -I 'ens*'");
    }
    for (std::size_t i = 0; i < tb_->hosts().size(); ++i) {
      std::string seen;
      for (int t = 0; t < 300; ++t) {
        seen = SshOutput(i, "lldpctl -f keyvalue | grep -c '[.]chassis[.]name=' || true");
        if (std::atoi(seen.c_str()) >= neighbours[i]) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      ASSERT_GE(std::atoi(seen.c_str()), neighbours[i]) << tb_->hosts()[i].name << " saw " << seen;
    }
  }

  // The design: NIC ens1f0 (rail 0) of every host on leaf1, ens2f0 (rail 1) on leaf2, ens3f0
  // uncabled by design. leaf2 names itself by a fully qualified name.
  std::string WriteInventory() {
    std::string nodes;
    for (const Host& h : tb_->hosts()) nodes += fmt::format("  - {{name: {}, address: {}, profile: host}}\n", h.name, h.address);
    return WriteFile("cabling.yaml", fmt::format(R"(version: 1
cluster: {{name: cabling-netns}}
defaults:
  ssh: {{user: root, port: {port}, identity_file: {id}}}
profiles:
  host:
    cpu: {{sockets: 1, cores_per_socket: 2}}
    nics:
      - {{name: eth0, kind: ethernet, rate: 10Gb/s, network: mgmt, netdev: eth0}}
      - {{name: ens1f0, kind: ethernet, rate: 10Gb/s, network: fabric, netdev: ens1f0, rail: 0}}
      - {{name: ens2f0, kind: ethernet, rate: 10Gb/s, network: fabric, netdev: ens2f0, rail: 1}}
      - {{name: ens3f0, kind: ethernet, rate: 10Gb/s, network: fabric, netdev: ens3f0}}
networks:
  mgmt: {{role: control, kind: ethernet, rate: 10Gb/s}}
  fabric: {{role: compute, kind: ethernet, rate: 10Gb/s, topology: rail-optimized}}
switches:
  - {{name: leaf1, tier: leaf, network: fabric, ports: 16, port_rate: 10Gb/s, port_pattern: "swp{{port}}"}}
  - {{name: leaf2, tier: leaf, network: fabric, ports: 16, port_rate: 10Gb/s}}
links:
  - {{from: "{first}:ens1f0", to: "leaf1:1"}}
  - {{from: "{second}:ens1f0", to: "leaf1:2"}}
  - {{from: "{third}:ens1f0", to: "leaf1:3"}}
  - {{from: "{first}:ens2f0", to: "leaf2:1"}}
  - {{from: "{second}:ens2f0", to: "leaf2:2"}}
  - {{from: "{third}:ens2f0", to: "leaf2:3"}}
software:
  os: {{distro: debian}}
nodes:
{nodes})",
                                                 fmt::arg("port", tb_->hosts()[0].port),
                                                 fmt::arg("id", tb_->paths().identity),
                                                 fmt::arg("first", tb_->hosts()[0].name),
                                                 fmt::arg("second", tb_->hosts()[1].name),
                                                 fmt::arg("third", tb_->hosts()[2].name), fmt::arg("nodes", nodes)));
  }

  // near end -> state, from --format json.
  std::map<std::string, std::string> States(const std::string& json, nlohmann::json* doc) {
    std::map<std::string, std::string> out;
    *doc = nlohmann::json::parse(json, nullptr, false);
    EXPECT_FALSE(doc->is_discarded()) << json;
    if (doc->is_discarded()) return out;
    for (const auto& c : (*doc)["cables"]) out[c["near"].get<std::string>()] = c["state"].get<std::string>();
    return out;
  }

  std::vector<Switch> switches_;
};

TEST_F(CablingNetnsE2e, AsDesignedEveryCableIsOk) {
  StartSwitch("leaf1", "leaf1", true);
  StartSwitch("leaf2", "leaf2.pod1.example.net", false);
  for (std::size_t i = 0; i < 3; ++i) {
    Cable(i, "ens1f0", "leaf1", static_cast<int>(i) + 1);
    Cable(i, "ens2f0", "leaf2", static_cast<int>(i) + 1);
  }
  Go({2, 2, 2});
  const std::string inv = WriteInventory();
  CommandOutput text = Gpuforge("cabling " + inv);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find(" (6)\n"), std::string::npos) << text.output;  // one folded OK line
  EXPECT_NE(text.output.find("cabling: 6 designed, 6 OK"), std::string::npos) << text.output;
  CommandOutput js = Gpuforge("cabling " + inv + " --format json", "", Stderr::kDropped);
  EXPECT_EQ(js.exit_code, 0) << js.output;
  nlohmann::json doc;
  const auto states = States(js.output, &doc);
  ASSERT_EQ(states.size(), 6u) << js.output;
  for (const auto& [near, state] : states) EXPECT_EQ(state, "OK") << near;
  // The measured far ends: leaf1 by its port id (ifname), leaf2 by its DNS name's first label
  // and the port named in its description (its port id is a MAC).
  for (const auto& c : doc["cables"]) {
    EXPECT_EQ(c["actual"], c["expected"]) << c.dump();
    EXPECT_EQ(c["actual_gbps"], 10.0) << c.dump();  // the veth's /sys/class/net/IF/speed
  }
  for (const auto& r : doc["rails"]) EXPECT_TRUE(r["exceptions"].empty()) << r.dump();
}

TEST_F(CablingNetnsE2e, PlantedFaultsGetExactlyTheirVerdicts) {
  StartSwitch("leaf1", "leaf1", true);
  StartSwitch("leaf2", "leaf2.pod1.example.net", false);
  Cable(0, "ens1f0", "leaf1", 2);  // swapped with host 1's
  Cable(1, "ens1f0", "leaf1", 1);
  Cable(2, "ens1f0", "leaf2", 9);  // rail 0 NIC on the rail-1 leaf
  Cable(0, "ens2f0", "leaf2", 1);
  Cable(1, "ens2f0", "leaf2", 2, /*up=*/false);  // dark
  Cable(2, "ens2f0", "leaf2", 3);
  Cable(2, "ens3f0", "leaf1", 9);  // not in the design
  Go({2, 1, 3});
  const std::string inv = WriteInventory();
  const std::string h1 = tb_->hosts()[0].name, h2 = tb_->hosts()[1].name, h3 = tb_->hosts()[2].name;

  CommandOutput js = Gpuforge("cabling " + inv + " --format json", "", Stderr::kDropped);
  EXPECT_EQ(js.exit_code, 1) << js.output;
  nlohmann::json doc;
  const auto states = States(js.output, &doc);
  const std::map<std::string, std::string> want = {
      {h1 + ":ens1f0", "SWAPPED"}, {h2 + ":ens1f0", "SWAPPED"}, {h3 + ":ens1f0", "MISWIRED"},
      {h1 + ":ens2f0", "OK"},      {h2 + ":ens2f0", "MISSING"}, {h3 + ":ens2f0", "OK"},
      {h3 + ":ens3f0", "UNEXPECTED"}};
  EXPECT_EQ(states, want) << js.output;
  for (const auto& c : doc["cables"]) {
    if (c["near"] == h3 + ":ens1f0") {
      EXPECT_EQ(c["actual"], "leaf2:9") << c.dump();
    }
    if (c["near"] == h3 + ":ens3f0") {
      EXPECT_EQ(c["actual"], "leaf1:9") << c.dump();
    }
    if (c["near"] == h1 + ":ens1f0") {
      EXPECT_EQ(c["swap_with"], h2 + ":ens1f0") << c.dump();
    }
  }
  bool rail0 = false;
  for (const auto& r : doc["rails"]) {
    if (r["rail"] != 0) {
      EXPECT_TRUE(r["exceptions"].empty()) << r.dump();
      continue;
    }
    rail0 = true;
    ASSERT_EQ(r["exceptions"].size(), 1u) << r.dump();
    EXPECT_EQ(r["exceptions"][0]["near"], h3 + ":ens1f0");
    EXPECT_EQ(r["exceptions"][0]["leaf"], "leaf2");
  }
  EXPECT_TRUE(rail0) << js.output;

  // The text names the action for each.
  CommandOutput text = Gpuforge("cabling " + inv);
  EXPECT_EQ(text.exit_code, 1) << text.output;
  EXPECT_NE(text.output.find("swap the cables in leaf1:1 and leaf1:2"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find(fmt::format("move the cable at {}:ens1f0 from leaf2:9 to leaf1:3 (it is on a rail-1 "
                                         "leaf; this NIC is rail 0)",
                                         h3)),
            std::string::npos)
      << text.output;
  EXPECT_NE(text.output.find("no LLDP neighbour on this NIC"), std::string::npos) << text.output;

  // JUnit: four failures (two swapped, one miswired, one missing); the extra passes
  // with its finding unless --strict.
  CommandOutput junit = Gpuforge("cabling " + inv + " --format junit", "", Stderr::kDropped);
  EXPECT_NE(junit.output.find("failures=\"4\""), std::string::npos) << junit.output;
  CommandOutput strict = Gpuforge("cabling " + inv + " --format junit --strict", "", Stderr::kDropped);
  EXPECT_NE(strict.output.find("failures=\"5\""), std::string::npos) << strict.output;
}

}  // namespace
}  // namespace gpuforge::testbed
