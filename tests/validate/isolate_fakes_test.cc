// validate --isolate's per-rail RDMA path on the fake verbs fabric (#32). Eight nodes with four
// rails each; the plan is validate's own (SetUpRun, PlanRun, PlanIsolationMeasure from an
// inventory with a rail-optimised cabling table), and every pair run is the real rdma.write_bw
// probe pair (server and client in two threads: perftest's QP state machine, its arithmetic)
// on devices "NODE-mlx5_K" of one fake fabric with rates, judged by validate's JudgeRdma, then
// the isolation's rounds. g05's rail 2 runs at a quarter of line rate, g03's rail 0 port is
// down. The figures come from the fake fabric's clock, so this proves the planning, the
// probes' plumbing, the judging and the rounds; it is not RDMA hardware (docs/validate.md).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/report/html_report.h"
#include "gpuforge/report/isolate_report.h"
#include "gpuforge/report/style.h"
#include "gpuforge/validate/isolate.h"
#include "gpuforge/validate/isolate_run.h"
#include "gpuforge/validate/prepare.h"
#include "validate/isolate_measure.h"
#include "probe/fake_verbs.h"
#include "probe/rdma/write.h"
#include "report/consumers.h"

#if GPUFORGE_HAVE_IBVERBS

namespace gpuforge::validate {
namespace {

namespace pi = probe::internal;

constexpr int kNodes = 8;
constexpr int kRails = 4;

std::string Inventory() {
  std::string inv = R"Y(version: 1
cluster: {name: rails}
profiles:
  h200:
    gpus: {model: H200, count: 8}
    cpu: {sockets: 2, cores_per_socket: 32}
    nics:
      - {name: "mlx5_[0-3]", kind: infiniband, rate: 400Gb/s, network: ib}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s, topology: fat-tree}
software:
  os: {distro: debian}
switches:
  - {name: "rail[0-3]", tier: leaf, network: ib, model: QM9700, ports: 64, port_rate: 400Gb/s}
nodes:
  - {name: "g0[1-8]", profile: h200, address: "198.18.1.[1-8]"}
links:
)Y";
  // Rail-optimised: rail k of node n on switch "rail k", port n.
  for (int n = 1; n <= kNodes; ++n) {
    for (int k = 0; k < kRails; ++k) inv += fmt::format("  - {{from: \"g0{}:mlx5_{}\", to: \"rail{}:{}\"}}\n", n, k, k, n);
  }
  return inv;
}

class IsolateOnFakeVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    inventory::LoadOutcome loaded = inventory::LoadString(Inventory(), "rails.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
    cluster_ = std::move(*loaded.cluster);
    for (int n = 1; n <= kNodes; ++n) {
      for (int k = 0; k < kRails; ++k) {
        const std::string dev = fmt::format("g0{}-mlx5_{}", n, k);
        fabric_.Add(dev, static_cast<uint16_t>(n * 16 + k));
        fabric_.gbits[dev] = 400;
      }
    }
    api_ = fabric_.Api();
  }

  // The measure validate --isolate plans for the selected nodes (rdma.write_bw, small writes
  // so a run takes milliseconds).
  IsolationMeasure Measure(const std::vector<std::string>& params = {"rdma.write_bw.size=64KiB",
                                                                     "rdma.write_bw.iters=40"}) {
    return PlanMeasureForTest(cluster_, "rdma.write_bw", params, &thresholds_);
  }

  std::vector<std::string> Names() const { return NodeNames(cluster_); }

  // The isolation's rounds over every node on `seed`, each pair run by Run below.
  IsolationResult Rounds(const IsolationMeasure& m, std::uint64_t seed) {
    IsolateRunOptions o;
    o.seed = seed;
    return Isolate(cluster_, m, Names(), [this](const PlannedRun& run) { return Run(run); }, o);
  }

  // One planned run, as the agent pair would: the server on the peer's device, the client
  // on the node's, both probes in this process, the client's clock the fabric's for its device.
  std::vector<Verdict> Run(const PlannedRun& run) {
    std::map<std::string, std::string> cp = run.params, sp = run.peer_params;
    cp["device"] = run.node + "-" + cp.at("device");
    sp["device"] = run.peer + "-" + sp.at("device");
    for (const auto& [k, v] : run.params) {
      if (k == "size" || k == "iters") sp[k] = v;
    }
    std::shared_ptr<pi::VerbsApi> api = api_;
    const pi::VerbsLoader loader = [api] { return pi::VerbsLoad{api, "", ""}; };
    const pi::CudaLoader no_cuda = [] { return pi::CudaLoad{nullptr, "gpu.no_cuda_driver", "no CUDA here"}; };
    pi::RdmaTestHooks hooks;
    hooks.clock = fabric_.DeviceClock(cp["device"]);
    const bool lat = run.check == "rdma.write_lat";
    auto server = lat ? pi::MakeRdmaWriteLatProbe(loader) : pi::MakeRdmaWriteBwProbe(loader, no_cuda);
    auto client = lat ? pi::MakeRdmaWriteLatProbe(loader, hooks) : pi::MakeRdmaWriteBwProbe(loader, no_cuda, hooks);
    // The defaults filled in and the words checked, as the agent does before it runs a probe.
    Result<std::map<std::string, std::string>> rs = probe::ResolveParams(*server, sp);
    Result<std::map<std::string, std::string>> rc = probe::ResolveParams(*client, cp);
    EXPECT_TRUE(rs.ok() && rc.ok());
    if (!rs.ok() || !rc.ok()) return {};
    pi::TwoWay x;
    auto [s, c] = pi::RunPair(*server, *rs, *client, *rc, x);
    {
      std::lock_guard l(mu_);
      ++runs_;
      devices_used_.insert(cp["device"]);
      devices_used_.insert(sp["device"]);
    }
    std::vector<Verdict> out = Judge(cluster_, thresholds_, run, c);
    if (s.outcome != probe::Outcome::kOk) {
      // The server's own failure, for its node (RunPair's blame does this on real nodes).
      PlannedRun side = run;
      side.node = run.peer;
      side.entity = sp["device"];
      out.push_back(Judge(cluster_, thresholds_, side, s).front());
    }
    return out;
  }

  model::Cluster cluster_;
  Thresholds thresholds_;
  pi::Fabric fabric_;
  std::shared_ptr<pi::VerbsApi> api_;
  std::mutex mu_;
  int runs_ = 0;
  std::set<std::string> devices_used_;
};

std::size_t Count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

const Verdict* Of(const IsolationResult& r, const std::string& node) {
  for (const Verdict& v : r.verdicts) {
    if (v.node == node) return &v;
  }
  return nullptr;
}

TEST_F(IsolateOnFakeVerbs, TheMeasureIsPerRailWithTheRailsFloorsFromTheInventory) {
  const IsolationMeasure m = Measure();
  EXPECT_EQ(m.check, "rdma.write_bw");
  EXPECT_EQ(m.network, "ib");
  EXPECT_EQ(m.names, (std::vector<std::string>{"the sum of rails", "rail 0 (mlx5_0)", "rail 1 (mlx5_1)",
                                               "rail 2 (mlx5_2)", "rail 3 (mlx5_3)"}));
  ASSERT_EQ(m.floors.size(), 5u);
  EXPECT_EQ(m.floors[0], 0);
  EXPECT_DOUBLE_EQ(m.floors[3], 0.8 * 400);  // rdma.write.min_fraction x the HCA's rate
  EXPECT_EQ(m.nodes.size(), 8u);
  const auto runs = m.runs(*cluster_.FindNode("g02"), *cluster_.FindNode("g07"));
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[2].first, 3);  // rail 2 is measure 3
  EXPECT_EQ(runs[2].second.node, "g02");
  EXPECT_EQ(runs[2].second.peer, "g07");
  EXPECT_EQ(runs[2].second.params.at("device"), "mlx5_2");
  EXPECT_EQ(runs[2].second.peer_params.at("device"), "mlx5_2");
  EXPECT_EQ(runs[2].second.params.at("size"), "64KiB") << "--param reaches the isolation's runs";
}

