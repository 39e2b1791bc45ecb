#pragma once

// `gpuforge validate --isolate` (#32): the rounds of isolate.h run on real nodes. Each wave's
// pair runs go at once (no node is in two runs of a wave), each on fresh sessions through the
// agent, exactly as validate runs a pair check (RunPair); the pair's figure goes to the
// Isolator, and its verdicts come back as one validate Verdict per node (codes isolate.*), so
// the reports, --drain-failed and the exit codes treat them as any other check's.
//
// Two measures (IsolationMeasure):
//   rdma.write_bw   per compute rail: each pair runs ib_write_bw's method on every rail in turn
//                   (node a's HCA against the same rail of node b, RailRuns in planners.h).
//                   Measure 0 is the pair's sum over its rails, measure r rail r-1; a rail's
//                   absolute floor is rdma.write.min_fraction x its line rate. The default where
//                   the compute network is InfiniBand or RoCE.
//   tcp.bandwidth   between the nodes' inventory addresses on the storage or control network
//                   they share; its floor is tcp.bandwidth.min_fraction x the network's rate.
//   nccl.multinode  (--checks nccl) a 2-node NCCL all-reduce per pair, 1 to 8 GiB, one agent per
//                   node as validate's group check runs it (RunGroupCheck); the figure is the
//                   bus bandwidth at the largest size, the floor nccl.allreduce.min_fraction x
//                   the slowest node's compute NICs together. A slow GPU or NVLink shows here
//                   and not in the RDMA measure.
//   rdma.write_lat  (--checks rdma.write_lat) per compute rail as rdma.write_bw, ib_write_lat's
//                   ping-pong; lower is better: measure 0 is the pair's slowest rail, measure r
//                   rail r-1, each with rdma.write_lat.max_us as its ceiling. Its own run, not
//                   folded into the bandwidth pairs: a ping-pong behind a bandwidth stream
//                   measures the queue, not the path.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/remote/session.h"
#include "gpuforge/validate/isolate.h"
#include "gpuforge/validate/thresholds.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

struct IsolateRunOptions {
  std::uint64_t seed = 0;
  double relative = 0.9;   // isolate::Options::relative
  int retries = 2;         // isolate::Options::retries (round 3)
  int timeout_s = 0;       // per pair run; 0 = the check's own
  const std::atomic<bool>* cancel = nullptr;
  int fanout = 64;         // nodes worked on at once while the agent is made sure of
};

// What the pairs measure, planned from the validate plan of the one check --isolate runs.
struct IsolationMeasure {
  std::string check;                  // "rdma.write_bw", "rdma.write_lat", "tcp.bandwidth", "nccl.multinode"
  std::string unit = "Gb/s";          // "GB/s" for NCCL's bus bandwidth, "us" for latency
  bool lower_is_better = false;       // rdma.write_lat: floors are ceilings (isolate::Options)
  std::string network;                // the network the pairs run on
  std::vector<std::string> names;     // per measure: "the pair" (TCP), "the sum of rails", "the slowest rail", "rail 0 (mlx5_0)"
  std::vector<double> floors;         // per measure, in `unit`; 0: none
  std::string floor_text;             // where the floors come from
  std::vector<std::string> nodes;     // the selected nodes it applies to, in selection order
  // The runs of one pair, `a` the client: (measure, run) for each.
  std::function<std::vector<std::pair<int, PlannedRun>>(const model::Node& a, const model::Node& b)> runs;
};

// The measure for `plan` (validate's plan of tcp.bandwidth, rdma.write_bw or nccl.multinode over the selected
// nodes, --param words applied). An error naming why when there is no pair to run.
Result<IsolationMeasure> PlanIsolationMeasure(const model::Cluster& c, const Thresholds& t, const ValidatePlan& plan,
                                              std::span<const std::string> selected,
                                              std::span<const std::string> probe_params);

// How one planned pair run is carried out: the verdicts RunPair gives (a node it could not
// reach: a node.unreachable verdict for it). RunIsolation's goes through the agent on fresh
// sessions; the tests' runs the probes in-process against fakes.
using PairRunner = std::function<std::vector<Verdict>(const PlannedRun& run)>;

