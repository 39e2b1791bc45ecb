#pragma once

// `gpuforge plan` online, and what `apply` shows before it asks: every selected node's state
// read over a Fleet and planned against its desired state, optionally with the diff of each
// changed file, and the saved plan made from it. Read-only; through remote::Connector only, so
// tests drive it with the recording fake. Nothing here prints (report/plan_report.h renders).

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/plan/node_plan.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::apply {

struct ReadPlansOptions {
  remote::FanoutOptions fanout;
  // Also read each changed file's old content and diff it against what apply would write,
  // secrets masked on both sides.
  bool diffs = false;
};

// One node's plan, or why there is none.
struct NodePlanRead {
  std::string node;
  std::optional<plan::NodePlan> plan;
  std::string error;         // "" when the plan was read
  std::string state_sha256;  // of the raw state output, for a saved plan
  // With ReadPlansOptions::diffs: path -> masked unified diff, or a one-line note for a file too
  // large, binary or unreadable.
  std::map<std::string, std::string> diffs;
};

// In target order; `desired` has an entry for every target.
std::vector<NodePlanRead> ReadPlans(remote::Connector& connector, std::span<const remote::Target> targets,
                                    const std::map<std::string, plan::DesiredNode>& desired,
                                    const ReadPlansOptions& o);

struct PlanCounts {
  std::size_t add = 0, change = 0, destroy = 0;
  std::size_t failed = 0;  // nodes whose plan could not be read
  // Nodes with changes (files, items, pending handlers or leftover temporaries): what
  // --detailed-exitcode reports, since a pending handler is a change with no file to count.
  std::size_t changed_nodes = 0;
};
PlanCounts CountPlans(std::span<const NodePlanRead> reads);

// The saved plan of `reads` (every one read): the nodes with changes, each with the digest of
// its desired state and of the state it was read in. `inventory` is recorded as given.
plan::SavedPlan SavedPlanFrom(std::span<const NodePlanRead> reads,
                              const std::map<std::string, plan::DesiredNode>& desired, std::string created,
                              std::string inventory, std::string inventory_sha256, std::string parts);

}  // namespace gpuforge::apply