TEST_F(IsolateOnFakeVerbs, ASlowRailAndADownPortAreNamedAsRailsWithTheirCablesOnEverySeed) {
  fabric_.gbits["g05-mlx5_2"] = 100;                      // a quarter of line rate
  fabric_.Dev("g03-mlx5_0")->port.state = IBV_PORT_DOWN;  // carries nothing
  const IsolationMeasure m = Measure();
  for (const std::uint64_t seed : {1ULL, 7ULL, 2026ULL}) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const IsolationResult r = Rounds(m, seed);
    ASSERT_EQ(r.verdicts.size(), 8u);
    ASSERT_EQ(r.medians.size(), 5u);
    ASSERT_TRUE(r.medians[1].has_value());
    EXPECT_NEAR(*r.medians[1], 400, 1) << "the fabric's rate, measured through the probe's arithmetic";

    const Verdict* slow = Of(r, "g05");
    ASSERT_NE(slow, nullptr);
    EXPECT_EQ(slow->code, "isolate.bad_rail") << slow->detail;
    EXPECT_EQ(slow->entity, "rail 2 (mlx5_2)");
    EXPECT_NE(slow->detail.find("its cable: g05:mlx5_2 to rail2:5 (rails.yaml:"), std::string::npos) << slow->detail;
    ASSERT_TRUE(slow->measured.has_value());
    EXPECT_NEAR(*slow->measured, 100, 1);
    EXPECT_NE(slow->threshold.find("on rail 2 (mlx5_2)"), std::string::npos) << slow->threshold;

    const Verdict* down = Of(r, "g03");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->code, "isolate.bad_rail") << down->detail;
    EXPECT_EQ(down->entity, "rail 0 (mlx5_0)");
    EXPECT_NE(down->detail.find("rail0:3"), std::string::npos) << down->detail;

    for (const char* good : {"g01", "g02", "g04", "g06", "g07", "g08"}) {
      const Verdict* v = Of(r, good);
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(v->state, State::kPass) << good << ": " << v->code << " " << v->detail;
    }
    // The evidence in the text: the low rail of each of the suspect's runs, and its cable.
    const std::string text = report::IsolationText(r, report::Style{});
    EXPECT_NE(text.find("measured per rail"), std::string::npos) << text;
    EXPECT_NE(text.find("rail 2 (mlx5_2) 100 Gb/s, 0.25 x median"), std::string::npos) << text;
    EXPECT_NE(text.find("rdma.port_down"), std::string::npos) << "the down port's reason is shown: " << text;
    const nlohmann::ordered_json j = report::IsolationJson(r);
    EXPECT_EQ(j["measures"].size(), 5u);
    EXPECT_EQ(j["runs"][0]["values"].size(), 5u);
    // The report's rail map: the two bad rails are its only red cells.
    const report::RunInfo info{"rails", "rails.yaml", std::chrono::system_clock::now(), 0, false};
    const std::string html = report::ValidateHtml(info, cluster_, r.verdicts, std::nullopt, &r);
    EXPECT_EQ(Count(html, "<rect class=\"cell low\" data-node="), 2u);
    EXPECT_EQ(Count(html, "<rect class=\"cell low\" data-node=\"g05\" data-rail=\"2\""), 1u);
    EXPECT_EQ(Count(html, "<rect class=\"cell low\" data-node=\"g03\" data-rail=\"0\""), 1u);
  }
  EXPECT_GT(runs_, 0);
  EXPECT_EQ(devices_used_.size(), static_cast<std::size_t>(kNodes * kRails)) << "every rail of every node ran";
}

