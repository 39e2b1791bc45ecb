#pragma once

// `gpuforge validate --isolate` (#32): the rounds of isolate.h run on real nodes. Each wave's
// pair runs go at once (no node is in two runs of a wave), each on fresh sessions through the
// agent, exactly as validate runs a pair check (RunPair); the pair's figure goes to the
// Isolator, and its verdicts come back as one validate Verdict per node (codes isolate.*), so
// the reports, --drain-failed and the exit codes treat them as any other check's.
//
// The measure today is tcp.bandwidth between the nodes' inventory addresses on the storage or
// control network the nodes share (its absolute floor is the check's: min_fraction x the
// network's rate). NCCL and per-rail RDMA pairs are measures the Isolator already takes;
// running them here is the next step of #32 (docs/validate.md#isolation).

#include <atomic>
#include <cstdint>
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

struct IsolationResult {
  std::uint64_t seed = 0;
  double relative = 0.9;
  std::string check;             // "tcp.bandwidth"
  std::string unit;              // "Gb/s"
  std::string network;           // the network the pairs ran on
  std::optional<double> floor;   // the absolute floor, in `unit`; nullopt where none applies
  std::string floor_text;        // "0.8 Gb/s (80% of 1 Gb/s, ...)"
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
};

// Runs the isolation over `targets`. An error (nothing ran) when the plan has no pair to run:
// fewer than two selected nodes on a storage or control network.
Result<IsolationResult> RunIsolation(remote::Connector& connector, std::span<const remote::Target> targets,
                                     const model::Cluster& c, const Thresholds& t, const ValidatePlan& tcp_plan,
                                     const plan::AgentBinary& agent, const IsolateRunOptions& o);

// The Isolator's verdict for node i as a validate Verdict (pure; for tests and the reports).
Verdict IsolationVerdict(const IsolationResult& r, std::size_t i);

// "--seed" text: decimal or 0x-hex, up to 2^64-1; an error naming what is wrong.
Result<std::uint64_t> ParseSeed(std::string_view text);

}  // namespace gpuforge::validate
