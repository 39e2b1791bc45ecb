#include <fmt/format.h>
#include <nlohmann/json.hpp>


#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "gpuforge/base/files.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/read_plans.h"
#include "gpuforge/estimate/estimate.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/report/fold.h"
#include "gpuforge/report/plan_report.h"
#include "gpuforge/report/estimate_report.h"
#include "gpuforge/report/lint_report.h"

namespace gpuforge::cli {

namespace {

std::string ResourceLine(const plan::Resource& r, const report::Style& s) {
  return fmt::format("    {} {:<9} {:<42} {}\n", s.Green("+"), plan::ToString(r.kind), r.id, r.summary);
}

struct PlanFlags {
  RemoteFlags remote;
  Format format = Format::kText;
  bool detailed = false;
  bool diff = false;
  std::string only;
  std::string out;
};

// Reads every selected node's state and prints the plan. Returns the exit code.
int PlanOnline(Context& ctx, const model::Cluster& cluster, const std::string& inventory, const PlanFlags& flags) {
  const int input_error = flags.detailed ? kExitFindings : kExitUsage;
  auto parts = PartsFrom(ctx, flags.only);
  if (!parts) return input_error;
  auto targets = SelectTargets(ctx, cluster, flags.remote);
  if (!targets) return input_error;
  auto desired = DesiredNodesFor(ctx, cluster, *targets, inventory, *parts);
  if (!desired) return input_error;
  std::optional<std::string> inventory_sha;
  if (!flags.out.empty()) {
    inventory_sha = FileSha256(ctx, inventory);
    if (!inventory_sha) return input_error;
  }

  InterruptGuard interrupt;
  ProgressBar bar(ctx, "plan");
  std::unique_ptr<remote::Connector> ssh = MakeConnector(flags.remote);
  remote::FanoutOptions fo = OneStepFanout(flags.remote, interrupt, bar);
  apply::ReadPlansOptions ro;
  ro.fanout = fo;
  ro.diffs = flags.diff;
  const std::vector<apply::NodePlanRead> reads = apply::ReadPlans(*ssh, *targets, *desired, ro);
  bar.Clear();

  const apply::PlanCounts counts = apply::CountPlans(reads);
  const std::size_t add = counts.add, change = counts.change, destroy = counts.destroy, failed = counts.failed;
  int code = failed > 0 ? kExitFindings : (flags.detailed && add + change + destroy > 0) ? 2 : kExitOk;

  if (!flags.out.empty() && failed == 0) {
    plan::SavedPlan saved =
        apply::SavedPlanFrom(reads, *desired, NowUtc(), std::filesystem::absolute(inventory).lexically_normal().string(),
                             *inventory_sha, flags.only);
    if (Status st = base::WriteFileAtomically(flags.out, plan::ToJson(saved)); !st.ok()) {
      ctx.Error(st.error().message);
      return kExitFindings;
    }
  } else if (!flags.out.empty()) {
    ctx.Err(fmt::format("plan: {} was not written: {} node{} could not be read\n", flags.out, failed, failed == 1 ? "" : "s"));
  }

  if (flags.format == Format::kJson) {
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const apply::NodePlanRead& r : reads) {
      if (r.plan) nodes.push_back(report::PlanJson(*r.plan, flags.diff ? &r.diffs : nullptr));
      else nodes.push_back({{"node", r.node}, {"state", "error"}, {"error", r.error}});
    }
    nlohmann::ordered_json j = {{"schema", "gpuforge.plan/v1"}, {"mode", "online"}, {"cluster", cluster.name},
                                {"nodes", nodes}, {"summary", {{"add", add}, {"change", change}, {"destroy", destroy},
                                                               {"failed", failed}}}};
    ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
    return code;
  }
  const report::Style& s = ctx.out_style;
  ctx.Out(s.Bold(fmt::format("gpuforge plan: {} ({} node{}{})\n", cluster.name, targets->size(),
                             targets->size() == 1 ? "" : "s", flags.only.empty() ? "" : ", only " + flags.only)));
  // Nodes fold when their plans and their diffs are the same.
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const apply::NodePlanRead& r : reads) {
    if (!r.plan) continue;
    blocks.emplace_back(r.node, report::PlanSummary(*r.plan) + "\n" +
                                    report::PlanLines(*r.plan, s, flags.diff ? &r.diffs : nullptr));
  }
  for (const report::Folded& g : report::FoldIdentical(blocks)) {
    ctx.Out(fmt::format("\n{} ({}): {}", s.Bold(g.nodes), g.count, g.text));
  }
  for (const apply::NodePlanRead& r : reads) {
    if (!r.error.empty()) ctx.Out(fmt::format("\n{} {}\n", s.Red("error:"), r.error));
  }
  ctx.Out(fmt::format("\n{}{}\n", report::PlanTotal(add, change, destroy),
                      failed > 0 ? fmt::format(" {} node{} could not be read.", failed, failed == 1 ? "" : "s") : ""));
  if (!flags.out.empty() && failed == 0) {
    ctx.Out(fmt::format("Saved to {}; `gpuforge apply {}` carries out exactly this plan.\n", flags.out, flags.out));
  }
  return code;
}

}  // namespace

Command PlanCommand() {
  return {"plan", "Show what gpuforge would configure; --offline: lint, estimates and desired state without SSH",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              bool offline = false;
              PlanFlags flags;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            app.add_flag("--offline", o->offline,
                         "Do not connect to nodes: lint, estimates and the desired state only");
            app.add_flag("--detailed-exitcode", o->flags.detailed,
                         "Online: exit 0 no changes, 1 error, 2 changes to make");
            app.add_flag("--diff", o->flags.diff, "Online: unified diffs of changed files (secrets masked)");
            app.add_option("--out", o->flags.out,
                           "Online: save the plan with the state it was made from; `apply FILE` carries it out");
            app.add_option("--only", o->flags.only, "Online: manage only these parts: files,packages,modules,sysctl,services,agent");
            AddRemoteOptions(app, &o->flags.remote);
            AddFormatOption(app, &o->flags.format);
            app.footer(
                "Online (default): reads each node's files over SSH and prints what apply would change.\n"
                "Exit codes: 0 plan made (--offline: design clean of errors); 1 lint errors (--offline) or a node\n"
                "could not be read; 2 invalid inventory or usage, or with --detailed-exitcode: changes to make.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(o->flags.detailed && !o->offline ? kExitFindings : kExitUsage);
              if (!o->offline) return PlanOnline(ctx, *cluster, o->inventory, o->flags);
              lint::LintResult lint_result = lint::Lint(*cluster);
              estimate::Estimates est = estimate::Estimate(*cluster);
              std::vector<plan::NodeClass> classes = plan::FoldDesiredState(*cluster);
              std::size_t resources = 0;
              for (const auto& nc : classes) resources += nc.resources.size() * nc.count;
              int code = lint_result.errors > 0 ? kExitFindings : kExitOk;
              if (o->flags.format == Format::kJson) {
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
