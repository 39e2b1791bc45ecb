#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "gpuforge/report/junit.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/report/lint_report.h"

namespace gpuforge::cli {

Command LintCommand() {
  return {"lint", "Check the cluster design against the guides' rules (no SSH)", [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              Format format = Format::kText;
              OutputFlags outputs;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            AddFormatWithJunit(app, &o->format);
            AddJunitOption(app, &o->outputs);
            app.footer("Exit codes: 0 no error findings, 1 error findings, 2 invalid inventory or usage.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              if (!CheckOutputs(ctx, o->outputs)) return static_cast<int>(kExitUsage);
              report::RunInfo info{cluster->name, o->inventory, std::chrono::system_clock::now(), 0, false};
              const auto t0 = std::chrono::steady_clock::now();
              lint::LintResult result = lint::Lint(*cluster);
              info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              if (o->format == Format::kJson) {
                ctx.Out(report::LintJson(*cluster, result).dump(2) + "\n");
              } else if (o->format == Format::kJunit) {
                ctx.Out(report::LintJunit(info, *cluster, result));
              } else {
                ctx.Out(report::LintText(*cluster, result, ctx.out_style));
              }
              if (!o->outputs.junit.empty() &&
                  !WriteOutput(ctx, "--junit", o->outputs.junit, report::LintJunit(info, *cluster, result))) {
                return static_cast<int>(kExitUsage);
              }
              return static_cast<int>(result.errors > 0 ? kExitFindings : kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
