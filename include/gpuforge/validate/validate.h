#pragma once

// `gpuforge validate`: which checks apply to which nodes (from the inventory), how each
// probe result is judged against the thresholds, and the verdicts. Pure: the SSH side is in
// validate/runner.h, the report in report/validate_report.h.

#include <chrono>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/facts/drift.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/probe/probe.h"
#include "gpuforge/validate/codes.h"
#include "gpuforge/validate/thresholds.h"

namespace gpuforge::validate {

struct Verdict {
  std::string check;   // "storage.read"
  std::string node;
  std::string entity;  // "node", "gpu0", "/mnt/data", "peer tb02"
  State state = State::kError;
  std::string code;    // stable reason for every non-PASS, from codes.h: "threshold.below"
  std::optional<double> measured;  // absent when nothing was measured
  std::string unit;
  std::string threshold;  // ">= 1.0 GB/s (guide 000 ...)"; "" when none applies
  std::string next_step;
  std::string detail;     // what happened, for people
  int attempts = 1;
};

// The catalogue: one row per check, in the order they run (node-local, then pairs).
struct CheckInfo {
  std::string_view key;
  std::string_view probe;  // the agent probe it runs; "" for `facts` (the facts script)
  std::string_view description;
  bool performance;  // retried: passes on the first good run of --retries
  bool pairwise;     // runs between two nodes
  int timeout_s;     // default per-check timeout
  bool group;        // runs on every selected node at once, as one job (multi-node NCCL)
};
std::span<const CheckInfo> Checks();
const CheckInfo* FindCheck(std::string_view key);

// --checks: keys or prefixes ("gpu", "storage.read"); empty selects all. An entry naming
// nothing is an error naming it.
Result<std::vector<std::string>> SelectChecks(std::span<const std::string> filter);

// One probe to run on a node (and, for pairs, with a peer).
struct PlannedRun {
  std::string check;
  std::string probe;
  std::string node;
  std::string peer;     // pairwise: the server side; "" otherwise
  std::string peer_address;
  std::map<std::string, std::string> params;
  // Pairwise: the server side's parameters (on `peer`); empty for other checks.
  std::map<std::string, std::string> peer_params;
  // Group checks: the member nodes in participant order (`node` is the first); their own
  // parameters are `params` plus node_index.
  std::vector<std::string> group;
  std::string entity;   // what the verdicts will name: "node", "/mnt/data", "peer tb02"
  bool performance = false;
  int timeout_s = 600;
};

struct ValidatePlan {
  std::vector<PlannedRun> runs;      // node-local first, then pairwise, then group checks
  std::vector<Verdict> not_applicable;  // SKIP verdicts for checks that cannot apply (with why)
};

// For the `nodes` (names from the inventory) and the selected checks.
ValidatePlan PlanChecks(const model::Cluster& c, std::span<const std::string> nodes, std::span<const std::string> checks);

// A probe result judged: one or more verdicts (per GPU, per metric). SKIP and ERROR results
// become SKIP and ERROR verdicts with the probe's code; never PASS.
std::vector<Verdict> Judge(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                           const probe::ProbeResult& r);

// A group check's results (one per member, in member order; a member without a result is
// nullptr) judged as one job: the figures every member agreed on, and each member's problems.
std::vector<Verdict> JudgeGroup(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                std::span<const probe::ProbeResult* const> results);

// `facts` findings as verdicts: one FAIL per drift, or one PASS for a node without drift.
std::vector<Verdict> JudgeDrift(std::span<const facts::Drift> drift, std::span<const std::string> nodes);

// Whether a performance check's verdicts are good enough to stop retrying.
bool Good(std::span<const Verdict> v);

// 0 all passed (warnings allowed unless strict); 1 any FAIL (or, with strict, any WARN or
// nothing measured at all: every check skipped); 2 any ERROR, an unreachable node or a SKIP
// caused by one.
int ExitCode(std::span<const Verdict> v, bool strict);

}  // namespace gpuforge::validate
