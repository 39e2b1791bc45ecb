#pragma once

#include "cli/app.h"

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

}  // namespace gpuforge::cli
