#include "gpuforge/validate/isolate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace gpuforge::validate::isolate {
namespace {

// A fabric in figures: each node's speed, each rail's, and pairs whose path is slow. A pair's
// figure is the slower node's x the path's, as an all-reduce between two nodes runs at its
// slower end; a rail's the same on that rail.
struct Sim {
  explicit Sim(std::size_t n, int r = 0) : nodes(n), rails(r) {}
  std::size_t nodes = 0;
  int rails = 0;
  std::map<int, double> node_speed;                 // default 1
  std::map<std::pair<int, int>, double> rail_speed;  // (node, rail) -> factor
  std::map<std::pair<int, int>, double> path;        // (min, max) -> factor
  std::function<double(int, int, int)> extra;        // (a, b, try of this pair) -> factor; optional
  std::map<std::pair<int, int>, int> tries;

  Figures Run(const PairRun& r) {
    const std::pair<int, int> key{std::min(r.a, r.b), std::max(r.a, r.b)};
    const int t = tries[key]++;
    auto speed = [&](int n) { return node_speed.count(n) ? node_speed.at(n) : 1.0; };
    const double p = path.count(key) ? path.at(key) : 1.0;
    const double x = extra ? extra(key.first, key.second, t) : 1.0;
    Figures f;
    f.ran = true;
    f.values.push_back(360.0 * std::min(speed(r.a), speed(r.b)) * p * x);
    for (int k = 0; k < rails; ++k) {
      auto rail = [&](int n) { return rail_speed.count({n, k}) ? rail_speed.at({n, k}) : 1.0; };
      f.values.push_back(48.0 * std::min(rail(r.a), rail(r.b)) * p * x);
    }
    return f;
  }
};

Options Opt(std::uint64_t seed, std::vector<double> floors = {}, int retries = 2) {
  Options o;
  o.seed = seed;
  o.floors = std::move(floors);
  o.retries = retries;
  return o;
}

Isolator Drive(Sim& sim, Options o, const std::function<Figures(const PairRun&)>& run = {}) {
  o.measures = 1 + sim.rails;
  Isolator iso(sim.nodes, o);
  while (std::optional<std::vector<PairRun>> wave = iso.Next()) {
    std::set<int> busy;
    std::vector<Figures> f;
    for (const PairRun& r : *wave) {
      EXPECT_TRUE(busy.insert(r.a).second && busy.insert(r.b).second) << "a node twice in wave " << r.wave;
      EXPECT_NE(r.a, r.b);
      f.push_back(run ? run(r) : sim.Run(r));
    }
    iso.Record(f);
  }
  return iso;
}

std::map<Verdict, int> Count(const Isolator& iso) {
  std::map<Verdict, int> c;
  for (const NodeVerdict& v : iso.Verdicts()) c[v.verdict]++;
  return c;
}

TEST(IsolateRng, IsSplitMix64AndReproducible) {
  // The reference sequence of SplitMix64 from state 0 (Vigna's splitmix64.c).
  Rng r(0);
  EXPECT_EQ(r.Next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(r.Next(), 0x6e789e6aa1b965f4ULL);
  Rng a(7), b(7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Below(13), b.Below(13));
  Rng c(1);
  std::vector<int> hist(4);
  for (int i = 0; i < 4000; ++i) hist[c.Below(4)]++;
  for (int h : hist) EXPECT_GT(h, 850);
}

TEST(Isolate, OneSlowNodeIsABadNodeAndNoOneElseOnEverySeed) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    Sim sim(64);
    sim.node_speed[17] = 0.5;
    Isolator iso = Drive(sim, Opt(seed));
    std::map<Verdict, int> c = Count(iso);
    EXPECT_EQ(c[Verdict::kBadNode], 1) << "seed " << seed;
    EXPECT_EQ(c[Verdict::kGood], 63) << "seed " << seed;
    const NodeVerdict& v = iso.Verdicts()[17];
    EXPECT_EQ(v.verdict, Verdict::kBadNode) << "seed " << seed;
    ASSERT_TRUE(v.worst_ratio);
    EXPECT_NEAR(*v.worst_ratio, 0.5, 1e-9);
    ASSERT_TRUE(v.worst_run);
    EXPECT_TRUE(iso.Runs()[*v.worst_run].run.a == 17 || iso.Runs()[*v.worst_run].run.b == 17);
    EXPECT_EQ(iso.Rounds(), 2) << "the partner of the bad node is explained, not retried";
  }
}

