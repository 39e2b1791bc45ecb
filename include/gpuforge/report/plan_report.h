#pragma once

// How a node plan reads: Terraform's +/~/- lines with each change's impact, the per-node
// summary, the total line ops know ("Plan: N to add, M to change, K to destroy."), and JSON.

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuforge/plan/file_plan.h"
#include "gpuforge/report/style.h"

namespace gpuforge::report {

// "+ /etc/nccl.conf (mode 0644)   live: next job" lines, files then packages, modules, sysctl,
// services; unchanged entries are left out. `diffs` (path -> unified diff, already masked) are
// printed under their file, indented.
std::string PlanLines(const plan::NodePlan& p, const Style& s, const std::map<std::string, std::string>* diffs = nullptr);

// "3 to add, 1 to change, 0 to destroy; takes effect: restart (drain first)" or "no changes".
std::string PlanSummary(const plan::NodePlan& p);

std::string PlanTotal(std::size_t add, std::size_t change, std::size_t destroy);

nlohmann::ordered_json PlanJson(const plan::NodePlan& p, const std::map<std::string, std::string>* diffs = nullptr);

}  // namespace gpuforge::report