struct IsolationResult {
  std::uint64_t seed = 0;
  double relative = 0.9;
  std::string check;             // "tcp.bandwidth"
  std::string unit;              // "Gb/s"
  bool lower_is_better = false;  // latency: floors are ceilings, ratios median / figure
  std::string network;           // the network the pairs ran on
  std::optional<double> floor;   // the absolute floor, in `unit`; nullopt where none applies
  std::string floor_text;        // "0.8 Gb/s (80% of 1 Gb/s, ...)"
  std::vector<std::string> measure_names;            // IsolationMeasure::names
  std::vector<double> floors;                        // per measure; 0: none
  std::vector<std::optional<double>> medians;        // round-1 median per measure
  std::vector<std::vector<std::string>> rail_nics;   // per node: its compute HCA per rail position
  std::map<std::string, std::string> cables;         // "node:nic" -> "leaf3:17 (inv.yaml:97)", the inventory's links
  std::vector<std::string> nodes;  // the Isolator's node index -> name
  std::vector<isolate::RunRecord> runs;
  std::vector<isolate::NodeVerdict> node_verdicts;  // by index, as nodes
  std::optional<double> median;  // round-1 median of the pair figure
  std::vector<std::string> notes;
  int rounds = 0;
  int waves = 0;
  // One per selected node (isolate.* codes; node.unreachable or agent.missing for a node that
  // never got into a round), suspects first.
  std::vector<Verdict> verdicts;

  // The words every report uses for this result's direction, chosen here once: a bandwidth is
  // low, below its floor, and its worst is its lowest; a latency is slow, above its ceiling, and
  // its worst is its slowest.
  struct Words {
    const char* beyond;  // "below" / "above"
    const char* bound;   // "floor" / "ceiling"
    const char* side;    // ">=" / "<=": what passes
    const char* worst;   // "lowest" / "slowest"
    const char* flag;    // "LOW" / "SLOW": a suspect run's mark
  };
  Words words() const {
    return lower_is_better ? Words{"above", "ceiling", "<=", "slowest", "SLOW"}
                           : Words{"below", "floor", ">=", "lowest", "LOW"};
  }
  // The relative rule as the reader wants it: 0.9 (x the median, at least) for a bandwidth,
  // 1.11 (x the median, at most) for a latency.
  double RelativeShown() const { return lower_is_better ? 1 / relative : relative; }
  // `x` is worse than `y` on this measure's direction.
  bool Worse(double x, double y) const { return lower_is_better ? x > y : x < y; }
  // `v` is on the wrong side of measure m's floor (a ceiling for latency).
  bool BeyondFloor(std::size_t m, double v) const { return m < floors.size() && floors[m] > 0 && Worse(v, floors[m]); }
  // A ratio as the Isolator keeps it (below 1 is worse) as the reader wants it: figure / median.
  std::optional<double> Shown(std::optional<double> ratio) const {
    if (!ratio || !lower_is_better) return ratio;
    return *ratio > 0 ? std::optional<double>(1 / *ratio) : std::nullopt;
  }
};

// Runs the isolation over `targets` (PlanIsolationMeasure, the agent on each node, Isolate). An
// error (nothing ran) when the plan has no pair to run.
Result<IsolationResult> RunIsolation(remote::Connector& connector, std::span<const remote::Target> targets,
                                     const model::Cluster& c, const Thresholds& t, const ValidatePlan& plan,
                                     std::span<const std::string> probe_params, const plan::AgentBinary& agent,
                                     const IsolateRunOptions& o);

// The rounds over `nodes` with `runner`, judged; `outside` (nodes that never entered a round)
// is appended to the verdicts. The cabling join comes from the inventory's links.
IsolationResult Isolate(const model::Cluster& c, const IsolationMeasure& m, std::vector<std::string> nodes,
                        const PairRunner& runner, const IsolateRunOptions& o, std::vector<Verdict> outside = {});

// The Isolator's verdict for node i as a validate Verdict (pure; for tests and the reports).
Verdict IsolationVerdict(const IsolationResult& r, std::size_t i);

// "--seed" text: decimal or 0x-hex, up to 2^64-1; an error naming what is wrong.
Result<std::uint64_t> ParseSeed(std::string_view text);

}  // namespace gpuforge::validate
