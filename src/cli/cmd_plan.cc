#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/render/render.h"
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

std::string Differs(const plan::FileChange& f) {
  std::vector<std::string> what;
  if (f.content) what.emplace_back("content");
  if (f.mode) what.push_back(fmt::format("mode {:04o} -> {:04o}", f.mode_from, f.mode_to));
  if (f.owner) what.push_back(fmt::format("owner {} -> root", f.owner_from));
  return fmt::format("{}", fmt::join(what, ", "));
}

nlohmann::ordered_json NodePlanJson(const plan::NodePlan& p) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const plan::FileChange& f : p.files) {
    nlohmann::ordered_json differs = nlohmann::ordered_json::array();
    if (f.content) differs.push_back("content");
    if (f.mode) differs.push_back("mode");
    if (f.owner) differs.push_back("owner");
    files.push_back({{"path", f.path}, {"action", plan::ToString(f.action)}, {"differs", differs},
                     {"mode", fmt::format("{:04o}", f.mode_to)}, {"impact", plan::ToString(f.impact)},
                     {"handler", f.handler}, {"note", f.note}});
  }
  return {{"node", p.node}, {"state", "ok"}, {"add", p.Count(plan::Action::kCreate)},
          {"change", p.Count(plan::Action::kChange)}, {"files", files}};
}

// Reads every selected node's file state and prints the plan. Returns the exit code.
int PlanOnline(Context& ctx, const model::Cluster& cluster, const std::string& inventory, const RemoteFlags& flags,
               Format format, bool detailed) {
  const int input_error = detailed ? kExitFindings : kExitUsage;
  auto targets = SelectTargets(ctx, cluster, flags);
  if (!targets) return input_error;
  auto desired = DesiredFilesFor(ctx, cluster, *targets, inventory);
  if (!desired) return input_error;

  InterruptGuard interrupt;
  ProgressBar bar(ctx, "plan");
  std::unique_ptr<remote::Connector> ssh = remote::MakeSshConnector(SshOptionsFrom(flags));
  remote::FanoutOptions fo = OneStepFanout(flags, interrupt, bar);
  std::vector<std::optional<plan::NodePlan>> plans(targets->size());
  std::vector<std::string> errors(targets->size());
  remote::Fleet fleet(*ssh, *targets, fo);
  fleet.Each([&](std::size_t i, remote::Session& s) {
    Result<plan::NodePlan> p = apply::ReadPlan(s, desired->at(s.target().node), s.target().sudo);
    if (!p.ok()) {
      errors[i] = p.error().message;
      return false;
    }
    plans[i] = std::move(*p);
    return true;
  });
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i] && errors[i].empty()) errors[i] = fleet.lost(i) ? fleet.lost(i)->message : "node " + (*targets)[i].node + ": not reached";
  }
  fleet.Close();
  bar.Clear();

  std::vector<plan::NodePlan> ok;
  std::size_t add = 0, change = 0, failed = 0;
  for (auto& p : plans) {
    if (!p) continue;
    add += p->Count(plan::Action::kCreate);
    change += p->Count(plan::Action::kChange);
    ok.push_back(*p);
  }
  for (const std::string& e : errors) failed += !e.empty();
  int code = failed > 0 ? kExitFindings : (detailed && add + change > 0) ? 2 : kExitOk;

  if (format == Format::kJson) {
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (plans[i]) nodes.push_back(NodePlanJson(*plans[i]));
      else nodes.push_back({{"node", (*targets)[i].node}, {"state", "error"}, {"error", errors[i]}});
    }
    nlohmann::ordered_json j = {{"schema", "gpuforge.plan/v1"}, {"mode", "online"}, {"cluster", cluster.name},
                                {"nodes", nodes}, {"summary", {{"add", add}, {"change", change}, {"destroy", 0},
                                                               {"failed", failed}}}};
    ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
    return code;
  }
  const report::Style& s = ctx.out_style;
  ctx.Out(s.Bold(fmt::format("gpuforge plan: {} ({} node{}, files only)\n", cluster.name, targets->size(),
                             targets->size() == 1 ? "" : "s")));
  for (const plan::FoldedPlan& g : plan::FoldPlans(ok)) {
    std::size_t a = g.plan->Count(plan::Action::kCreate), c = g.plan->Count(plan::Action::kChange);
    ctx.Out(fmt::format("\n{} ({}): {}\n", s.Bold(g.nodes), g.count,
                        a + c == 0 ? std::string("no changes") : fmt::format("{} to add, {} to change", a, c)));
    ctx.Out(FilePlanLines(*g.plan, s));
  }
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i].empty()) ctx.Out(fmt::format("\n{} {}\n", s.Red("error:"), errors[i]));
  }
  ctx.Out(fmt::format("\nPlan: {} to add, {} to change, 0 to destroy.{}\n", add, change,
                      failed > 0 ? fmt::format(" {} node{} could not be read.", failed, failed == 1 ? "" : "s") : ""));
  return code;
}

}  // namespace

std::optional<std::map<std::string, std::vector<plan::DesiredFile>>> DesiredFilesFor(
    Context& ctx, const model::Cluster& cluster, std::span<const remote::Target> targets,
    const std::string& inventory) {
  render::Options ro;
  ro.inventory_label = std::filesystem::path(inventory).filename().string();
  for (const remote::Target& t : targets) ro.nodes.push_back(t.node);
  Result<render::Output> out = render::Render(cluster, ro);
  if (!out.ok()) {
    ctx.Error(out.error().message);
    return std::nullopt;
  }
  std::map<std::string, std::vector<plan::DesiredFile>> m;
  for (const remote::Target& t : targets) m[t.node] = plan::DesiredFiles(*out, t.node);
  return m;
}

std::string FilePlanLines(const plan::NodePlan& p, const report::Style& s) {
  std::string out;
  for (const plan::FileChange& f : p.files) {
    if (f.action == plan::Action::kNone) continue;
    std::string what = f.action == plan::Action::kCreate ? fmt::format("{} (mode {:04o})", f.path, f.mode_to)
                                                        : fmt::format("{} ({})", f.path, Differs(f));
    out += fmt::format("    {} {:<56} {}: {}\n", f.action == plan::Action::kCreate ? s.Green("+") : s.Yellow("~"), what,
                       plan::ToString(f.impact), f.note);
  }
  return out;
}

Command PlanCommand() {
  return {"plan", "Show what gpuforge would configure; --offline: lint, estimates and desired state without SSH",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              Format format = Format::kText;
              bool offline = false;
              bool detailed = false;
              RemoteFlags remote;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            app.add_flag("--offline", o->offline,
                         "Do not connect to nodes: lint, estimates and the desired state only");
            app.add_flag("--detailed-exitcode", o->detailed,
                         "Online: exit 0 no changes, 1 error, 2 changes to make");
            AddRemoteOptions(app, &o->remote);
            AddFormatOption(app, &o->format);
            app.footer(
                "Online (default): reads each node's files over SSH and prints what apply would change.\n"
                "Exit codes: 0 plan made (--offline: design clean of errors); 1 lint errors (--offline) or a node\n"
                "could not be read; 2 invalid inventory or usage, or with --detailed-exitcode: changes to make.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(o->detailed && !o->offline ? kExitFindings : kExitUsage);
              if (!o->offline) return PlanOnline(ctx, *cluster, o->inventory, o->remote, o->format, o->detailed);
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