// --checks rdma.write_lat: ib_write_lat's ping-pong per rail on the same fake fabric, where a
// write takes its bytes at the slower end's rate, so the quarter-rate rail takes four times as
// long. Lower is better: the ceiling is rdma.write_lat.max_us, the relative rule median / 0.9,
// and the down port's rail a latency without end (never the best figure).
TEST_F(IsolateOnFakeVerbs, OnLatencyASlowRailAndADownPortAreNamedAsRailsAboveTheMedian) {
  fabric_.gbits["g05-mlx5_2"] = 100;
  fabric_.Dev("g03-mlx5_0")->port.state = IBV_PORT_DOWN;
  // 8 round trips: a wave's ping-pong threads spin in turn on two cores, a time slice a hop.
  const IsolationMeasure m = PlanMeasureForTest(cluster_, "rdma.write_lat", {"rdma.write_lat.iters=8"}, &thresholds_);
  ASSERT_TRUE(m.runs);
  EXPECT_EQ(m.check, "rdma.write_lat");
  EXPECT_TRUE(m.lower_is_better);
  EXPECT_EQ(m.unit, "us");
  EXPECT_EQ(m.names.front(), "the slowest rail");
  ASSERT_EQ(m.floors.size(), 5u);
  for (double f : m.floors) EXPECT_DOUBLE_EQ(f, 5.0) << "rdma.write_lat.max_us on every rail";
  for (const std::uint64_t seed : {1ULL, 7ULL, 2026ULL}) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const IsolationResult r = Rounds(m, seed);
    ASSERT_EQ(r.verdicts.size(), 8u);
    ASSERT_TRUE(r.medians[3].has_value());
    EXPECT_GT(*r.medians[3], 0);

    const Verdict* slow = Of(r, "g05");
    ASSERT_NE(slow, nullptr);
    EXPECT_EQ(slow->code, "isolate.bad_rail") << slow->detail;
    EXPECT_EQ(slow->entity, "rail 2 (mlx5_2)");
    EXPECT_NE(slow->detail.find("slow with 2 different known-good nodes"), std::string::npos) << slow->detail;
    EXPECT_NE(slow->detail.find("its cable: g05:mlx5_2 to rail2:5"), std::string::npos) << slow->detail;
    ASSERT_TRUE(slow->measured.has_value());
    EXPECT_NEAR(*slow->measured / *r.medians[3], 4, 0.05) << "a quarter of the rate, four times the time";
    EXPECT_NE(slow->detail.find("slowest run 4.00 x the median latency"), std::string::npos) << slow->detail;
    EXPECT_NE(slow->threshold.find("<= 1.11 x the round-1 median"), std::string::npos) << slow->threshold;
    EXPECT_NE(slow->threshold.find("<= 5 us"), std::string::npos) << slow->threshold;
    EXPECT_NE(slow->threshold.find("rdma.write_lat.max_us"), std::string::npos) << slow->threshold;

    const Verdict* down = Of(r, "g03");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->code, "isolate.bad_rail") << down->detail;
    EXPECT_EQ(down->entity, "rail 0 (mlx5_0)");

    for (const char* good : {"g01", "g02", "g04", "g06", "g07", "g08"}) {
      const Verdict* v = Of(r, good);
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(v->state, State::kPass) << good << ": " << v->code << " " << v->detail;
      // Its slowest run, with whom: a round-1 partner of g03 saw no reply on g03's rail 0.
      EXPECT_TRUE(v->detail.find("x the median latency (with g") != std::string::npos ||
                  v->detail.find("no reply at all (with g03)") != std::string::npos)
          << v->detail;
    }
    const std::string text = report::IsolationText(r, report::Style{});
    EXPECT_NE(text.find("suspect above 1.11 x the round-1 median of the rail or of the slowest rail, or above the "
                        "rail's ceiling"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("4.00 x median"), std::string::npos) << "the slow rail's runs, as figure / median: " << text;
    EXPECT_NE(text.find("SLOW"), std::string::npos) << text;
    const nlohmann::ordered_json j = report::IsolationJson(r);
    EXPECT_EQ(j["lower_is_better"], true);
    // The down rail's +inf goes out as null (JSON has no infinity), and the text parses back.
    nlohmann::json back;
    EXPECT_NO_THROW(back = nlohmann::json::parse(j.dump()));
    EXPECT_EQ(back["lower_is_better"], true);
    bool null_rail = false;
    for (const auto& run : back["runs"]) null_rail |= (run["a"] == "g03" || run["b"] == "g03") && run["values"][1].is_null();
    EXPECT_TRUE(null_rail);
    const report::RunInfo info{"rails", "rails.yaml", std::chrono::system_clock::now(), 0, false};
    const std::string html = report::ValidateHtml(info, cluster_, r.verdicts, std::nullopt, &r);
    EXPECT_EQ(Count(html, "<rect class=\"cell low\" data-node="), 2u) << "the two bad rails, and only they";
    EXPECT_EQ(Count(html, "<rect class=\"cell low\" data-node=\"g05\" data-rail=\"2\""), 1u);
    EXPECT_EQ(Count(html, "<rect class=\"cell low\" data-node=\"g03\" data-rail=\"0\""), 1u);
  }
}

