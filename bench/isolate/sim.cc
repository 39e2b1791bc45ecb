// How many rounds, waves and pair runs `validate --isolate` (#32) needs to name one bad node and
// one bad cable among N simulated nodes, and what its planning and judging cost: the Isolator
// alone, with every pair's figures computed here instead of measured (no network).
//
// A node's pair figure is the slower end's; node BAD runs at 0.6, and rail 3 of node CABLE at
// 0.5 (a bad cable: its other rails and its pair figure are fine). Figures get +-1% noise.
// Prints one line per size: nodes, rounds, waves, pair runs, runs per node, verdicts right,
// median microseconds of planning and judging over RUNS seeds, and microseconds per node.
//
// Then, with paths: the same sizes on a two-tier fat tree (32 nodes a leaf, 8 uplinks a leaf,
// a pair between two leaves crossing one uplink of each, picked by a hash of the pair as ECMP
// does) with one bad uplink, 0.5 x on every pair that crosses it, and nothing else wrong. The
// Isolator judges nodes and node-to-node paths; a bad uplink is neither, so this shows what it
// makes of one: per size, how many nodes of the bad leaf and elsewhere got each verdict
// (median over RUNS seeds).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpuforge/validate/isolate.h"

namespace iso = gpuforge::validate::isolate;

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoul(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {1024, 2048, 4096, 8192};
  const int runs = std::getenv("RUNS") ? std::atoi(std::getenv("RUNS")) : 5;
  constexpr int kRails = 8;
  std::printf("%7s %6s %6s %9s %9s %6s %12s %12s\n", "nodes", "rounds", "waves", "pair runs", "runs/node", "right",
              "median us", "us per node");
  for (std::size_t n : sizes) {
    const int bad = static_cast<int>(n / 3), cable = static_cast<int>(2 * n / 3);
    std::vector<double> us;
    int rounds = 0, waves = 0, right = 0;
    std::size_t pair_runs = 0;
    for (int r = 0; r < runs; ++r) {
      iso::Options o;
      o.seed = 1000 + static_cast<std::uint64_t>(r);
      o.measures = 1 + kRails;
      iso::Rng noise(o.seed ^ 0x5eed);
      auto jitter = [&] { return 0.99 + 0.02 * static_cast<double>(noise.Next() >> 11) / 9007199254740992.0; };
      double spent = 0;
      auto t0 = std::chrono::steady_clock::now();
      iso::Isolator is(n, o);
      while (true) {
        std::optional<std::vector<iso::PairRun>> wave = is.Next();
        auto t1 = std::chrono::steady_clock::now();
        spent += std::chrono::duration<double, std::micro>(t1 - t0).count();
        if (!wave) break;
        std::vector<iso::Figures> f(wave->size());
        for (std::size_t i = 0; i < wave->size(); ++i) {
          const iso::PairRun& p = (*wave)[i];
          const double node = (p.a == bad || p.b == bad) ? 0.6 : 1.0;
          f[i].ran = true;
          f[i].values.push_back(360.0 * node * jitter());
          for (int k = 0; k < kRails; ++k) {
            const double c = (k == 3 && (p.a == cable || p.b == cable)) ? 0.5 : 1.0;
            f[i].values.push_back(48.0 * std::min(node, c) * jitter());
          }
        }
        t0 = std::chrono::steady_clock::now();
        is.Record(f);
      }
      us.push_back(spent);
      rounds = is.Rounds();
      waves = is.Waves();
      pair_runs = is.Runs().size();
      int good = 0;
      for (std::size_t i = 0; i < n; ++i) good += is.Verdicts()[i].verdict == iso::Verdict::kGood;
      const bool ok = is.Verdicts()[static_cast<std::size_t>(bad)].verdict == iso::Verdict::kBadNode &&
                      is.Verdicts()[static_cast<std::size_t>(cable)].verdict == iso::Verdict::kBadRail &&
                      is.Verdicts()[static_cast<std::size_t>(cable)].measure == 4 && good == static_cast<int>(n) - 2;
      right += ok ? 1 : 0;
    }
    std::sort(us.begin(), us.end());
    const double med = us[us.size() / 2];
    std::printf("%7zu %6d %6d %9zu %9.3f %3d/%-2d %12.0f %12.3f\n", n, rounds, waves, pair_runs,
                static_cast<double>(pair_runs) / static_cast<double>(n), right, runs, med, med / static_cast<double>(n));
  }

  // The path-aware run: one bad uplink (leaf 1, uplink 2).
  constexpr int kLeaf = 32, kUplinks = 8, kBadLeaf = 1, kBadUplink = 2;
  std::printf("\none bad uplink (leaf %d, uplink %d of %d; %d nodes a leaf), verdicts by node, median of %d seeds\n",
              kBadLeaf, kBadUplink, kUplinks, kLeaf, runs);
  std::printf("%7s %6s %9s | %-44s | %-44s\n", "nodes", "rounds", "pair runs", "nodes on the bad leaf",
              "nodes elsewhere");
  const std::array<iso::Verdict, 5> kinds = {iso::Verdict::kGood, iso::Verdict::kBadNode, iso::Verdict::kLinkOrPartner,
                                             iso::Verdict::kBadLink, iso::Verdict::kFlaky};
  const auto uplink = [](int a, int b) {
    const std::uint64_t lo = static_cast<std::uint64_t>(std::min(a, b)), hi = static_cast<std::uint64_t>(std::max(a, b));
    iso::Rng h((lo << 32) ^ hi ^ 0xec3b);
    return static_cast<int>(h.Next() % kUplinks);
  };
  for (std::size_t n : sizes) {
    std::vector<std::array<int, 6>> on(static_cast<std::size_t>(runs)), off(static_cast<std::size_t>(runs));
    std::vector<int> rounds(static_cast<std::size_t>(runs));
    std::vector<std::size_t> pair_runs(static_cast<std::size_t>(runs));
    for (int r = 0; r < runs; ++r) {
      iso::Options o;
      o.seed = 2000 + static_cast<std::uint64_t>(r);
      iso::Rng noise(o.seed ^ 0x5eed);
      auto jitter = [&] { return 0.99 + 0.02 * static_cast<double>(noise.Next() >> 11) / 9007199254740992.0; };
      iso::Isolator is(n, o);
      while (std::optional<std::vector<iso::PairRun>> wave = is.Next()) {
        std::vector<iso::Figures> f(wave->size());
        for (std::size_t i = 0; i < wave->size(); ++i) {
          const iso::PairRun& p = (*wave)[i];
          const int la = p.a / kLeaf, lb = p.b / kLeaf;
          const bool crosses = la != lb && (la == kBadLeaf || lb == kBadLeaf) && uplink(p.a, p.b) == kBadUplink;
          f[i].ran = true;
          f[i].values = {360.0 * (crosses ? 0.5 : 1.0) * jitter()};
        }
        is.Record(f);
      }
      rounds[static_cast<std::size_t>(r)] = is.Rounds();
      pair_runs[static_cast<std::size_t>(r)] = is.Runs().size();
      for (std::size_t i = 0; i < n; ++i) {
        std::array<int, 6>& c = static_cast<int>(i) / kLeaf == kBadLeaf ? on[static_cast<std::size_t>(r)]
                                                                          : off[static_cast<std::size_t>(r)];
        const auto k = std::find(kinds.begin(), kinds.end(), is.Verdicts()[i].verdict);
        ++c[k == kinds.end() ? 5 : static_cast<std::size_t>(k - kinds.begin())];
      }
    }
    const auto median = [](std::vector<int> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const auto column = [&](const std::vector<std::array<int, 6>>& c) {
      static const char* names[] = {"good", "node", "link/partner", "link", "flaky", "other"};
      std::string out;
      for (std::size_t k = 0; k < 6; ++k) {
        std::vector<int> v;
        for (const auto& x : c) v.push_back(x[k]);
        const int m = median(v);
        if (m > 0) out += (out.empty() ? "" : ", ") + std::to_string(m) + " " + names[k];
      }
      return out;
    };
    std::vector<int> pr;
    for (std::size_t x : pair_runs) pr.push_back(static_cast<int>(x));
    std::printf("%7zu %6d %9d | %-44s | %-44s\n", n, median(rounds), median(pr), column(on).c_str(), column(off).c_str());
  }
  return 0;
}
