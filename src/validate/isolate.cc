#include "gpuforge/validate/isolate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace gpuforge::validate::isolate {

std::uint64_t Rng::Next() {
  std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::size_t Rng::Below(std::size_t n) {
  // The largest multiple of n that fits; draws above it are redrawn, so no value is favoured.
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x = Next();
  while (x >= limit) x = Next();
  return static_cast<std::size_t>(x % n);
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kGood: return "good";
    case Verdict::kBadNode: return "bad node";
    case Verdict::kBadRail: return "bad rail";
    case Verdict::kBadLink: return "bad link";
    case Verdict::kLinkOrPartner: return "bad link or partner";
    case Verdict::kFlaky: return "flaky";
    case Verdict::kCouldNotRun: return "could not run";
    case Verdict::kUnjudged: return "not judged";
  }
  return "?";
}

namespace {

// Which verdict a node keeps when it earns several: the most specific cause first (a bad rail
// also drags the pair's figure down, so it is the node's verdict rather than "bad node").
int Severity(Verdict v) {
  switch (v) {
    case Verdict::kBadRail: return 7;
    case Verdict::kBadNode: return 6;
    case Verdict::kBadLink: return 5;
    case Verdict::kLinkOrPartner: return 4;
    case Verdict::kFlaky: return 3;
    case Verdict::kCouldNotRun: return 2;
    case Verdict::kUnjudged: return 1;
    case Verdict::kGood: return 0;
  }
  return 0;
}

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double hi = v[mid];
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

std::string MeasureName(int m) { return m == 0 ? "the pair figure" : fmt::format("rail {}", m - 1); }

}  // namespace

Isolator::Isolator(std::size_t nodes, Options options)
    : n_(nodes),
      o_(std::move(options)),
      rng_(o_.seed),
      verdicts_(nodes),
      suspect_on_(nodes),
      bad_measures_(nodes),
      r1_runs_of_(nodes) {
  o_.measures = std::max(1, o_.measures);
  o_.floors.resize(static_cast<std::size_t>(o_.measures), 0.0);
  o_.retries = std::max(1, o_.retries);
  medians_.assign(static_cast<std::size_t>(o_.measures), std::nullopt);
  relative_on_.assign(static_cast<std::size_t>(o_.measures), false);
}

void Isolator::Set(int node, NodeVerdict v) {
  NodeVerdict& cur = verdicts_[static_cast<std::size_t>(node)];
  if (Severity(v.verdict) > Severity(cur.verdict)) cur = std::move(v);
}

bool Isolator::LowOn(const RunRecord& r, int m) const {
  const std::size_t mi = static_cast<std::size_t>(m);
  if (!r.figures.ran || mi >= r.figures.values.size() || !r.figures.values[mi]) return false;
  const double v = *r.figures.values[mi];
  const double floor = o_.floors[mi];
  const bool rel = relative_on_[mi] && medians_[mi] && *medians_[mi] > 0;
  if (o_.lower_is_better) {
    // A latency: the floor is a ceiling, and the relative rule is the same 0.9 turned over
    // (a run taking longer than median / 0.9 is as suspect as one moving less than 0.9 x).
    return (floor > 0 && v > floor) || (rel && v > *medians_[mi] / o_.relative);
  }
  if (floor > 0 && v < floor) return true;
  return rel && v < o_.relative * *medians_[mi];
}

void Isolator::Schedule(const std::vector<std::pair<int, int>>& pairs, int round) {
  // First fit: each run in the earliest wave where neither of its nodes is busy.
  std::vector<std::vector<char>> busy;
  std::vector<std::vector<PairRun>> waves;
  for (const auto& [a, b] : pairs) {
    std::size_t w = 0;
    while (w < busy.size() && (busy[w][static_cast<std::size_t>(a)] || busy[w][static_cast<std::size_t>(b)])) ++w;
    if (w == busy.size()) {
      busy.emplace_back(n_, 0);
      waves.emplace_back();
    }
    busy[w][static_cast<std::size_t>(a)] = busy[w][static_cast<std::size_t>(b)] = 1;
    waves[w].push_back({a, b, round, 0});
  }
  for (std::vector<PairRun>& w : waves) pending_.push_back(std::move(w));
}