TEST(Isolate, ASlowRailIsThatRailOfThatNode) {
  Sim sim(32, 4);
  sim.rail_speed[{9, 2}] = 0.4;
  Isolator iso = Drive(sim, Opt(3));
  const NodeVerdict& v = iso.Verdicts()[9];
  EXPECT_EQ(v.verdict, Verdict::kBadRail);
  EXPECT_EQ(v.measure, 3) << "rail 2 is measure 3";
  EXPECT_EQ(Count(iso)[Verdict::kGood], 31);
}

// A slow path between two nodes shows only when they run together: both are fine with others,
// and low again every time they are tried together, so the link is named, not a node.
TEST(Isolate, ASlowPathIsALinkWhenTheTwoMeet) {
  int met = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    Sim sim(8);
    sim.path[{2, 5}] = 0.5;
    Isolator iso = Drive(sim, Opt(seed));
    bool paired = false;
    for (const RunRecord& r : iso.Runs()) paired |= r.run.round == 1 && std::min(r.run.a, r.run.b) == 2 && std::max(r.run.a, r.run.b) == 5;
    if (!paired) {
      EXPECT_EQ(Count(iso)[Verdict::kGood], 8) << "seed " << seed;
      continue;
    }
    ++met;
    for (auto [x, y] : {std::pair{2, 5}, std::pair{5, 2}}) {
      const NodeVerdict& v = iso.Verdicts()[static_cast<std::size_t>(x)];
      EXPECT_EQ(v.verdict, Verdict::kBadLink) << "seed " << seed;
      EXPECT_EQ(v.partner, y);
    }
    EXPECT_EQ(iso.Rounds(), 3);
    EXPECT_EQ(Count(iso)[Verdict::kGood], 6);
  }
  EXPECT_GT(met, 0) << "no seed paired 2 with 5; the test tested nothing";
}

TEST(Isolate, LowOnceThenFineIsFlakyWithEveryTryKept) {
  Sim sim(16);
  sim.extra = [](int, int, int t) { return t == 0 ? 0.6 : 1.0; };  // every pair's first run only
  // Only one pair is slow the first time: the pair of node 4.
  Isolator iso = Drive(sim, Opt(5, {}, 3), [&](const PairRun& r) {
    Figures f = sim.Run(r);
    const bool mine = r.a == 4 || r.b == 4;
    if (!mine || r.round != 1) f.values[0] = 360.0;
    return f;
  });
  const NodeVerdict& v = iso.Verdicts()[4];
  EXPECT_EQ(v.verdict, Verdict::kFlaky);
  ASSERT_TRUE(v.partner);
  EXPECT_EQ(iso.Verdicts()[static_cast<std::size_t>(*v.partner)].verdict, Verdict::kFlaky);
  int retries = 0;
  for (const RunRecord& r : iso.Runs()) retries += r.run.round == 3;
  EXPECT_EQ(retries, 3);
  EXPECT_NE(v.why.find("then in 0 of 3 tries"), std::string::npos) << v.why;
}

TEST(Isolate, APeerThatNeverConnectsIsBlamedAndItsPartnerRetested) {
  Sim sim(10);
  Isolator iso = Drive(sim, Opt(11), [&](const PairRun& r) {
    if (r.a == 6 || r.b == 6) return Figures{false, "node 6: peer never connected", 6, {}};
    return sim.Run(r);
  });
  EXPECT_EQ(iso.Verdicts()[6].verdict, Verdict::kCouldNotRun);
  EXPECT_EQ(iso.Verdicts()[6].why, "node 6: peer never connected");
  std::string all;
  for (std::size_t i = 0; i < iso.Verdicts().size(); ++i) {
    all += std::to_string(i) + ": " + VerdictName(iso.Verdicts()[i].verdict) + " " + iso.Verdicts()[i].why + "\n";
  }
  EXPECT_EQ(Count(iso)[Verdict::kGood], 9) << "its partner was run with known-good nodes and passed\n" << all;
}

