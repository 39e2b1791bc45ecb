// `gpuforge validate --isolate` (#32) on eight test hosts in their own network namespaces,
// cabled to one Linux bridge in a namespace of its own (the "switch"). Real sshd, the agent
// pushed by validate, real TCP between the hosts. Every port is shaped with tc HTB to 400 Mbit/s
// both ways (so that this machine's two cores never set the figure); one node's every port to
// 40 Mbit/s (a slow node), and the path between two other nodes to 40 Mbit/s in both
// directions by a u32 filter on their addresses (a slow link; each of the two is fine with
// anyone else). The run must call the first a bad node, the two ends of the second a bad link
// naming each other, and every other node good, on each seed tried.
//
// A slow path between two nodes shows only in a run that pairs them, and round 1 pairs each
// node once: the test asks the planner (pure) which pairs the seed makes in round 1 and slows
// the path of one of them, as a real bad path is found when the rounds happen to pair its ends
// (docs/validate.md#isolation says so).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "gpuforge/validate/isolate.h"
#include "testbed/fixture.h"

namespace gpuforge::validate {
namespace {

constexpr int kHosts = 8;

class IsolateNetnsE2e : public testbed::TestbedTest {
 protected:
  void SetUp() override {
    std::string why;
    if (!testbed::Available(&why)) GTEST_SKIP() << why;
    testbed::Options o;
    o.hosts = kHosts;
    o.netns = true;
    if (!Bring(o)) return;
    bridge_ = fmt::format("gfiso-{}", ::getpid());
    Sh(fmt::format("ip netns add {0} && ip -n {0} link set lo up && ip -n {0} link add br0 type bridge && "
                   "ip -n {0} link set br0 up",
                   bridge_));
    for (int i = 0; i < kHosts; ++i) {
      const testbed::Host& h = tb_->hosts()[static_cast<std::size_t>(i)];
      // The host's end is fab0, without an address: a /32 route per other host's SSH address
      // sends host-to-host traffic over the bridge, while SSH from this machine keeps eth0.
      std::string routes;
      for (const testbed::Host& other : tb_->hosts()) {
        if (other.name != h.name) routes += fmt::format(" && ip route add {}/32 dev fab0", other.address);
      }
      Sh(fmt::format("ip -n {0} link add gfi{1} type veth peer name fab0 netns {2} && ip -n {0} link set gfi{1} master br0 "
                     "&& ip -n {0} link set gfi{1} up && nsenter -t {2} -n sh -c 'ip link set fab0 up{3}'",
                     bridge_, i, h.pid, routes));
    }
  }

  void TearDown() override {
    if (!bridge_.empty()) (void)testbed::RunCommand({"ip", "netns", "del", bridge_});
  }

  // Runs a command on this machine as root; it must succeed.
  void Sh(const std::string& cmd) {
    Result<testbed::CommandOutput> r = testbed::RunCommand({"sh", "-c", cmd + " 2>&1"});
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->exit_code, 0) << cmd << "\n" << r->output;
  }

  // HTB on one interface: everything at `rate`, and what `match` (a u32 selector) names at
  // 40 Mbit/s. `where` runs the tc command in the right namespace.
  std::string Shape(const std::string& where, const std::string& dev, const std::string& rate,
                    const std::string& match) {
    std::string cmd = fmt::format(
        "{0} tc qdisc del dev {1} root 2>/dev/null; {0} tc qdisc add dev {1} root handle 1: htb default 10 && "
        "{0} tc class add dev {1} parent 1: classid 1:10 htb rate {2} ceil {2}",
        where, dev, rate);
    if (!match.empty()) {
      cmd += fmt::format(
          " && {0} tc class add dev {1} parent 1: classid 1:20 htb rate 40mbit ceil 40mbit && "
          "{0} tc filter add dev {1} parent 1: protocol ip prio 1 u32 match ip {2} flowid 1:20",
          where, dev, match);
    }
    return cmd;
  }

  // Node `slow` at 40 Mbit/s on every port; the path between `a` and `b` at 40 Mbit/s; the rest at 400.
  void ShapeFabric(int slow, int a, int b) {
    for (int i = 0; i < kHosts; ++i) {
      const testbed::Host& h = tb_->hosts()[static_cast<std::size_t>(i)];
      const std::string rate = i == slow ? "40mbit" : "400mbit";
      std::string to, from;  // the link's far end: by destination leaving the host, by source entering it
      if (i == a || i == b) {
        const std::string& far = tb_->hosts()[static_cast<std::size_t>(i == a ? b : a)].address;
        to = "dst " + far + "/32";
        from = "src " + far + "/32";
      }
      Sh(Shape(fmt::format("nsenter -t {} -n", h.pid), "fab0", rate, to));
      Sh(Shape("ip netns exec " + bridge_, fmt::format("gfi{}", i), rate, from));
    }
  }