void Isolator::PlanRound1() {
  if (n_ < 2) {
    for (std::size_t i = 0; i < n_; ++i) Set(static_cast<int>(i), {Verdict::kUnjudged, 0, {}, {}, {}, "one node cannot be paired"});
    return;
  }
  std::vector<int> order(n_);
  for (std::size_t i = 0; i < n_; ++i) order[i] = static_cast<int>(i);
  for (std::size_t i = n_ - 1; i > 0; --i) std::swap(order[i], order[rng_.Below(i + 1)]);  // Fisher-Yates
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i + 1 < n_; i += 2) pairs.emplace_back(order[i], order[i + 1]);
  if (n_ % 2 == 1) {
    // The odd node runs with a member of a random pair, in a wave of its own after the pairs.
    const auto& host = pairs[rng_.Below(pairs.size())];
    pairs.emplace_back(order.back(), host.first);
  }
  Schedule(pairs, 1);
}

void Isolator::JudgeRound1() {
  const std::size_t first = round_start_;
  for (std::size_t m = 0; m < static_cast<std::size_t>(o_.measures); ++m) {
    std::vector<double> values;
    for (std::size_t i = first; i < runs_.size(); ++i) {
      const Figures& f = runs_[i].figures;
      if (f.ran && m < f.values.size() && f.values[m]) values.push_back(*f.values[m]);
    }
    medians_[m] = Median(values);
    if (n_ < 3) {
      if (m == 0) {
        notes_.push_back(fmt::format("{} nodes: no majority to compare a pair with; the absolute floor alone judges", n_));
      }
    } else if (values.size() < 2) {
      notes_.push_back(fmt::format("{}: {} run{} measured it; the absolute floor alone judges", MeasureName(static_cast<int>(m)),
                                   values.size(), values.size() == 1 ? "" : "s"));
    } else if (!medians_[m] || *medians_[m] <= 0 || !std::isfinite(*medians_[m])) {
      notes_.push_back(fmt::format("{}: the round's median is {}; the absolute floor alone judges",
                                   MeasureName(static_cast<int>(m)), medians_[m] && *medians_[m] > 0 ? "unbounded" : "zero"));
    } else {
      relative_on_[m] = true;
    }
  }
  for (std::size_t i = first; i < runs_.size(); ++i) {
    RunRecord& r = runs_[i];
    for (int node : {r.run.a, r.run.b}) r1_runs_of_[static_cast<std::size_t>(node)].push_back(i);
    if (!r.figures.ran) {
      r.low = true;
      if (r.figures.blamed && (*r.figures.blamed == r.run.a || *r.figures.blamed == r.run.b)) {
        const int blamed = *r.figures.blamed;
        Set(blamed, {Verdict::kCouldNotRun, 0, {}, i, {}, r.figures.why});
        const int other = blamed == r.run.a ? r.run.b : r.run.a;
        if (verdicts_[static_cast<std::size_t>(other)].verdict != Verdict::kCouldNotRun) {
          suspect_on_[static_cast<std::size_t>(other)].push_back(0);
        }
      } else {
        suspect_on_[static_cast<std::size_t>(r.run.a)].push_back(0);
        suspect_on_[static_cast<std::size_t>(r.run.b)].push_back(0);
      }
      continue;
    }
    for (int m = 0; m < o_.measures; ++m) {
      if (!LowOn(r, m)) continue;
      r.low = true;
      for (int node : {r.run.a, r.run.b}) suspect_on_[static_cast<std::size_t>(node)].push_back(m);
    }
  }
  // Nothing can be judged on the pair figure: no floor, and no median to compare with.
  if (o_.floors[0] <= 0 && !relative_on_[0]) {
    for (std::size_t i = 0; i < n_; ++i) {
      Set(static_cast<int>(i), {Verdict::kUnjudged, 0, {}, {}, {}, "no absolute floor is set and no round median can judge"});
      suspect_on_[i].clear();
    }
  }
  for (std::vector<int>& s : suspect_on_) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  for (std::size_t i = 0; i < n_; ++i) {
    if (suspect_on_[i].empty() && verdicts_[i].verdict == Verdict::kGood && !r1_runs_of_[i].empty()) {
      good_.push_back(static_cast<int>(i));
    }
  }
  for (std::size_t i = good_.size(); i > 1; --i) std::swap(good_[i - 1], good_[rng_.Below(i)]);
}

