#include <memory>

#include "cli/commands.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/report/lint_report.h"

namespace gpuforge::cli {

Command LintCommand() {
  return {"lint", "Check the cluster design against the guides' rules (no SSH)", [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            AddFormatOption(app, &o->format);
            app.footer("Exit codes: 0 no error findings, 1 error findings, 2 invalid inventory or usage.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              lint::LintResult result = lint::Lint(*cluster);
              if (o->format == Format::kJson) {
                ctx.Out(report::LintJson(*cluster, result).dump(2) + "\n");
              } else {
                ctx.Out(report::LintText(*cluster, result, ctx.out_style));
              }
              return static_cast<int>(result.errors > 0 ? kExitFindings : kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
