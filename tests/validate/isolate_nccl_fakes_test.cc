// validate --isolate's NCCL pairs (#32, --checks nccl) on the fake CUDA driver and the fake
// NCCL (fake_nccl.h). Eight nodes with one GPU each and four 400 Gb/s rails; the plan is
// validate's own (SetUpRun, PlanRun of nccl.multinode, PlanIsolationMeasure), and every pair
// run is the real nccl.allreduce probe twice (node_index 0 and 1, two threads meeting through
// an exchange, the fake really reducing their buffers), judged by validate's JudgeGroup, then
// the isolation's rounds. The fake's virtual clock gives each pair the slowest rate it crosses:
// one node's GPU at half the rate (a slow GPU), one path between two nodes slow (a bad link).
// That proves the planning, the probe's plumbing across two agents, the judging and the rounds;
// it is not NCCL on GPUs, and a GPU machine with one GPU cannot pair (docs/validate.md).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpuforge/inventory/loader.h"
#include "gpuforge/report/isolate_report.h"
#include "gpuforge/report/style.h"
#include "gpuforge/validate/isolate.h"
#include "gpuforge/validate/isolate_run.h"
#include "gpuforge/validate/prepare.h"
#include "validate/isolate_measure.h"

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

#include "probe/fake_cuda.h"
#include "probe/fake_nccl.h"
#include "probe/nccl/allreduce.h"

namespace gpuforge::validate {
namespace {

namespace pi = probe::internal;

constexpr int kNodes = 8;

const char* kInventory = R"Y(version: 1
cluster: {name: nccl-pairs}
profiles:
  h200:
    gpus: {model: H200, count: 1}
    cpu: {sockets: 2, cores_per_socket: 32}
    nics:
      - {name: "mlx5_[0-3]", kind: infiniband, rate: 400Gb/s, network: ib}
networks:
  ib: {role: compute, kind: infiniband, rate: 400Gb/s, topology: fat-tree}
software:
  os: {distro: debian}
nodes:
  - {name: "g0[1-8]", profile: h200, address: "198.18.1.[1-8]"}
)Y";

// NCCL's log on an IB fabric, as far as the probe reads it (need_ib=1 stops on "Socket").
struct IbLog : pi::NcclLogCapture {
  void Start(const std::string&) override {}
  std::vector<std::string> Finish() override {
    return {"g01:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0", "g01:1:1 [0] NCCL INFO Using network IB"};
  }
};

class IsolateOnFakeNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    inventory::LoadOutcome loaded = inventory::LoadString(kInventory, "nccl-pairs.yaml");
    ASSERT_TRUE(loaded.ok()) << loaded.FormatDiagnostics();
    cluster_ = std::move(*loaded.cluster);
    cuda_.devices = {{"0000:1B:00.0"}};
    cuda_.image = pi::kFakeImage;
    cuda_.kernels["gpuforge_nccl_fill"] = [](pi::FakeCuda& c, const pi::FakeKernelLaunch& l) {
      return pi::CheckKernel(c, l, true);
    };
    cuda_.kernels["gpuforge_nccl_verify"] = [](pi::FakeCuda& c, const pi::FakeKernelLaunch& l) {
      return pi::CheckKernel(c, l, false);
    };
    cuda_.polled_streams = true;
    cuda_.hang_ends = pi::AnyCommAborted;
    // 4 x 400 Gb/s = 200 GB/s per node; the floor is 80% of it, a healthy pair at 180.
    nccl_.busbw_gbs = 180;
    pi::UseFakeNccl(&cuda_, &nccl_);
  }
  void TearDown() override {
    // Every pair gave back what it took, on every node.
    EXPECT_TRUE(cuda_.memory.empty());
    EXPECT_EQ(cuda_.retained, 0);
    EXPECT_EQ(cuda_.streams, 0);
    for (const auto& c : nccl_.comms) EXPECT_TRUE(c->destroyed || c->aborted) << c->node << " rank " << c->rank;
    pi::UseFakeNccl(nullptr, nullptr);
  }

  // The measure validate --isolate plans for --checks nccl (small sizes by default: the fake
  // reduces every byte on the host).
  IsolationMeasure Measure(const std::vector<std::string>& params = {"nccl.multinode.min_bytes=1KiB",
                                                                     "nccl.multinode.max_bytes=4KiB",
                                                                     "nccl.multinode.iters=4",
                                                                     "nccl.multinode.warmup=1"}) {
    return PlanMeasureForTest(cluster_, "nccl.multinode", params, &thresholds_);
  }

  std::vector<std::string> Names() const { return NodeNames(cluster_); }

  // One planned pair run, as the two agents would: each member's probe in its own thread with
  // its node_index, meeting through the exchange, timed on its node's virtual clock.
  std::vector<Verdict> Run(const PlannedRun& run) {
    EXPECT_EQ(run.group.size(), 2u);
    pi::ThreadExchange exchange(2);
    std::vector<probe::ProbeResult> results(run.group.size());
    std::vector<std::thread> agents;
    for (std::size_t k = 0; k < run.group.size(); ++k) {
      agents.emplace_back([&, k] {
        const std::string node = run.group[k];
        pi::SetFakeNcclNode(node);
        auto cuda = std::make_shared<pi::CudaApi>(pi::FakeCuda::Api());
        auto nccl = std::make_shared<pi::NcclApi>(pi::FakeNcclApi());
        std::unique_ptr<probe::Probe> p = pi::MakeNcclAllReduceProbe(
            [cuda] { return pi::CudaLoad{cuda, "", ""}; }, [nccl] { return pi::NcclLoad{nccl, "", ""}; },
            [] { return std::make_unique<IbLog>(); }, pi::kFakeImage, [node] { return pi::FakeNcclClock(node); });
        std::map<std::string, std::string> params = run.params;
        params["node_index"] = std::to_string(k);
        Result<std::map<std::string, std::string>> resolved = probe::ResolveParams(*p, params);
        EXPECT_TRUE(resolved.ok()) << (resolved.ok() ? "" : resolved.error().message);
        if (resolved.ok()) results[k] = probe::RunProbe(*p, *resolved, nullptr, exchange.For(static_cast<int>(k)));
      });
    }
    for (std::thread& t : agents) t.join();
    {
      std::lock_guard l(mu_);
      ++runs_;
    }
    std::vector<const probe::ProbeResult*> got;
    for (const probe::ProbeResult& r : results) got.push_back(&r);
    return JudgeGroup(cluster_, thresholds_, run, got);
  }

  model::Cluster cluster_;
  Thresholds thresholds_;
  pi::FakeCuda cuda_;
  pi::FakeNccl nccl_;
  std::mutex mu_;
  int runs_ = 0;
};

