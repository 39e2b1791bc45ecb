#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/app.h"
#include "gpuforge/plan/file_plan.h"
#include "gpuforge/remote/target.h"

namespace gpuforge::cli {

// One function per subcommand, each in cmd_<name>.cc; the table in app.cc lists them.
Command LintCommand();
Command EstimateCommand();
Command InventoryCommand();
Command HostlistCommand();
Command PlanCommand();
Command RenderCommand();
Command RunCommand();
Command FactsCommand();
Command ApplyCommand();

// Shared by `plan` and `apply` (cmd_plan.cc): the files each target should hold, rendered with
// the inventory's file name as the header label so that the content does not depend on the
// directory gpuforge runs from. Prints the error and returns nullopt when rendering fails.
std::optional<std::map<std::string, std::vector<plan::DesiredFile>>> DesiredFilesFor(
    Context& ctx, const model::Cluster& cluster, std::span<const remote::Target> targets,
    const std::string& inventory);
// The text of one folded node plan: "  + PATH  impact: note" lines.
std::string FilePlanLines(const plan::NodePlan& p, const report::Style& s);

}  // namespace gpuforge::cli
