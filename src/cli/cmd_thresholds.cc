#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "gpuforge/report/thresholds_report.h"
#include "gpuforge/validate/pass_marks.h"
#include "gpuforge/validate/prepare.h"

namespace gpuforge::cli {

Command ThresholdsCommand() {
  return {"thresholds", "Every pass mark validate will use, with its value, unit and origin",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              std::string profile;
              std::vector<std::string> params;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            CLI::App* show = app.add_subcommand(
                "show", "The thresholds (default and its source, inventory, --param) and each profile's marks from them");
            CompleteAs(show->add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            CompleteAs(show->add_option("--profile", o->profile, "Only the nodes of this profile"), Values::kProfiles)
                ->option_text("PROFILE");
            CompleteAs(show->add_option("--param", o->params,
                                        "KEY=VALUE: a threshold as `validate --param` sets it for a run, repeatable "
                                        "(storage.read.min_gbs_per_gpu=2GB/s)"),
                       Values::kThresholdKeys)
                ->option_text("KEY=VALUE");
            AddFormatOption(*show, &o->format);
            show->footer("The GPU model table is the installed one, or GPUFORGE_VALIDATION_DATA. docs/validate.md lists "
                         "every threshold.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              // The same set-up validate does (checks aside): the model table, the inventory's
              // thresholds, then the --param words that name one.
              const std::string table_path = validate::DefaultModelTablePath();
              Result<validate::RunSetup> setup = validate::SetUpRun(*cluster, {{}, false, table_path, o->params});
              if (!setup.ok()) {
                ctx.Error(setup.error().message);
                return static_cast<int>(kExitUsage);
              }
              if (!setup->probe_params.empty()) {
                // A probe parameter sets how a check measures, not what it must reach.
                ctx.Error(fmt::format("--param {}: not a threshold (probe parameters such as storage.read.size change "
                                      "how a check measures, not its pass mark); the thresholds are listed by "
                                      "`gpuforge thresholds show`",
                                      setup->probe_params.front()));
                return static_cast<int>(kExitUsage);
              }
              Result<validate::PassMarks> marks = validate::ListPassMarks(*cluster, setup->thresholds, table_path, o->profile);
              if (!marks.ok()) {
                ctx.Error(marks.error().message);
                return static_cast<int>(kExitUsage);
              }
              if (o->format == Format::kJson) {
                ctx.OutJson(report::PassMarksJson(cluster->name, *marks));
              } else {
                ctx.Out(report::PassMarksText(cluster->name, *marks, ctx.out_style));
              }
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
