#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/read_plans.h"
#include "gpuforge/base/files.h"
#include "gpuforge/estimate/estimate.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/report/plan_report.h"

namespace gpuforge::cli {
namespace {

struct PlanFlags {
  RemoteFlags remote;
  Format format = Format::kText;
  bool detailed = false;
  bool diff = false;
  std::string only;
  std::string out;
  std::string facts;
};

// The inventory as a saved plan names it: relative to the plan file's directory, which is where
// `apply PLAN` resolves it (#28 item 17).
std::string InventoryFromPlan(const std::string& inventory, const std::string& plan_out) {
  const std::filesystem::path plan_dir = std::filesystem::absolute(plan_out).parent_path();
  return std::filesystem::absolute(inventory).lexically_normal().lexically_relative(plan_dir.lexically_normal()).string();
}

// Reads every selected node's state and prints the plan. Returns the exit code.
int PlanOnline(Context& ctx, const model::Cluster& cluster, const std::string& inventory, const PlanFlags& flags) {
  const int input_error = flags.detailed ? kExitFindings : kExitUsage;
  auto parts = PartsFrom(ctx, flags.only);
  if (!parts) return input_error;
  auto targets = SelectTargets(ctx, cluster, flags.remote);
  if (!targets) return input_error;
  auto desired = DesiredNodesFor(ctx, cluster, *targets, inventory, *parts, flags.facts);
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
  int code = failed > 0 ? kExitFindings : (flags.detailed && (add + change + destroy > 0 || counts.changed_nodes > 0)) ? 2 : kExitOk;

  if (!flags.out.empty() && failed == 0) {
    plan::SavedPlan saved =
        apply::SavedPlanFrom(reads, *desired, NowUtc(), InventoryFromPlan(inventory, flags.out), *inventory_sha,
                             flags.only);
    if (Status st = base::WriteFileAtomically(flags.out, plan::ToJson(saved)); !st.ok()) {
      ctx.Error(st.error().message);
      return kExitFindings;
    }
  } else if (!flags.out.empty()) {
    ctx.Err(fmt::format("plan: {} was not written: {} node{} could not be read\n", flags.out, failed, failed == 1 ? "" : "s"));
  }

  if (flags.format == Format::kJson) {
    ctx.OutJson(report::PlanOnlineJson(cluster.name, reads, flags.diff));
  } else {
    ctx.Out(report::PlanOnlineText(cluster.name, reads, flags.only, flags.diff,
                                   !flags.out.empty() && failed == 0 ? flags.out : "", ctx.out_style));
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
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            app.add_flag("--offline", o->offline,
                         "Do not connect to nodes: lint, estimates and the desired state only");
            app.add_flag("--detailed-exitcode", o->flags.detailed,
                         "Online: exit 0 no changes, 1 error, 2 changes to make");
            app.add_flag("--diff", o->flags.diff, "Online: unified diffs of changed files (secrets masked)");
            CompleteAs(app.add_option("--out", o->flags.out,
                           "Online: save the plan with the state it was made from; `apply FILE` carries it out"), Values::kFile);
            CompleteAs(app.add_option("--only", o->flags.only, "Online: manage only these parts: files,packages,modules,sysctl,services,agent"), Values::kParts);
            CompleteAs(app.add_option("--facts", o->flags.facts, kFactsDirHelp), Values::kDir)->option_text("DIR");
            AddRemoteOptions(app, &o->flags.remote);
            AddFormatOption(app, &o->flags.format);
            app.footer(
                "Online (default): reads each node's files over SSH and prints what apply would change.\n"
                "Exit codes: 0 plan made (--offline: design clean of errors); 1 lint errors (--offline) or a node\n"
                "could not be read; 2 invalid inventory or usage, or with --detailed-exitcode: changes to make.");
            return [o](Context& ctx) {
              // Before any node is read: a plan that cannot be saved is known now, not after.
              if (!CheckOutputFile(ctx, "--out", o->flags.out)) return static_cast<int>(kExitUsage);
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(o->flags.detailed && !o->offline ? kExitFindings : kExitUsage);
              if (!o->offline) return PlanOnline(ctx, *cluster, o->inventory, o->flags);
              const lint::LintResult lint_result = lint::Lint(*cluster);
              const estimate::Estimates est = estimate::Estimate(*cluster);
              // The same desired state the online plan compares and apply pushes: one render,
              // DesiredNodeState per node. The agent is listed without reading the binary.
              // --nodes selects whose desired state is shown, and an unknown name is refused as
              // online (#28 item 11); lint and the estimates stay the whole design's.
              std::vector<std::string> names;
              if (!o->flags.remote.nodes.empty()) {
                Result<std::vector<std::string>> expanded = SelectNodeNames(*cluster, o->flags.remote.nodes);
                if (!expanded.ok()) {
                  ctx.Error(fmt::format("--nodes: {}", expanded.error().message));
                  return static_cast<int>(kExitUsage);
                }
                names = std::move(*expanded);
              } else {
                for (const model::Node& n : cluster->nodes) names.push_back(n.name);
              }
              std::vector<remote::Target> every;
              for (const std::string& name : names) {
                remote::Target t;
                t.node = name;
                every.push_back(std::move(t));
              }
              plan::Parts parts = plan::AllParts();
              parts.erase(plan::Part::kAgent);
              auto desired = DesiredNodesFor(ctx, *cluster, every, o->inventory, parts, o->flags.facts);
              if (!desired) return static_cast<int>(kExitUsage);
              const std::vector<plan::NodeClass> classes = plan::FoldDesiredState(*cluster, *desired, true);
              if (o->flags.format == Format::kJson) {
                ctx.Out(report::PlanOfflineJson(*cluster, lint_result, est, classes).dump(2) + "\n");
              } else {
                ctx.Out(report::PlanOfflineText(*cluster, lint_result, est, classes, ctx.out_style));
              }
              return static_cast<int>(lint_result.errors > 0 ? kExitFindings : kExitOk);
            };
          }};
}

}  // namespace gpuforge::cli
