// validate --isolate's pure parts (#32): the seed's parsing, each Isolator verdict as a validate
// Verdict, and the report's text and JSON, on a result built from a simulated run.

#include "gpuforge/validate/isolate_run.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/run_cli.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/report/isolate_report.h"

namespace gpuforge::validate {
namespace {

TEST(IsolateSeed, DecimalAndHexAndRefusals) {
  EXPECT_EQ(*ParseSeed("0"), 0u);
  EXPECT_EQ(*ParseSeed("2026"), 2026u);
  EXPECT_EQ(*ParseSeed("0x7ea"), 2026u);
  EXPECT_EQ(*ParseSeed("18446744073709551615"), 18446744073709551615ull);
  for (const char* bad : {"", "-1", "12a", "0x", "seed", " 5", "5 ", "1e3", "0x12g"}) {
    Result<std::uint64_t> r = ParseSeed(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--seed"), std::string::npos) << r.error().message;
  }
  Result<std::uint64_t> big = ParseSeed("18446744073709551616");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("2^64-1"), std::string::npos) << big.error().message;
}

// Eight nodes at 9.4 Gb/s; n2 slow everywhere; the path n0-n1 slow; the planner run to the end.
IsolationResult Simulated(std::uint64_t seed) {
  IsolationResult r;
  r.seed = seed;
  r.check = "tcp.bandwidth";
  r.unit = "Gb/s";
  r.network = "mgmt";
  r.floor = 5;
  r.floor_text = "5 Gb/s (50% of 10 Gb/s)";
  r.nodes = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"};
  isolate::Options o;
  o.seed = seed;
  o.floors = {5};
  isolate::Isolator iso(r.nodes.size(), o);
  while (auto wave = iso.Next()) {
    std::vector<isolate::Figures> f;
    for (const isolate::PairRun& p : *wave) {
      isolate::Figures x;
      x.ran = true;
      double v = 9.4;
      if (p.a == 2 || p.b == 2) v = 1.1;
      if ((p.a == 0 && p.b == 1) || (p.a == 1 && p.b == 0)) v = 0.9;
      x.values = {v};
      f.push_back(x);
    }
    iso.Record(f);
  }
  r.runs = iso.Runs();
  r.node_verdicts = iso.Verdicts();
  r.median = iso.Medians().front();
  r.rounds = iso.Rounds();
  r.waves = iso.Waves();
  for (std::size_t i = 0; i < r.nodes.size(); ++i) r.verdicts.push_back(IsolationVerdict(r, i));
  return r;
}

TEST(IsolateVerdicts, EachIsolatorVerdictIsAValidateVerdictWithItsCode) {
  // A seed whose round 1 pairs n0 with n1, so the slow path shows (the planner is seeded).
  std::uint64_t seed = 0;
  for (; seed < 200; ++seed) {
    isolate::Options o;
    o.seed = seed;
    isolate::Isolator iso(8, o);
    const auto first = iso.Next();
    bool paired = false;
    for (const auto& p : *first) paired = paired || (std::min(p.a, p.b) == 0 && std::max(p.a, p.b) == 1);
    if (paired) break;
  }
  ASSERT_LT(seed, 200u) << "no seed pairs n0 with n1 in round 1";
  const IsolationResult r = Simulated(seed);
  ASSERT_EQ(r.verdicts.size(), 8u);
  EXPECT_EQ(r.verdicts[2].code, "isolate.bad_node");
  EXPECT_EQ(r.verdicts[2].state, State::kFail);
  EXPECT_EQ(r.verdicts[2].check, "isolate.tcp.bandwidth");
  ASSERT_TRUE(r.verdicts[2].measured);
  EXPECT_DOUBLE_EQ(*r.verdicts[2].measured, 1.1);
  EXPECT_NE(r.verdicts[2].threshold.find("0.90 x the round-1 median"), std::string::npos) << r.verdicts[2].threshold;
  EXPECT_NE(r.verdicts[2].threshold.find("5 Gb/s (50% of 10 Gb/s)"), std::string::npos) << r.verdicts[2].threshold;
  EXPECT_EQ(r.verdicts[0].code, "isolate.bad_link");
  EXPECT_EQ(r.verdicts[0].entity, "link to n1");
  EXPECT_NE(r.verdicts[0].next_step.find("gpuforge cabling INVENTORY --nodes n0,n1"), std::string::npos)
      << r.verdicts[0].next_step;
  EXPECT_EQ(r.verdicts[1].entity, "link to n0");
  for (std::size_t i = 3; i < 8; ++i) {
    EXPECT_EQ(r.verdicts[i].state, State::kPass) << r.nodes[i] << ": " << r.verdicts[i].detail;
    EXPECT_TRUE(r.verdicts[i].code.empty());
  }

  // The text: the seed and how to repeat it, suspects with every run they were in, the good folded.
  const std::string text = report::IsolationText(r, report::Style{});
  EXPECT_NE(text.find(fmt::format("seed {} (--seed {} repeats the pairing)", seed, seed)), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL  n2  node  isolate.bad_node"), std::string::npos) << text;
  EXPECT_NE(text.find("FAIL  n0  link to n1  isolate.bad_link"), std::string::npos) << text;
  EXPECT_NE(text.find("round 1, wave 1, with n1: 0.9 Gb/s"), std::string::npos) << text;
  EXPECT_NE(text.find("round 3, wave"), std::string::npos) << text;
  EXPECT_NE(text.find("PASS  n[3-7] good (5 nodes)"), std::string::npos) << text;
  EXPECT_LT(text.find("isolate.bad_node"), text.find("PASS  n[3-7]")) << "suspects first: " << text;

  // The JSON: every run with its round and figures; every node with its verdict.
  const nlohmann::ordered_json j = report::IsolationJson(r);
  EXPECT_EQ(j["seed"], seed);
  EXPECT_EQ(j["runs"].size(), r.runs.size());
  EXPECT_EQ(j["nodes"][2]["verdict"], "bad node");
  EXPECT_EQ(j["nodes"][0]["partner"], "n1");
  EXPECT_EQ(j["floor"], 5.0);
  for (const auto& run : j["runs"]) {
    EXPECT_TRUE(run.contains("round") && run.contains("wave") && run.contains("value") && run.contains("ratio"));
  }
}

TEST(IsolateVerdicts, NotJudgedAndCouldNotRunAreNeverAPass) {
  IsolationResult r;
  r.check = "tcp.bandwidth";
  r.unit = "Gb/s";
  r.nodes = {"a", "b"};
  isolate::Options o;  // two nodes, no floor: no rule can judge
  isolate::Isolator iso(2, o);
  while (auto wave = iso.Next()) {
    std::vector<isolate::Figures> f(wave->size());
    for (isolate::Figures& x : f) {
      x.values = {std::nullopt};
      x.why = "b: tcp.timeout nothing on the socket";
      x.blamed = 1;
    }
    iso.Record(f);
  }
  r.runs = iso.Runs();
  r.node_verdicts = iso.Verdicts();
  for (std::size_t i = 0; i < 2; ++i) r.verdicts.push_back(IsolationVerdict(r, i));
  for (const Verdict& v : r.verdicts) EXPECT_NE(v.state, State::kPass) << v.node << " " << v.code;
  EXPECT_EQ(r.verdicts[1].code, "isolate.could_not_run") << r.verdicts[1].detail;
  const std::string text = report::IsolationText(r, report::Style{});
  EXPECT_NE(text.find("did not run"), std::string::npos) << text;
  EXPECT_NE(text.find("no absolute floor"), std::string::npos) << text;
}


// Two leaves of eight nodes, and an out-of-band switch every node hangs off. Slow paths whose
// ends share a leaf (a bad uplink would make them) get a note naming that leaf; one slow path,
// or a switch every node is on, does not.
TEST(IsolateVerdicts, BadLinksSharingALeafGetANoteNamingIt) {
  std::string inv = R"Y(version: 1
cluster: {name: leaves}
profiles:
  n:
    cpu: {sockets: 1, cores_per_socket: 8}
    nics:
      - {name: eth0, kind: ethernet, rate: 10Gb/s, network: oob}
      - {name: eth1, kind: ethernet, rate: 100Gb/s, network: fab}
networks:
  oob: {role: control, kind: ethernet, rate: 10Gb/s}
  fab: {role: compute, kind: ethernet, rate: 100Gb/s}
software:
  os: {distro: debian}
switches:
  - {name: "leaf[1-2]", tier: leaf, network: fab, ports: 32, port_rate: 100Gb/s}
  - {name: oob, tier: leaf, network: oob, ports: 32, port_rate: 10Gb/s}
nodes:
  - {name: "n[01-16]", profile: n, address: "198.18.2.[1-16]"}
links:
)Y";
  for (int i = 1; i <= 16; ++i) {
    inv += fmt::format("  - {{from: \"n{:02}:eth1\", to: \"leaf{}:{}\"}}\n", i, i <= 8 ? 1 : 2, i);
    inv += fmt::format("  - {{from: \"n{:02}:eth0\", to: \"oob:{}\"}}\n", i, i);
  }
  inventory::LoadOutcome loaded = inventory::LoadString(inv, "leaves.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
  const model::Cluster& c = *loaded.cluster;
  std::vector<std::string> names;
  for (const model::Node& n : c.nodes) names.push_back(n.name);
  IsolationMeasure m;
  m.check = "tcp.bandwidth";
  m.names = {"the pair"};
  m.floors = {0};
  m.nodes = names;
  m.runs = [](const model::Node& a, const model::Node& b) {
    PlannedRun run;
    run.check = "tcp.bandwidth";
    run.node = a.name;
    run.peer = b.name;
    return std::vector<std::pair<int, PlannedRun>>{{0, run}};
  };
  // Round 1's pairs across the two leaves, for this seed.
  const std::uint64_t seed = 3;
  isolate::Options io;
  io.seed = seed;
  isolate::Isolator plan(names.size(), io);
  std::vector<std::pair<std::string, std::string>> across;
  const std::optional<std::vector<isolate::PairRun>> first = plan.Next();
  ASSERT_TRUE(first);
  for (const isolate::PairRun& p : *first) {
    if ((p.a < 8) != (p.b < 8)) across.emplace_back(names[p.a], names[p.b]);
  }
  ASSERT_GE(across.size(), 2u) << "seed " << seed << " pairs too few nodes across the leaves";
  const auto run_with = [&](std::size_t slow) {
    return Isolate(c, m, names, [&](const PlannedRun& run) {
      Verdict v;
      v.check = run.check;
      v.node = run.node;
      v.state = State::kPass;
      bool low = false;
      for (std::size_t k = 0; k < slow; ++k) {
        low = low || std::minmax(run.node, run.peer) == std::minmax(across[k].first, across[k].second);
      }
      v.measured = low ? 40.0 : 94.0;
      return std::vector<Verdict>{v};
    }, IsolateRunOptions{.seed = seed});
  };
  const IsolationResult two = run_with(2);
  std::string notes;
  for (const std::string& n : two.notes) notes += n + "\n";
  EXPECT_NE(notes.find("2 of the 2 suspect links have an end on leaf1"), std::string::npos) << notes;
  EXPECT_NE(notes.find("which 8 of the 16 nodes hang off"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("on oob"), std::string::npos) << "every node is on oob: " << notes;
  EXPECT_NE(report::IsolationText(two, report::Style{}).find("note: 2 of the 2 suspect links"), std::string::npos);
  for (const IsolationResult& one : {run_with(1), run_with(0)}) {
    for (const std::string& n : one.notes) EXPECT_EQ(n.find("suspect links"), std::string::npos) << n;
  }
}

}  // namespace
}  // namespace gpuforge::validate

namespace gpuforge::cli {
namespace {

using test_support::RunCli;

// What --isolate refuses before any node is touched (exit 2, naming the flag).
TEST(IsolateCli, RefusesBadSeedsOtherChecksAndFlagsItDoesNotTake) {
  const std::string inv = std::string(GPUFORGE_SOURCE_DIR) + "/inventories/examples/h200-ib-32gpu.yaml";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--isolate", "--seed", "abc"}, "--seed abc: not a number"},
      {{"--isolate", "--seed", "99999999999999999999999"}, "larger than 2^64-1"},
      {{"--seed", "5"}, "--seed orders the pairs of --isolate"},
      {{"--isolate", "--checks", "gpu"}, "--isolate runs rdma.write_bw or rdma.write_lat (per rail), nccl.multinode (2-node all-reduce) or tcp.bandwidth pairs; --checks gpu is not one of them"},
      {{"--isolate", "--checks", "nccl,rdma"}, "--isolate runs one measure"},
      {{"--isolate", "--checks", "rdma,tcp"}, "--isolate runs one measure"},
      {{"--isolate", "--health", "--local"}, "--isolate writes its own report"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"validate", inv};
    args.insert(args.end(), c.args.begin(), c.args.end());
    test_support::RunResult r = RunCli(args);
    EXPECT_EQ(r.code, 2) << c.says << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace gpuforge::cli