const Verdict* Of(const IsolationResult& r, const std::string& node) {
  for (const Verdict& v : r.verdicts) {
    if (v.node == node) return &v;
  }
  return nullptr;
}

TEST_F(IsolateOnFakeNccl, TheMeasureIsATwoNodeAllReduceAtOneToEightGiBWithTheNicsFloor) {
  // Without --param: the sizes #32 asks for.
  const IsolationMeasure measure = Measure({});
  const IsolationMeasure* m = &measure;
  ASSERT_TRUE(m->runs) << "no measure";
  EXPECT_EQ(m->check, "nccl.multinode");
  EXPECT_EQ(m->unit, "GB/s");
  EXPECT_EQ(m->network, "ib");
  EXPECT_EQ(m->nodes.size(), 8u);
  ASSERT_EQ(m->floors.size(), 1u);
  EXPECT_DOUBLE_EQ(m->floors[0], 0.8 * 200);  // nccl.allreduce.min_fraction x 4 x 400 Gb/s
  EXPECT_NE(m->floor_text.find("nccl.allreduce.min_fraction"), std::string::npos) << m->floor_text;
  const auto runs = m->runs(*cluster_.FindNode("g02"), *cluster_.FindNode("g07"));
  ASSERT_EQ(runs.size(), 1u);
  const PlannedRun& run = runs[0].second;
  EXPECT_EQ(run.group, (std::vector<std::string>{"g02", "g07"}));
  EXPECT_EQ(run.node, "g02");
  EXPECT_EQ(run.peer, "g07");
  EXPECT_EQ(run.params.at("nodes"), "2");
  EXPECT_EQ(run.params.at("min_bytes"), "1GiB");
  EXPECT_EQ(run.params.at("max_bytes"), "8GiB");
  EXPECT_EQ(run.params.at("need_ib"), "1") << "a socket fallback on an IB fabric ends the run at init";
  // --param reaches the pairs; a max_bytes given alone is the one size.
  EXPECT_EQ(Measure().runs(*cluster_.FindNode("g02"), *cluster_.FindNode("g07"))[0].second.params.at("max_bytes"),
            "4KiB");
  const PlannedRun one = Measure({"nccl.multinode.max_bytes=256MiB"}).runs(*cluster_.FindNode("g02"),
                                                                          *cluster_.FindNode("g07"))[0].second;
  EXPECT_EQ(one.params.at("min_bytes"), "256MiB");
  EXPECT_EQ(one.params.at("max_bytes"), "256MiB");
}