// The acceptance report's pair matrix and rail map: the slow rail's cell is the one low cell of
// its column, and Chromium (the consumer) parses and draws it with nothing refused.
TEST_F(IsolateOnFakeVerbs, TheReportDrawsThePairMatrixAndTheRailMapWithTheBadRailLow) {
  fabric_.gbits["g05-mlx5_2"] = 100;
  const IsolationMeasure m = Measure();
  const IsolationResult r = Rounds(m, 2026);
  const report::RunInfo info{"rails", "rails.yaml", std::chrono::system_clock::now(), 0, false};
  const std::string html = report::ValidateHtml(info, cluster_, r.verdicts, std::nullopt, &r);
  ASSERT_NE(html.find("<section id=\"isolation\">"), std::string::npos);
  const std::size_t rails_at = html.find("<figure class=\"railmatrix\">");
  ASSERT_NE(rails_at, std::string::npos);
  const std::string rails = html.substr(rails_at, html.find("</figure>", rails_at) - rails_at);
  EXPECT_EQ(Count(rails, "<rect class=\"cell"), 8u * 4u) << "every node, every rail";
  EXPECT_EQ(Count(rails, "<rect class=\"cell low\""), 1u) << rails;
  EXPECT_NE(rails.find("<rect class=\"cell low\" data-node=\"g05\" data-rail=\"2\""), std::string::npos) << rails;
  const std::size_t pairs_at = html.find("<figure class=\"pairmatrix\">");
  ASSERT_NE(pairs_at, std::string::npos);
  const std::string pairs = html.substr(pairs_at, html.find("</figure>", pairs_at) - pairs_at);
  // Each run is drawn both ways; g05, the suspect, is drawn first.
  std::set<std::pair<int, int>> ran_together;
  for (const auto& k : r.runs) ran_together.insert(std::minmax(k.run.a, k.run.b));
  EXPECT_EQ(Count(pairs, "<rect class=\"cell"), 2 * ran_together.size());
  EXPECT_LT(pairs.find(">g05</text>"), pairs.find(">g01</text>")) << "suspects first";

  if (!gpuforge::testing::Have("chromium")) GTEST_SKIP() << "chromium is not installed (scripts/deps.sh installs it)";
  gpuforge::testing::ScratchDir dir("isolate-report");
  const std::string file = dir.Write("isolate.html", html);
  const gpuforge::testing::Ran dom = gpuforge::testing::Sh(fmt::format(
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
      "--user-data-dir={} --enable-logging=stderr --v=0 --dump-dom 'file://{}' 2>{}",
      dir / "profile", file, dir / "console.txt"));
  ASSERT_EQ(dom.code, 0) << dom.out;
  EXPECT_EQ(Count(dom.out, "<rect class=\"cell low\" data-node=\"g05\" data-rail=\"2\""), 1u);
  EXPECT_EQ(Count(dom.out, "<figure class=\"pairmatrix\">"), 1u);
  const gpuforge::testing::Ran console = gpuforge::testing::Sh("grep -c CONSOLE " + (dir / "console.txt") + " || true");
  EXPECT_EQ(console.out, "0\n") << "the browser logged something";
}

