#pragma once

// Acting on a validate run in Slurm (`validate --drain-failed`, `--resume-passed`): a node
// that failed is drained with a reason naming gpuforge and the failure, so no new job lands on
// it; a node gpuforge drained and that now passes is resumed. A node someone else drained is
// never touched: its reason does not start with "gpuforge:", and a person's reason outranks a
// probe's. The plan is pure (verdicts + what Slurm says of its nodes -> commands); the commands
// run on the controller (scheduler.controller) through the same sessions validate uses.

#include <nlohmann/json.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/remote/session.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

// The prefix of every reason gpuforge sets, and how it knows a drain as its own.
inline constexpr std::string_view kDrainReasonPrefix = "gpuforge:";

// What Slurm says of one node: `sinfo --noheader --Node --format=%N|%T|%E` (node, long state,
// reason). A node in several partitions is listed once.
struct SlurmNode {
  std::string name;
  std::string state;   // "idle", "drained", "draining", "mixed", "down*", ...
  std::string reason;  // "none" when it has none
  bool drained() const;  // drained or draining
  bool ours() const;     // the reason is gpuforge's
};

// The command that lists them, and its output parsed. Output from a node is hostile: a line
// that is not NAME|STATE|REASON with a name in the inventory's alphabet is an error naming it.
inline constexpr std::string_view kSinfoCommand = "sinfo --noheader --Node --format='%N|%T|%E'";
Result<std::vector<SlurmNode>> ParseSinfoNodes(std::string_view out);

enum class DrainStep { kDrain, kResume, kLeave };

struct DrainAction {
  std::string node;
  DrainStep step = DrainStep::kLeave;
  std::string reason;   // kDrain: the reason set
  std::string why;      // for people: why this step (or why it is left)
  std::string command;  // the shell command run on the controller; "" for kLeave
};

// The reason for a node's failures, within what Slurm shows well (sinfo -R's column is 20 wide
// by default; the whole reason is kept in slurmctld's state): "gpuforge: CODE CHECK ENTITY"
// for the first failure, " (+N more)" for the rest, printable ASCII without quotes, at most
// kMaxReason characters.
inline constexpr std::size_t kMaxReason = 120;
std::string DrainReason(std::span<const Verdict* const> failed);

struct DrainOptions {
  bool drain_failed = false;
  bool resume_passed = false;
  bool strict = false;  // a WARN fails the node too, as it fails the run
};

// One action per node the verdicts name (inventory nodes only: a group check names a hostlist,
// which says no single node is bad), in the order the verdicts name them.
std::vector<DrainAction> PlanDrain(const model::Cluster& c, std::span<const Verdict> verdicts,
                                   std::span<const SlurmNode> slurm, const DrainOptions& o);

// Lists the nodes through `controller` (nullptr: none reachable) and runs the plan's commands.
// The actions taken, and for every node that needed a step and did not get it (no controller,
// sinfo or scontrol failed) an ERROR verdict of check "slurm.drain" with the reason, which the
// caller adds to the run's verdicts: a drain that did not happen is never silent.
struct DrainResult {
  std::vector<DrainAction> actions;
  std::vector<Verdict> errors;
};
DrainResult RunDrain(remote::Session* controller, std::string_view controller_name, const model::Cluster& c,
                     std::span<const Verdict> verdicts, const DrainOptions& o);

// "slurm: gpu002 drained 2 checks failed: Reason=..." per action; and as JSON (validate's
// "slurm" key): [{"node", "step": "drain"|"resume"|"leave", "reason", "why"}].
std::string DrainText(const DrainResult& r);
nlohmann::ordered_json DrainJson(const DrainResult& r);

}  // namespace gpuforge::validate