TEST_F(IsolateOnFakeNccl, ASlowGpuIsABadNodeAndASlowPathABadLinkOnEverySeed) {
  const IsolationMeasure m = Measure();
  const std::vector<std::string> names = Names();
  for (const std::uint64_t seed : {1ULL, 7ULL, 2026ULL}) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    // The slow path is one round 1 runs (a path no round runs cannot be judged), away from g05.
    isolate::Options io;
    io.seed = seed;
    isolate::Isolator plan(kNodes, io);
    const std::optional<std::vector<isolate::PairRun>> first = plan.Next();
    ASSERT_TRUE(first);
    std::string la, lb;
    for (const isolate::PairRun& p : *first) {
      if (names[p.a] != "g05" && names[p.b] != "g05") {
        la = names[p.a];
        lb = names[p.b];
        break;
      }
    }
    ASSERT_FALSE(la.empty());
    {
      std::lock_guard l(nccl_.m);
      nccl_.node_gbs = {{"g05", 90}};  // its GPU at half the rate of the others
      nccl_.link_gbs = {{{std::min(la, lb), std::max(la, lb)}, 100}, {{std::max(la, lb), std::min(la, lb)}, 100}};
    }
    IsolateRunOptions o;
    o.seed = seed;
    const IsolationResult r = Isolate(cluster_, m, names, [this](const PlannedRun& run) { return Run(run); }, o);
    ASSERT_EQ(r.verdicts.size(), 8u);
    ASSERT_TRUE(r.median.has_value());
    // Every run's figure is the fake's rate for what it crossed, through the probe's arithmetic
    // (busbw = algbw x 2(n-1)/n, the mean of both agents' times).
    for (const isolate::RunRecord& run : r.runs) {
      const std::string a = names[run.run.a], b = names[run.run.b];
      const double want = a == "g05" || b == "g05" ? 90 : (a == la && b == lb) || (a == lb && b == la) ? 100 : 180;
      ASSERT_TRUE(run.figures.ran && run.figures.values[0]) << a << "-" << b << ": " << run.figures.why;
      EXPECT_NEAR(*run.figures.values[0], want, 0.5) << a << "-" << b;
    }

    const Verdict* slow = Of(r, "g05");
    ASSERT_NE(slow, nullptr);
    EXPECT_EQ(slow->code, "isolate.bad_node") << slow->detail;
    EXPECT_EQ(slow->check, "isolate.nccl.multinode");
    ASSERT_TRUE(slow->measured.has_value());
    EXPECT_NEAR(*slow->measured, 90, 0.5);
    EXPECT_EQ(slow->unit, "GB/s");
    for (const auto& [end, other] : {std::pair{la, lb}, std::pair{lb, la}}) {
      const Verdict* v = Of(r, end);
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(v->code, "isolate.bad_link") << end << ": " << v->detail;
      EXPECT_EQ(v->entity, "link to " + other);
    }
    for (const std::string& good : names) {
      if (good == "g05" || good == la || good == lb) continue;
      const Verdict* v = Of(r, good);
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(v->state, State::kPass) << good << ": " << v->code << " " << v->detail;
    }
    const std::string text = report::IsolationText(r, report::Style{});
    EXPECT_NE(text.find("GB/s"), std::string::npos) << text;
    EXPECT_NE(text.find("nccl.multinode"), std::string::npos) << text;
  }
  EXPECT_GT(runs_, 0);
}

// Data corrupted in every all-reduce g03 is in: whatever their speed, its pairs are no good
// pairs, and it is the bad node (corruption is never averaged away).
TEST_F(IsolateOnFakeNccl, WrongDataIsNeverAGoodPair) {
  const IsolationMeasure m = Measure();
  // The fake corrupts global rank 0's result: in a pair that is node_index 0, the client (a).
  nccl_.corrupt = true;
  IsolateRunOptions o;
  o.seed = 11;
  const IsolationResult r = Isolate(cluster_, m, Names(), [this](const PlannedRun& run) { return Run(run); }, o);
  for (const isolate::RunRecord& run : r.runs) {
    EXPECT_NE(run.figures.why.find("nccl.wrong_data"), std::string::npos) << run.figures.why;
    ASSERT_FALSE(run.figures.values.empty());
    EXPECT_EQ(run.figures.values[0], 0.0);
  }
  for (const Verdict& v : r.verdicts) EXPECT_NE(v.state, State::kPass) << v.node << " " << v.detail;
}

}  // namespace
}  // namespace gpuforge::validate

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