void Isolator::PlanRound2() {
  std::vector<std::pair<int, int>> pairs;
  std::size_t cursor = 0;
  for (std::size_t s = 0; s < n_; ++s) {
    if (suspect_on_[s].empty()) continue;
    std::set<int> r1_partners;
    for (std::size_t i : r1_runs_of_[s]) r1_partners.insert(runs_[i].run.a == static_cast<int>(s) ? runs_[i].run.b : runs_[i].run.a);
    std::vector<int> with;
    for (std::size_t tried = 0; tried < good_.size() && with.size() < 2; ++tried) {
      const int g = good_[cursor++ % good_.size()];
      if (!r1_partners.count(g) && std::find(with.begin(), with.end(), g) == with.end()) with.push_back(g);
    }
    if (with.size() < 2) {
      Set(static_cast<int>(s), {Verdict::kUnjudged, suspect_on_[s].front(), {}, {}, {},
                                fmt::format("{} in round 1, and {} known-good node{} to pair it with (two are needed)", Low(),
                                            with.size() == 0 ? "no" : "only one", with.size() == 1 ? "" : "s")});
      suspect_on_[s].clear();
      continue;
    }
    for (int g : with) pairs.emplace_back(static_cast<int>(s), g);
  }
  Schedule(pairs, 2);
}

void Isolator::JudgeRound2() {
  std::map<int, std::vector<std::size_t>> r2_of;  // suspect -> its round-2 runs (the suspect is `a`)
  for (std::size_t i = round_start_; i < runs_.size(); ++i) {
    RunRecord& r = runs_[i];
    r2_of[r.run.a].push_back(i);
    for (int m = 0; m < o_.measures; ++m) r.low = r.low || LowOn(r, m) || !r.figures.ran;
  }
  std::map<std::pair<int, int>, int> pending;  // round-1 pair to retry -> the measure
  for (auto& [s, runs] : r2_of) {
    std::vector<int> bad;  // measures low with every known-good partner
    for (int m : suspect_on_[static_cast<std::size_t>(s)]) {
      std::vector<int> low_with;
      int measured = 0;
      std::string not_run;
      for (std::size_t i : runs) {
        const RunRecord& r = runs_[i];
        if (!r.figures.ran) {
          not_run = r.figures.why;
          continue;
        }
        const std::size_t mi = static_cast<std::size_t>(m);
        if (mi >= r.figures.values.size() || !r.figures.values[mi]) continue;
        ++measured;
        if (LowOn(r, m)) low_with.push_back(r.run.b);
      }
      if (measured == 0) {
        Set(s, {Verdict::kCouldNotRun, m, {}, {}, {},
                fmt::format("{} in round 1; no run with a known-good node measured {}{}", Low(), MeasureName(m),
                            not_run.empty() ? "" : ": " + not_run)});
      } else if (static_cast<int>(low_with.size()) == measured && measured >= 2) {
        bad.push_back(m);
      } else if (!low_with.empty()) {
        Set(s, {Verdict::kLinkOrPartner, m, low_with.front(), {}, {},
                fmt::format("{} on {} with one known-good node and not with another", Low(), MeasureName(m))});
      } else {
        // Fine with others: the round-1 runs it was low in are tried again, unless the partner
        // there turns out bad on the same measure.
        for (std::size_t i : r1_runs_of_[static_cast<std::size_t>(s)]) {
          const RunRecord& r = runs_[i];
          if (!r.low) continue;
          const int p = r.run.a == s ? r.run.b : r.run.a;
          // A run its partner was blamed for not running is explained by the partner.
          if (!r.figures.ran && r.figures.blamed == p) continue;
          pending.emplace(std::minmax(s, p), m);
        }
      }
    }
    // Low on the pair figure and on every rail (or with no rails): the node. Low on some rails
    // only: those rails, whether or not they drag the pair figure down with them.
    std::vector<int> rails;
    for (int m : bad) {
      if (m > 0) rails.push_back(m);
    }
    bad_measures_[static_cast<std::size_t>(s)] = bad;
    const bool pair_low = !bad.empty() && bad.front() == 0;
    if (pair_low && static_cast<int>(rails.size()) == o_.measures - 1) {
      Set(s, {Verdict::kBadNode, 0, {}, {}, {},
              fmt::format("{} on {} with {} different known-good nodes{}", Low(), MeasureName(0), 2,
                          rails.empty() ? "" : ", and on every rail")});
    } else if (!rails.empty()) {
      std::string which;
      for (int m : rails) which += (which.empty() ? "" : ", ") + std::to_string(m - 1);
      Set(s, {Verdict::kBadRail, rails.front(), {}, {}, {},
              fmt::format("rail{} {} {} with 2 different known-good nodes, the other rails not{}", rails.size() == 1 ? "" : "s",
                          which, Low(), pair_low ? "; it drags the pair figure down" : "")});
    } else if (pair_low) {
      Set(s, {Verdict::kBadNode, 0, {}, {}, {}, fmt::format("{} on {} with 2 different known-good nodes", Low(), MeasureName(0))});
    }
  }
  std::vector<std::pair<int, int>> retries;
  for (const auto& [pair, m] : pending) {
    auto bad_on = [&](int node) {
      const std::vector<int>& b = bad_measures_[static_cast<std::size_t>(node)];
      return verdicts_[static_cast<std::size_t>(node)].verdict == Verdict::kBadNode ||
             std::find(b.begin(), b.end(), m) != b.end();
    };
    if (bad_on(pair.first) || bad_on(pair.second)) continue;  // explained by the bad one
    retried_.push_back(pair);
    for (int t = 0; t < o_.retries; ++t) retries.push_back(pair);
  }
  Schedule(retries, 3);
}