  std::string bridge_;
};

TEST_F(IsolateNetnsE2e, NamesTheSlowNodeAsANodeAndTheSlowLinkAsALinkOnEverySeed) {
  if (!tb_) return;
  std::string inv = Inventory();
  const std::string net = "testbed: {role: compute, kind: ethernet, rate: 10Gb/s}";
  ASSERT_NE(inv.find(net), std::string::npos) << inv;
  inv.replace(inv.find(net), net.size(), "testbed: {role: control, kind: ethernet, rate: 400Mb/s}");
  // The absolute floor at a quarter of the shaped rate, 100 Mbit/s: the slow paths run at 40, the
  // others at 290-370 here and 170 with this machine busy (4 MiB transfers, a failed run), so
  // the floor keeps clear of both.
  inv += "\nvalidation:\n  thresholds:\n    tcp.bandwidth.min_fraction: 0.25\n";
  const std::string path = WriteFile("isolate.yaml", inv);

  for (std::uint64_t seed : {1u, 7u, 2026u}) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    // Round 1 as the run will plan it: the nodes in inventory order, this seed.
    isolate::Options io;
    io.seed = seed;
    isolate::Isolator plan(kHosts, io);
    std::optional<std::vector<isolate::PairRun>> first = plan.Next();
    ASSERT_TRUE(first && first->size() == kHosts / 2);
    const int slow = (*first)[0].a;
    const int link_a = (*first)[1].a, link_b = (*first)[1].b;
    ShapeFabric(slow, link_a, link_b);

    testbed::CommandOutput run = Gpuforge(
        fmt::format("validate {} --isolate --seed {} --param tcp.bandwidth.bytes=8MiB --format json --report {}.{}.html",
                    path, seed, path, seed),
        "", testbed::Stderr::kDropped);
    ASSERT_EQ(run.exit_code, 1) << run.output;
    {
      // The acceptance report has the pair matrix, with the slow node's runs low.
      std::ifstream in(fmt::format("{}.{}.html", path, seed));
      const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_NE(html.find("<figure class=\"pairmatrix\">"), std::string::npos) << html.size();
      EXPECT_NE(html.find(fmt::format("<rect class=\"cell low\" data-a=\"{}\"",
                                      tb_->hosts()[static_cast<std::size_t>(slow)].name)),
                std::string::npos);
    }
    nlohmann::json j = nlohmann::json::parse(run.output, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << run.output;
    const nlohmann::json& iso = j["isolation"];
    EXPECT_EQ(iso["seed"], seed);
    ASSERT_EQ(iso["nodes"].size(), static_cast<std::size_t>(kHosts)) << iso.dump(1);
    const auto name = [&](int i) { return tb_->hosts()[static_cast<std::size_t>(i)].name; };
    for (const nlohmann::json& n : iso["nodes"]) {
      const std::string node = n["node"];
      if (node == name(slow)) {
        EXPECT_EQ(n["verdict"], "bad node") << iso.dump(1);
      } else if (node == name(link_a) || node == name(link_b)) {
        EXPECT_EQ(n["verdict"], "bad link") << iso.dump(1);
        EXPECT_EQ(n["partner"], node == name(link_a) ? name(link_b) : name(link_a)) << iso.dump(1);
      } else {
        EXPECT_EQ(n["verdict"], "good") << node << "\n" << iso.dump(1);
      }
    }
    // Every pair run is in the JSON with its round, and round 1 was the seed's pairing.
    std::set<std::pair<std::string, std::string>> round1;
    for (const nlohmann::json& r : iso["runs"]) {
      EXPECT_TRUE(r["ran"].get<bool>()) << r.dump();
      if (r["round"] == 1) round1.insert({r["a"].get<std::string>(), r["b"].get<std::string>()});
    }
    for (const isolate::PairRun& p : *first) EXPECT_TRUE(round1.count({name(p.a), name(p.b)})) << name(p.a);
    // The verdicts are validate's: the bad node and both ends of the link FAIL with their codes.
    int failed = 0;
    for (const nlohmann::json& r : j["results"]) {
      if (r["state"] != "FAIL") continue;
      ++failed;
      EXPECT_TRUE(r["code"] == "isolate.bad_node" || r["code"] == "isolate.bad_link") << r.dump();
    }
    EXPECT_EQ(failed, 3) << j.dump(1);
  }

  // A path that carries nothing at all: blackhole routes between two nodes both ways, every port
  // at full rate. Each pair run between them ends without a byte (the client cannot connect, the
  // server waits out --timeout); neither node failed on its own, so that is a zero figure, not a
  // node to blame, and the rounds call it a bad link.
  {
    const std::uint64_t seed = 7;
    SCOPED_TRACE("a dead path, seed 7");
    isolate::Options io;
    io.seed = seed;
    isolate::Isolator plan(kHosts, io);
    const std::optional<std::vector<isolate::PairRun>> first = plan.Next();
    ASSERT_TRUE(first);
    const int a = (*first)[2].a, b = (*first)[2].b;
    ShapeFabric(-1, -1, -1);
    const testbed::Host& ha = tb_->hosts()[static_cast<std::size_t>(a)];
    const testbed::Host& hb = tb_->hosts()[static_cast<std::size_t>(b)];
    Sh(fmt::format("nsenter -t {} -n ip route replace blackhole {}/32 && nsenter -t {} -n ip route replace blackhole {}/32",
                   ha.pid, hb.address, hb.pid, ha.address));
    testbed::CommandOutput run = Gpuforge(
        fmt::format("validate {} --isolate --seed {} --timeout 10 --param tcp.bandwidth.bytes=8MiB --format json", path,
                    seed),
        "", testbed::Stderr::kDropped);
    ASSERT_EQ(run.exit_code, 1) << run.output;
    nlohmann::json j = nlohmann::json::parse(run.output, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << run.output;
    const nlohmann::json& iso = j["isolation"];
    for (const nlohmann::json& n : iso["nodes"]) {
      const std::string node = n["node"];
      if (node == ha.name || node == hb.name) {
        EXPECT_EQ(n["verdict"], "bad link") << iso.dump(1);
        EXPECT_EQ(n["partner"], node == ha.name ? hb.name : ha.name) << iso.dump(1);
      } else {
        EXPECT_EQ(n["verdict"], "good") << node << "\n" << iso.dump(1);
      }
    }
    int zero = 0;
    for (const nlohmann::json& r : iso["runs"]) {
      if (r["value"] == 0.0) {
        ++zero;
        EXPECT_NE(r["why"].get<std::string>().find("nothing crossed between"), std::string::npos) << r.dump();
      }
    }
    EXPECT_EQ(zero, 3) << "round 1 and two tries in round 3: " << iso.dump(1);
  }

  // NCCL pairs (--checks nccl) through the real agents, on hosts that cannot run CUDA: each pair
  // is a 2-node nccl.multinode group run, both agents SKIP with their own reason, so no node is
  // judged, none is good, and the run says so (exit 2) instead of passing what did not run.
  {
    SCOPED_TRACE("NCCL pairs without CUDA");
    std::string gpus = inv;
    const std::string cpu = "    cpu: {sockets: 1";
    ASSERT_NE(gpus.find(cpu), std::string::npos) << gpus;
    gpus.insert(gpus.find(cpu), "    gpus: {model: H200, count: 1}\n");
    const std::string gpu_path = WriteFile("isolate-nccl.yaml", gpus);
    testbed::CommandOutput run =
        Gpuforge(fmt::format("validate {} --isolate --checks nccl --seed 5 --timeout 60 --format json", gpu_path), "",
                 testbed::Stderr::kDropped);
    ASSERT_EQ(run.exit_code, 2) << run.output;
    nlohmann::json j = nlohmann::json::parse(run.output, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << run.output;
    const nlohmann::json& iso = j["isolation"];
    EXPECT_EQ(iso["check"], "nccl.multinode") << iso.dump(1);
    ASSERT_EQ(iso["nodes"].size(), static_cast<std::size_t>(kHosts)) << iso.dump(1);
    for (const nlohmann::json& n : iso["nodes"]) EXPECT_NE(n["verdict"], "good") << iso.dump(1);
    ASSERT_FALSE(iso["runs"].empty());
    for (const nlohmann::json& r : iso["runs"]) {
      EXPECT_FALSE(r["ran"].get<bool>()) << r.dump();
      const std::string why = r["why"];
      EXPECT_TRUE(why.find("gpu.") != std::string::npos || why.find("nccl.") != std::string::npos) << r.dump();
    }
    for (const nlohmann::json& r : j["results"]) EXPECT_NE(r["state"], "PASS") << r.dump();
  }
}

}  // namespace
}  // namespace gpuforge::validate
