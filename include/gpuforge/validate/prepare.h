#pragma once

// What `validate` settles before it touches a node, in two steps around the node selection
// (so a bad --checks is reported before a bad --nodes, and a bad --param after it): the checks
// chosen (--checks, --health) and the thresholds for this cluster; then the plan over the
// selected nodes with the --param settings, each checked against its probe's own parameters.
// Every mistake here is the user's, so each comes back as an Error that names the value.

#include <span>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/remote/target.h"
#include "gpuforge/validate/thresholds.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

struct RunRequest {
  std::vector<std::string> checks;  // --checks as given, each comma-separated; empty: every check
  bool health = false;              // --health: only the table's fast rows (HealthChecks)
  std::string model_table;          // the GPU model table; "" = DefaultModelTablePath()
  // --param as given: CHECK.NAME=VALUE words that name a threshold (storage.read.min_gbs_per_gpu)
  // set it for this run; the others are probe parameters for PlanRun.
  std::vector<std::string> params;
};

struct RunSetup {
  std::vector<std::string> checks;  // the check keys that run, in table order
  Thresholds thresholds;
  std::vector<std::string> probe_params;  // the --param words that are not thresholds, in order
};

// Sets each --param word that names a threshold on `t` (a later one wins) and returns the rest.
Result<std::vector<std::string>> ApplyThresholdParams(Thresholds& t, std::span<const std::string> params);

// The checks and this cluster's thresholds (defaults, the model table, the inventory's own).
Result<RunSetup> SetUpRun(const model::Cluster& c, const RunRequest& r);

// The plan of `checks` over `targets` (c's selected nodes, in order) with each --param
// CHECK.NAME=VALUE applied (ApplyParams).
Result<ValidatePlan> PlanRun(const model::Cluster& c, std::span<const remote::Target> targets,
                             std::span<const std::string> checks, std::span<const std::string> params);

// Whether some planned run has a probe, so the agent goes to the nodes.
bool NeedsAgent(const ValidatePlan& plan);

// "gpu,storage.read" and repeated --checks as words; empty pieces dropped.
std::vector<std::string> CheckWords(std::span<const std::string> given);

// Sets each CHECK.NAME=VALUE (in order: a later one wins) on the plan's runs of CHECK, after
// checking that CHECK runs a probe and that the probe takes NAME with that VALUE. The server
// side of a pair gets the same setting, except what is its own (role, peer, device, ib_port).
Status ApplyParams(ValidatePlan& plan, std::span<const std::string> params);

}  // namespace gpuforge::validate
