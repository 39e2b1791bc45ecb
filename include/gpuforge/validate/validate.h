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
#include <utility>
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
  // Wall time of the run that gave it, every attempt together (JUnit's testcase time); absent
  // where nothing ran on a node (planned out, unreachable, facts).
  std::optional<double> seconds;
  // NCCL busbw verdicts: the sweep's out-of-place (message bytes, busbw GB/s) rows, for plots;
  // empty for every other check.
  std::vector<std::pair<double, double>> curve;
  // Planned out: the check does not apply to this node by its role or profile (GPU checks on a
  // login node). State SKIP with the reason's code, but not a result: reports do not list it,
  // they count it in one line, and exit codes ignore it. A SKIP without it should have run.
  bool left_out = false;
};

// --checks: keys or prefixes ("gpu", "storage.read"); empty selects all. An entry naming
// nothing is an error naming it.
Result<std::vector<std::string>> SelectChecks(std::span<const std::string> filter);

struct CheckInfo;

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
  bool performance = false;  // the row's retry policy says a FAIL is tried again
  int timeout_s = 600;
  const CheckInfo* info = nullptr;  // the row it was planned from (PlanChecks sets it)
};

struct ValidatePlan {
  std::vector<PlannedRun> runs;      // node-local first, then pairwise, then group checks
  // SKIP verdicts for checks that should run here but cannot (GPUs of a vendor gpuforge has
  // no probes for), with why; listed like any result.
  std::vector<Verdict> not_applicable;
  // Checks that do not apply (no GPU in the profile, storage on a login node, one node for a
  // pair check): left_out verdicts with the reason's code, counted, not listed.
  std::vector<Verdict> left_out;
};

// The check table. A row is everything about a check: where it applies (its planner), how it
// runs (its shape, retry policy and timeout) and how its result is judged, so that PlanChecks,
// Judge and the runner dispatch through it and a new check is one row.
enum class Shape {
  kNode,   // on one node at a time; nodes in parallel
  kPair,   // between two nodes, one pair at a time: the probe's server side on the peer
  kGroup,  // on every member node at once, as one job (multi-node NCCL)
};

struct RetryPolicy {
  bool on_fail = false;             // a FAIL is tried again, up to --retries; the first good run counts
  std::string_view except_code = {};  // ... unless a verdict carries this code ("nccl.wrong_data")
};

// What a planner sees: the cluster, the selected nodes (inventory order) and, for node-shaped
// checks, the node being planned (nullptr for pairs and groups, which are planned once).
struct PlanContext {
  const model::Cluster& cluster;
  std::span<const std::string> nodes;
  const model::Node* node = nullptr;
};
// Adds the check's runs to the plan; where it cannot run, the SKIP verdicts, and where it does
// not apply, what was left out.
using Planner = void (*)(const PlanContext& ctx, const CheckInfo& check, ValidatePlan& plan);
// A probe result (which may be a SKIP or ERROR) judged: one or more verdicts, never a PASS for
// a result that is not ok.
using JudgeFn = std::vector<Verdict> (*)(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                         const probe::ProbeResult& r);
// A group check's results, one per member in member order (nullptr: the member gave none).
using GroupJudgeFn = std::vector<Verdict> (*)(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                              std::span<const probe::ProbeResult* const> results);

struct CheckInfo {
  std::string_view key = {};          // "storage.read"
  std::string_view probe = {};        // the agent probe it runs; "" for `facts` (the facts script)
  std::string_view description = {};
  Shape shape = Shape::kNode;
  RetryPolicy retry = {};
  int timeout_s = 600;           // default per-check timeout
  // Fast (seconds, no load on the GPUs): part of `validate --local --health`, the check a Slurm
  // HealthCheckProgram or prolog runs.
  bool health = false;
  // Planned only where the inventory gives the node NVIDIA GPUs, so a probe there that sees no
  // GPU (gpu.none) is the node's FAIL gpu.not_visible, not a SKIP.
  bool needs_gpu = false;
  Planner plan = nullptr;
  JudgeFn judge = nullptr;             // node and pair checks
  GroupJudgeFn judge_group = nullptr;  // group checks
};
// In the order they are planned, run and listed: node-local, then pairs and groups.
std::span<const CheckInfo> Checks();
const CheckInfo* FindCheck(std::string_view key, std::span<const CheckInfo> table = Checks());
// The row a planned run came from (PlannedRun::info, else found by its key); nullptr for none.
const CheckInfo* CheckOf(const PlannedRun& run);
Shape ShapeOf(const PlannedRun& run);

// Building blocks of planners: a run of the check on the node with the row's probe, retry
// policy and timeout (entity "node"); a SKIP verdict with its code for a node where it should
// run but cannot; a left-out entry with its code for a node where it does not apply.
PlannedRun RunOf(const CheckInfo& check, const model::Node& node);
void NotApplicable(ValidatePlan& plan, const CheckInfo& check, const std::string& node, std::string_view code,
                   std::string why);
void LeaveOut(ValidatePlan& plan, const CheckInfo& check, const std::string& node, std::string_view code,
              std::string why);

// For the `nodes` (names from the inventory) and the selected checks: every node-shaped row's
// planner per node, in table order, then the pair and group rows' once.
ValidatePlan PlanChecks(const model::Cluster& c, std::span<const std::string> nodes, std::span<const std::string> checks,
                        std::span<const CheckInfo> table = Checks());

// A probe result judged by its row's judge: one or more verdicts (per GPU, per metric). SKIP
// and ERROR results become SKIP and ERROR verdicts with the probe's code; never PASS.
std::vector<Verdict> Judge(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                           const probe::ProbeResult& r);

// A group check's results (one per member, in member order; a member without a result is
// nullptr) judged as one job: the figures every member agreed on, and each member's problems.
std::vector<Verdict> JudgeGroup(const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                std::span<const probe::ProbeResult* const> results);

// `facts` findings as verdicts: one FAIL per drift, or one PASS for a node without drift. The
// next step is the drift code's, made true for the subject where the inventory tells more (a
// missing Ethernet NIC is not an mlx5_core problem); the threshold says where the expected
// value comes from.
std::vector<Verdict> JudgeDrift(const model::Cluster& c, std::span<const facts::Drift> drift,
                                std::span<const std::string> nodes);

// Whether a performance check's verdicts are good enough to stop retrying.
bool Good(std::span<const Verdict> v);
// Whether an attempt's verdicts call for another, by the run's retry policy: a FAIL, and no
// verdict with the policy's exception code. (The attempt count is RunOptions::retries.)
bool RetryAgain(const PlannedRun& run, std::span<const Verdict> last);

// 0 all passed (warnings allowed unless strict); 1 any FAIL (or, with strict, any WARN or
// nothing measured at all: every check skipped or left out); 2 any ERROR, an unreachable node
// or a SKIP caused by one. Left-out entries count for nothing else.
int ExitCode(std::span<const Verdict> v, bool strict);
// Whether one verdict fails the run by ExitCode's rule: FAIL or ERROR, or WARN with strict
// (a left-out entry never does). Reports, drains and health lines judge a node by it.
bool FailsRun(const Verdict& v, bool strict);

}  // namespace gpuforge::validate
