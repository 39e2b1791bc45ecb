#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "gpuforge/estimate/estimate.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/report/estimate_report.h"
#include "gpuforge/report/lint_report.h"

namespace gpuforge::cli {

namespace {

std::string ResourceLine(const plan::Resource& r, const report::Style& s) {
  return fmt::format("    {} {:<9} {:<42} {}\n", s.Green("+"), plan::ToString(r.kind), r.id, r.summary);
}

}  // namespace

Command PlanCommand() {
  return {"plan", "Show what gpuforge would configure; --offline: lint, estimates and desired state without SSH",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              Format format = Format::kText;
              bool offline = false;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            app.add_flag("--offline", o->offline,
                         "Do not connect to nodes: lint, estimates and the desired state only "
                         "(the only mode in this version)");
            AddFormatOption(app, &o->format);
            app.footer("Exit codes: 0 plan made, design clean of errors; 1 lint errors; 2 invalid inventory or usage.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              if (!o->offline && ctx.verbosity >= 0) {
                ctx.Err("gpuforge: note: reading node state over SSH arrives with the remote layer; planning offline\n");
              }
              lint::LintResult lint_result = lint::Lint(*cluster);
              estimate::Estimates est = estimate::Estimate(*cluster);
              std::vector<plan::NodeClass> classes = plan::FoldDesiredState(*cluster);
              std::size_t resources = 0;
              for (const auto& nc : classes) resources += nc.resources.size() * nc.count;
              int code = lint_result.errors > 0 ? kExitFindings : kExitOk;
              if (o->format == Format::kJson) {
                nlohmann::ordered_json j;
                j["schema"] = "gpuforge.plan/v1";
                j["mode"] = "offline";
                j["lint"] = report::LintJson(*cluster, lint_result);
                j["estimates"] = report::EstimateJson(*cluster, est);
                j["nodes"] = nlohmann::ordered_json::array();
                for (const auto& nc : classes) {
                  nlohmann::ordered_json rs = nlohmann::ordered_json::array();
                  for (const auto& r : nc.resources) {
                    rs.push_back({{"action", "create"}, {"kind", plan::ToString(r.kind)}, {"id", r.id},
                                  {"summary", r.summary}, {"reason", r.reason}});
                  }
                  j["nodes"].push_back({{"nodes", nc.nodes}, {"count", nc.count}, {"profile", nc.profile}, {"resources", rs}});
                }
                j["summary"] = {{"add", resources}, {"change", 0}, {"destroy", 0}};
                ctx.Out(j.dump(2) + "\n");
                return code;
              }
              const report::Style& s = ctx.out_style;
              ctx.Out(s.Bold(fmt::format("gpuforge plan: {} (offline: nothing read from nodes)\n\n", cluster->name)));
              ctx.Out(s.Bold("Design lint\n"));
              ctx.Out(report::LintText(*cluster, lint_result, s));
              ctx.Out("\n");
              ctx.Out(report::EstimateText(*cluster, est, s));
              ctx.Out("\n" + s.Bold("Desired state") + " (offline, so every resource shows as an add)\n");
              for (const auto& nc : classes) {
                ctx.Out(fmt::format("  {} ({} node{}, profile {}): {} to add\n", s.Bold(nc.nodes), nc.count,
                                    nc.count == 1 ? "" : "s", nc.profile, nc.resources.size()));
                for (const auto& r : nc.resources) ctx.Out(ResourceLine(r, s));
              }
              ctx.Out(fmt::format("\nPlan: {} to add, 0 to change, 0 to destroy.\n", resources));
              return code;
            };
          }};
}

}  // namespace gpuforge::cli
