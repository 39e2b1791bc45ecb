#include <memory>

#include "cli/commands.h"
#include "gpuforge/estimate/estimate.h"
#include "gpuforge/report/estimate_report.h"

namespace gpuforge::cli {

Command EstimateCommand() {
  return {"estimate", "Power, cost, cooling, all-reduce, storage and checkpoint figures with formulas",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            AddFormatOption(app, &o->format);
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              estimate::Estimates e = estimate::Estimate(*cluster);
              if (o->format == Format::kJson) {
                ctx.Out(report::EstimateJson(*cluster, e).dump(2) + "\n");
              } else {
                ctx.Out(report::EstimateText(*cluster, e, ctx.out_style));
              }
              return static_cast<int>(kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