void Isolator::JudgeRound3() {
  for (const auto& [a, b] : retried_) {
    int tries = 0, low = 0;
    std::string not_run;
    for (std::size_t i = round_start_; i < runs_.size(); ++i) {
      RunRecord& r = runs_[i];
      if (std::minmax(r.run.a, r.run.b) != std::minmax(a, b)) continue;
      if (!r.figures.ran) {
        not_run = r.figures.why;
        continue;
      }
      ++tries;
      bool l = false;
      for (int m = 0; m < o_.measures; ++m) l = l || LowOn(r, m);
      r.low = l;
      low += l ? 1 : 0;
    }
    for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      if (tries == 0) {
        Set(x, {Verdict::kCouldNotRun, 0, y, {}, {}, fmt::format("{} in round 1 with {}; no retry ran: {}", Low(), y, not_run)});
      } else if (low == tries) {
        Set(x, {Verdict::kBadLink, 0, y, {}, {},
                fmt::format("{} with this partner in round 1 and in {} of {} tries since, fine with known-good nodes", Low(),
                            low, tries)});
      } else {
        Set(x, {Verdict::kFlaky, 0, y, {}, {},
                fmt::format("{} with this partner in round 1, then in {} of {} tries; fine with known-good nodes", Low(), low, tries)});
      }
    }
  }
}

void Isolator::Finish() {
  for (RunRecord& r : runs_) {
    for (std::size_t m = 0; m < r.ratio.size(); ++m) {
      if (!r.figures.ran || m >= r.figures.values.size() || !r.figures.values[m] || !medians_[m] || *medians_[m] <= 0 ||
          !std::isfinite(*medians_[m])) {
        continue;
      }
      const double v = *r.figures.values[m];
      if (!o_.lower_is_better) {
        r.ratio[m] = v / *medians_[m];
      } else if (v > 0) {
        r.ratio[m] = *medians_[m] / v;  // 0 for a latency that never came (+inf)
      }
    }
  }
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    const RunRecord& r = runs_[i];
    for (int node : {r.run.a, r.run.b}) {
      NodeVerdict& v = verdicts_[static_cast<std::size_t>(node)];
      const std::size_t m = static_cast<std::size_t>(v.measure);
      if (m >= r.ratio.size() || !r.ratio[m]) continue;
      if (!v.worst_ratio || *r.ratio[m] < *v.worst_ratio) {
        v.worst_ratio = r.ratio[m];
        v.worst_run = i;
      }
    }
  }
  done_ = true;
}

std::optional<std::vector<PairRun>> Isolator::Next() {
  if (done_) return std::nullopt;
  while (pending_.empty()) {
    if (round_ > 0 && runs_.size() > round_start_) ++rounds_run_;
    switch (round_) {
      case 0:
        PlanRound1();
        break;
      case 1:
        if (runs_.size() > round_start_) JudgeRound1();
        PlanRound2();
        break;
      case 2:
        if (runs_.size() > round_start_) JudgeRound2();
        break;
      default:
        if (runs_.size() > round_start_) JudgeRound3();
        Finish();
        return std::nullopt;
    }
    ++round_;
    round_start_ = runs_.size();
  }
  handed_ = std::move(pending_.front());
  pending_.erase(pending_.begin());
  for (PairRun& r : handed_) r.wave = wave_;
  ++wave_;
  return handed_;
}

void Isolator::Record(std::span<const Figures> figures) {
  for (std::size_t i = 0; i < handed_.size(); ++i) {
    RunRecord r;
    r.run = handed_[i];
    r.figures = i < figures.size() ? figures[i] : Figures{false, "no figures were recorded for this run", {}, {}};
    r.ratio.assign(static_cast<std::size_t>(o_.measures), std::nullopt);
    runs_.push_back(std::move(r));
  }
  handed_.clear();
}

}  // namespace gpuforge::validate::isolate
