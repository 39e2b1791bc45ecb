#pragma once

// How a node plan reads: Terraform's +/~/- lines with each change's impact, the per-node
// summary, the total line ops know ("Plan: N to add, M to change, K to destroy."), and JSON;
// and the whole of `gpuforge plan`, online (every node read) and offline (lint, estimates and
// the folded desired state), as text and as the versioned JSON (gpuforge.plan/v1).

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuforge/apply/read_plans.h"
#include "gpuforge/estimate/estimate.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/plan/desired.h"
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

// Online: the header, each node's plan (identical plans and diffs folded), the nodes that
// could not be read, the total; `only` is --only as given, `diffs` whether they were read,
// `saved_to` the file the plan was saved to ("" when it was not).
std::string PlanOnlineText(std::string_view cluster, std::span<const apply::NodePlanRead> reads, std::string_view only,
                           bool diffs, std::string_view saved_to, const Style& s);
nlohmann::ordered_json PlanOnlineJson(std::string_view cluster, std::span<const apply::NodePlanRead> reads, bool diffs);

// Offline: nothing read from nodes, so every resource of the desired state is an add.
std::string PlanOfflineText(const model::Cluster& c, const lint::LintResult& lint, const estimate::Estimates& est,
                            std::span<const plan::NodeClass> classes, const Style& s);
nlohmann::ordered_json PlanOfflineJson(const model::Cluster& c, const lint::LintResult& lint,
                                       const estimate::Estimates& est, std::span<const plan::NodeClass> classes);

}  // namespace gpuforge::report
