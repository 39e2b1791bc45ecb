#pragma once

// Finding the bad node or link among many (#32): the rounds of pair runs and the judging of
// their figures. Pure: node indices and figures in, the next runs and the verdicts out;
// running a pair (NCCL, RDMA, TCP) is the caller's. Driven as
//
//   Isolator iso(nodes, options);
//   while (std::optional<std::vector<PairRun>> wave = iso.Next()) iso.Record(run(*wave));
//   iso.Verdicts();
//
// so one piece of code plans a run on real nodes and the simulation in bench/.
//
// Round 1 pairs every node at random (seeded; an odd node runs with a random pair's member in
// a second wave). A run is suspect on a measure below its absolute floor, or below `relative`
// x the median of all round-1 runs on that measure (the relative rule needs two runs or more,
// and a median above zero). Round 2 runs each suspect with two different known-good nodes
// (in no failing round-1 run): low with both, the node is bad (on measure 0) or its rail is
// (measure r); low with one, the link to that partner or the partner; low with neither and
// its round-1 partner is not bad either, round 3 runs the round-1 pair again `retries` times:
// low every time, the link between the two (each is fine with others); else flaky, every try
// kept. docs/validate.md#isolation has the rules and their sources.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gpuforge::validate::isolate {

// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
// the same sequence from a seed on every platform. std::shuffle's order is left to the
// standard library, so a printed seed would not reproduce a run built elsewhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t Next();
  // Uniform in [0, n) for n > 0, without modulo bias (rejection).
  std::size_t Below(std::size_t n);

 private:
  std::uint64_t s_;
};

struct PairRun {
  int a = 0, b = 0;
  int round = 1;  // 1 random pairs, 2 each suspect with known-good nodes, 3 a pair again
  int wave = 0;   // counted over the whole isolation; no node is in two runs of one wave
};

// What one run measured. Measure 0 is the pair's figure (NCCL bus bandwidth, or TCP
// throughput where that is all there is); measures 1..R its rails (RDMA write bandwidth on
// rail r-1). Higher is better, unless Options::lower_is_better (RDMA write latency: measure 0
// the slowest rail's, r rail r-1's).
struct Figures {
  bool ran = false;
  std::string why;             // when it did not run: "gpu017: peer never connected"
  std::optional<int> blamed;   // when it did not run: the node that caused it, where known
  std::vector<std::optional<double>> values;  // per measure; nullopt where that measure did not run
};

struct Options {
  std::uint64_t seed = 0;
  int measures = 1;              // 1 + rails
  std::vector<double> floors;    // absolute floor per measure; 0 or missing: none
  double relative = 0.9;         // a run below this x its round-1 median is suspect
  int retries = 2;               // round 3: tries of a round-1 pair whose nodes passed with others
  // Latency: a run is suspect above its floor (a ceiling then) or above median / `relative`,
  // and its ratio is median / figure, so a ratio below 1 is the worse side on every measure.
  bool lower_is_better = false;
};

enum class Verdict {
  kGood,
  kBadNode,        // low on measure 0 with every partner
  kBadRail,        // low on rail `measure` - 1 with every partner
  kBadLink,        // low only with `partner`, every try: the path between the two
  kLinkOrPartner,  // low with `partner`, fine with another known-good node
  kFlaky,          // low once, not again
  kCouldNotRun,    // a run it was in did not run, and it was blamed (or no partner was left)
  kUnjudged,       // no rule could judge it: fewer than two known-good nodes, a zero median without a floor
};
const char* VerdictName(Verdict v);

struct NodeVerdict {
  Verdict verdict = Verdict::kGood;
  int measure = 0;                // the measure the verdict is on
  std::optional<int> partner;     // kBadLink, kLinkOrPartner
  std::optional<std::size_t> worst_run;  // index into Isolator::Runs() of its lowest figure on `measure`
  std::optional<double> worst_ratio;     // that figure / the round-1 median of `measure` (inverted where lower is better)
  std::string why;
};

// A run with what it measured, and each figure's ratio to the round-1 median of its measure
// (median / figure where lower is better: below 1 is worse either way; 0 for a latency that
// never came, +inf).
struct RunRecord {
  PairRun run;
  Figures figures;
  std::vector<std::optional<double>> ratio;
  bool low = false;  // below a floor or the relative rule on some measure
};

class Isolator {
 public:
  Isolator(std::size_t nodes, Options options);

  // The next wave's runs; nullopt once every node has its verdict. Each call after the first
  // must follow a Record of the wave before.
  std::optional<std::vector<PairRun>> Next();
  // One Figures per run of the last wave, in order.
  void Record(std::span<const Figures> figures);

  const std::vector<NodeVerdict>& Verdicts() const { return verdicts_; }
  const std::vector<RunRecord>& Runs() const { return runs_; }
  // Round-1 median per measure (nullopt: nothing ran on it).
  const std::vector<std::optional<double>>& Medians() const { return medians_; }
  // Why a rule was off ("2 nodes: no majority to compare with; the absolute floor alone").
  const std::vector<std::string>& Notes() const { return notes_; }
  int Rounds() const { return rounds_run_; }
  int Waves() const { return wave_; }

 private:
  bool LowOn(const RunRecord& r, int m) const;
  const char* Low() const { return o_.lower_is_better ? "slow" : "low"; }
  void PlanRound1();
  void JudgeRound1();
  void PlanRound2();
  void JudgeRound2();
  void JudgeRound3();
  void Schedule(const std::vector<std::pair<int, int>>& pairs, int round);
  void Set(int node, NodeVerdict v);
  void Finish();

  std::size_t n_;
  Options o_;
  Rng rng_;
  int round_ = 0;
  int rounds_run_ = 0;
  int wave_ = 0;
  std::vector<std::vector<PairRun>> pending_;  // waves planned and not yet handed out
  std::vector<PairRun> handed_;                // the wave handed out, awaiting Record
  std::size_t round_start_ = 0;                // first run of the current round in runs_
  std::vector<RunRecord> runs_;
  std::vector<std::optional<double>> medians_;
  std::vector<bool> relative_on_;             // per measure
  std::vector<NodeVerdict> verdicts_;
  std::vector<std::vector<int>> suspect_on_;   // per node: measures it was low on in round 1
  std::vector<std::vector<int>> bad_measures_; // per node: measures low with every known-good partner
  std::vector<int> good_;                      // known-good nodes, shuffled
  std::vector<std::vector<std::size_t>> r1_runs_of_;  // per node: its round-1 runs
  std::vector<std::pair<int, int>> retried_;   // round-3 pairs
  std::vector<std::string> notes_;
  bool done_ = false;
};

}  // namespace gpuforge::validate::isolate
