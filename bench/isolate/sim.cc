// How many rounds, waves and pair runs `validate --isolate` (#32) needs to name one bad node and
// one bad cable among N simulated nodes, and what its planning and judging cost: the Isolator
// alone, with every pair's figures computed here instead of measured (no network).
//
// A node's pair figure is the slower end's; node BAD runs at 0.6, and rail 3 of node CABLE at
// 0.5 (a bad cable: its other rails and its pair figure are fine). Figures get +-1% noise.
// Prints one line per size: nodes, rounds, waves, pair runs, runs per node, verdicts right,
// median microseconds of planning and judging over RUNS seeds, and microseconds per node.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
  return 0;
}