TEST_F(IsolateOnFakeVerbs, AHealthyFabricPassesEveryNode) {
  const IsolationMeasure m = Measure();
  const IsolationResult r = Rounds(m, 42);
  for (const Verdict& v : r.verdicts) EXPECT_EQ(v.state, State::kPass) << v.node << ": " << v.code << " " << v.detail;
  EXPECT_EQ(r.rounds, 1) << "no suspect: no round 2";
}

// A node that dies after round 1 (its SSH no longer answers): every later run it is in does not
// run and blames it, so it is never good, and no partner of it is blamed for its death.
TEST_F(IsolateOnFakeVerbs, ANodeThatDiesMidRunIsNeverGoodAndItsPartnersAreNotBlamed) {
  fabric_.gbits["g05-mlx5_2"] = 100;  // a suspect, so there is a round 2
  const IsolationMeasure m = Measure();
  for (const std::uint64_t seed : {1ULL, 7ULL, 2026ULL}) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    std::atomic<int> runs{0};
    std::string dead;  // the round-1 partner of g05: it is in round 2 for sure
    IsolateRunOptions o;
    o.seed = seed;
    {
      isolate::Options io;
      io.seed = seed;
      io.measures = 5;
      isolate::Isolator plan(8, io);
      const std::optional<std::vector<isolate::PairRun>> first = plan.Next();
      ASSERT_TRUE(first.has_value());
      for (const isolate::PairRun& p : *first) {
        if (p.a == 4) dead = Names()[static_cast<std::size_t>(p.b)];
        if (p.b == 4) dead = Names()[static_cast<std::size_t>(p.a)];
      }
    }
    ASSERT_FALSE(dead.empty());
    const IsolationResult r = Isolate(
        cluster_, m, Names(),
        [&](const PlannedRun& run) -> std::vector<Verdict> {
          // Round 1 is 4 pairs x 4 rails: after those, `dead` is gone.
          if (runs.fetch_add(1) >= 16 && (run.node == dead || run.peer == dead)) {
            Verdict v;
            v.check = run.check;
            v.node = dead;
            v.entity = "node";
            v.state = State::kError;
            v.code = "node.unreachable";
            v.detail = "ssh: connect to host: Connection refused";
            return {v};
          }
          return Run(run);
        },
        o);
    const Verdict* v = Of(r, dead);
    ASSERT_NE(v, nullptr);
    EXPECT_NE(v->state, State::kPass) << v->code << " " << v->detail;
    EXPECT_EQ(v->code, "isolate.could_not_run");
    EXPECT_NE(v->detail.find(dead + ": node.unreachable"), std::string::npos) << v->detail;
    EXPECT_EQ(Of(r, "g05")->code, "isolate.bad_rail") << Of(r, "g05")->detail;
    for (const Verdict& x : r.verdicts) {
      if (x.node != dead && x.node != "g05") {
        EXPECT_EQ(x.state, State::kPass) << x.node << ": " << x.detail;
      }
    }
  }
}

TEST_F(IsolateOnFakeVerbs, ANodeWhoseEveryRailFailsIsBlamedAndNotJudgedGood) {
  // g04 has no RDMA devices at all on this fabric (a driver that did not load): every rail
  // run fails on g04's side, so its pairs do not run and g04 is blamed, never a PASS.
  for (int k = 0; k < kRails; ++k) fabric_.Dev(fmt::format("g04-mlx5_{}", k))->port.state = IBV_PORT_DOWN;
  const IsolationMeasure m = Measure();
  const IsolationResult r = Rounds(m, 7);
  const Verdict* v = Of(r, "g04");
  ASSERT_NE(v, nullptr);
  EXPECT_NE(v->state, State::kPass) << v->code << " " << v->detail;
  for (const char* good : {"g01", "g02", "g03", "g05", "g06", "g07", "g08"}) {
    EXPECT_EQ(Of(r, good)->state, State::kPass) << good << ": " << Of(r, good)->detail;
  }
}

}  // namespace
}  // namespace gpuforge::validate

#endif  // GPUFORGE_HAVE_IBVERBS