TEST(Isolate, FewerThanThreeNodesHaveTheFloorAlone) {
  Sim sim(2);
  sim.node_speed[1] = 0.5;
  Isolator iso = Drive(sim, Opt(1));
  ASSERT_FALSE(iso.Notes().empty());
  EXPECT_NE(iso.Notes()[0].find("2 nodes: no majority"), std::string::npos) << iso.Notes()[0];
  EXPECT_EQ(Count(iso)[Verdict::kUnjudged], 2) << "no floor, no median: nothing judged, nothing passed";

  Isolator floored = Drive(sim, Opt(1, {200}));
  EXPECT_EQ(Count(floored)[Verdict::kUnjudged], 2) << "below the floor, and no known-good node to tell which";
  Sim fine(2);
  Isolator ok = Drive(fine, Opt(1, {200}));
  EXPECT_EQ(Count(ok)[Verdict::kGood], 2);

  Sim one(1);
  Isolator alone = Drive(one, Opt(1));
  EXPECT_EQ(alone.Verdicts()[0].verdict, Verdict::kUnjudged);
  EXPECT_EQ(alone.Verdicts()[0].why, "one node cannot be paired");
}

TEST(Isolate, AZeroMedianJudgesNothingWithoutAFloor) {
  Sim sim(6);
  sim.extra = [](int, int, int) { return 0.0; };
  Isolator iso = Drive(sim, Opt(2));
  EXPECT_EQ(Count(iso)[Verdict::kUnjudged], 6);
  bool said = false;
  for (const std::string& n : iso.Notes()) said |= n.find("median is zero") != std::string::npos;
  EXPECT_TRUE(said);
  Isolator floored = Drive(sim, Opt(2, {100}));
  EXPECT_EQ(Count(floored)[Verdict::kGood], 0) << "nothing that ran at zero passes";
}

TEST(Isolate, TheSeedReproducesThePlanAndAnotherSeedDoesNot) {
  auto plan = [](std::uint64_t seed) {
    Sim sim(101);
    sim.node_speed[50] = 0.3;
    Isolator iso = Drive(sim, Opt(seed));
    std::vector<std::pair<int, int>> p;
    for (const RunRecord& r : iso.Runs()) p.emplace_back(r.run.a, r.run.b);
    return p;
  };
  EXPECT_EQ(plan(99), plan(99));
  EXPECT_NE(plan(99), plan(100));
}

// The odd node runs with a member of one pair, after the pairs: two waves in round 1.
TEST(Isolate, TheOddNodeJoinsAPairInASecondWave) {
  Sim sim(7);
  Isolator iso = Drive(sim, Opt(4));
  int r1 = 0, last_wave = 0;
  for (const RunRecord& r : iso.Runs()) {
    if (r.run.round != 1) continue;
    ++r1;
    last_wave = std::max(last_wave, r.run.wave);
  }
  EXPECT_EQ(r1, 4);
  EXPECT_EQ(last_wave, 1);
  EXPECT_EQ(Count(iso)[Verdict::kGood], 7);
}

// Latency (rdma.write_lat): the Sim's rates as ping-pong times, 1.3 us at full speed; measure 0
// is the slowest rail. A rail that never replied is +inf, as the run layer records it.
Figures AsLatency(Figures f, const std::set<std::pair<int, int>>& dead = {}, const PairRun* r = nullptr) {
  double slowest = 0;
  for (std::size_t m = 1; m < f.values.size(); ++m) {
    f.values[m] = 1.3 * 48.0 / *f.values[m];
    if (r != nullptr && (dead.count({r->a, static_cast<int>(m) - 1}) || dead.count({r->b, static_cast<int>(m) - 1}))) {
      f.values[m] = std::numeric_limits<double>::infinity();
    }
    slowest = std::max(slowest, *f.values[m]);
  }
  f.values[0] = slowest;
  return f;
}

Options Latency(std::uint64_t seed, double ceiling) {
  Options o = Opt(seed, std::vector<double>(5, ceiling));
  o.lower_is_better = true;
  return o;
}

TEST(IsolateLatency, ASlowRailIsThatRailAndItsRatioIsTheMedianOverItsTime) {
  for (std::uint64_t seed : {1u, 7u, 2026u}) {
    Sim sim(32, 4);
    sim.rail_speed[{9, 2}] = 0.4;   // 3.25 us on rail 2, 1.3 us elsewhere: under the 5 us ceiling
    Isolator iso = Drive(sim, Latency(seed, 5), [&](const PairRun& r) {
      Figures f = AsLatency(sim.Run(r));
      if (r.a == 20 || r.b == 20) f.values[2] = 0.6;  // faster than the rest on rail 1: never a suspect
      return f;
    });
    const NodeVerdict& v = iso.Verdicts()[9];
    EXPECT_EQ(v.verdict, Verdict::kBadRail) << "seed " << seed << ": " << v.why;
    EXPECT_EQ(v.measure, 3) << "rail 2 is measure 3";
    EXPECT_NE(v.why.find("slow with 2 different known-good nodes"), std::string::npos) << v.why;
    ASSERT_TRUE(v.worst_ratio);
    EXPECT_NEAR(*v.worst_ratio, 0.4, 1e-9) << "median / figure: 1.3 / 3.25";
    EXPECT_EQ(iso.Verdicts()[20].verdict, Verdict::kGood) << "a faster rail is not a slow one";
    EXPECT_EQ(Count(iso)[Verdict::kGood], 31) << "seed " << seed;
    ASSERT_TRUE(iso.Medians()[3]);
    EXPECT_NEAR(*iso.Medians()[3], 1.3, 1e-9);
  }
}

// The ceiling judges where the relative rule cannot: a fabric slow everywhere (6 us, over the
// 5 us ceiling) leaves no known-good node, so nothing passes; at 4 us everything does.
TEST(IsolateLatency, TheCeilingIsAnUpperBound) {
  Sim sim(8, 4);
  auto at = [&](double us) {
    return [&, us](const PairRun& r) {
      Figures f = AsLatency(sim.Run(r));
      for (auto& v : f.values) v = *v * us / 1.3;
      return f;
    };
  };
  Isolator slow = Drive(sim, Latency(3, 5), at(6));
  EXPECT_EQ(Count(slow)[Verdict::kGood], 0);
  EXPECT_EQ(Count(slow)[Verdict::kUnjudged], 8) << "slow in round 1, and no known-good node to pair with";
  Isolator fine = Drive(sim, Latency(3, 5), at(4));
  EXPECT_EQ(Count(fine)[Verdict::kGood], 8);
}

// A rail that gave no reply (+inf) is the slowest figure there is, never the best: its node's
// rail is bad, its ratio 0, and the medians stay finite.
TEST(IsolateLatency, ARailThatNeverRepliedIsSlowNotFast) {
  Sim sim(16, 4);
  const std::set<std::pair<int, int>> dead = {{5, 1}};
  Isolator iso = Drive(sim, Latency(11, 5), [&](const PairRun& r) { return AsLatency(sim.Run(r), dead, &r); });
  const NodeVerdict& v = iso.Verdicts()[5];
  EXPECT_EQ(v.verdict, Verdict::kBadRail) << v.why;
  EXPECT_EQ(v.measure, 2);
  ASSERT_TRUE(v.worst_ratio);
  EXPECT_EQ(*v.worst_ratio, 0.0);
  for (const std::optional<double>& m : iso.Medians()) {
    ASSERT_TRUE(m);
    EXPECT_TRUE(std::isfinite(*m));
  }
  EXPECT_EQ(Count(iso)[Verdict::kGood], 15);
}

}  // namespace
}  // namespace gpuforge::validate::isolate
