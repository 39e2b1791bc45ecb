#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "cli/remote_options.h"
#include "gpuforge/report/baseline.h"
#include "gpuforge/report/html_report.h"
#include "gpuforge/report/junit.h"
#include "gpuforge/report/prometheus.h"
#include "gpuforge/report/validate_report.h"
#include "gpuforge/validate/drain.h"
#include "gpuforge/validate/runner.h"

namespace gpuforge::cli {
namespace {

// Splits "gpu,storage.read" and repeated --checks into words.
std::vector<std::string> Words(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const std::string& g : given) {
    std::size_t pos = 0;
    while (pos <= g.size()) {
      std::size_t comma = g.find(',', pos);
      if (comma == std::string::npos) comma = g.size();
      if (comma > pos) out.push_back(g.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  return out;
}

// --health: the table's fast rows (CheckInfo::health), narrowed by --checks when given.
std::vector<std::string> HealthChecks(const std::vector<std::string>& selected) {
  std::vector<std::string> out;
  for (const validate::CheckInfo& c : validate::Checks()) {
    if (!c.health) continue;
    const bool wanted = selected.empty() || std::any_of(selected.begin(), selected.end(), [&](const std::string& k) {
                          return k == c.key;
                        });
    if (wanted) out.emplace_back(c.key);
  }
  return out;
}

// --drain-failed / --resume-passed: scontrol on the controller (this machine with --local, the
// node a health check runs on), appending an ERROR per node whose step did not happen.
validate::DrainResult SlurmActions(Context& ctx, const model::Cluster& c, const RemoteFlags& remote,
                                   std::vector<validate::Verdict>& verdicts, const validate::DrainOptions& d) {
  const std::string& controller = c.software.scheduler.controller;
  std::unique_ptr<remote::Session> session;
  std::string why;
  std::optional<std::vector<remote::Target>> t;
  if (remote.local) {
    t = std::vector<remote::Target>(1);
    t->front().node = "localhost";
  } else if (!controller.empty()) {
    RemoteFlags to = remote;
    to.nodes = controller;
    t = SelectTargets(ctx, c, to);
  }
  if (t && t->size() == 1) {
    Result<std::unique_ptr<remote::Session>> s = MakeConnector(remote)->Connect(t->front());
    if (s.ok()) session = std::move(*s);
    if (!s.ok()) why = s.error().message;
  }
  if (!why.empty()) ctx.Err(fmt::format("validate: slurm: {}\n", why));
  validate::DrainResult r = validate::RunDrain(session.get(), remote.local ? "this machine" : controller, c, verdicts, d);
  verdicts.insert(verdicts.end(), r.errors.begin(), r.errors.end());
  return r;
}

}  // namespace

Command ValidateCommand() {
  return {"validate", "Run the built-in probes on the nodes and judge them against the guides' thresholds",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              RemoteFlags remote;
              std::vector<std::string> checks;
              std::vector<std::string> params;
              bool strict = false;
              int retries = 3;
              int timeout_s = 0;
              Format format = Format::kText;
              OutputFlags outputs;
              bool health = false;
              bool drain_failed = false;
              bool resume_passed = false;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            AddRemoteOptions(app, &o->remote);
            app.add_option("--checks", o->checks, "Only these checks: keys or prefixes, comma-separated (gpu,storage.read)");
            app.add_option("--param", o->params,
                           "CHECK.NAME=VALUE: a probe parameter for one check, repeatable (storage.read.size=8GiB)")
                ->option_text("CHECK.NAME=VALUE");
            app.add_flag("--strict", o->strict, "Warnings fail the run too");
            app.add_flag("--health", o->health,
                         "With --local: the fast checks only, one line out, exit 0 healthy (a Slurm "
                         "HealthCheckProgram or prolog)");
            app.add_flag("--drain-failed", o->drain_failed,
                         "Slurm: drain every node that failed, Reason \"gpuforge: CODE CHECK ENTITY\"");
            app.add_flag("--resume-passed", o->resume_passed,
                         "Slurm: resume nodes that passed and that gpuforge drained (never another's drain)");
            app.add_option("--retries", o->retries, "Attempts for performance checks; the first good one counts (default 3)")
                ->check(CLI::Range(1, 20));
            app.add_option("--timeout", o->timeout_s, "Seconds each check may run (default: the check's own)")
                ->check(CLI::Range(1, 86400))
                ->option_text("SECONDS");
            AddFormatWithJunit(app, &o->format);
            AddJunitOption(app, &o->outputs);
            AddResultOptions(app, &o->outputs);
            app.footer("Exit codes: 0 every check passed (warnings allowed unless --strict); 1 a check failed\n"
                       "(or, with --baseline, a value regressed beyond the tolerance);\n"
                       "2 a check could not run (ERROR), a node was unreachable, or invalid inventory or usage.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              // Every output and the baseline are checked before any node is touched: a run of
              // an hour must not end in "cannot write" or "baseline of another cluster".
              if (!CheckOutputs(ctx, o->outputs)) return static_cast<int>(kExitUsage);
              bool refused = false;
              std::optional<report::Baseline> baseline = LoadBaseline(ctx, o->outputs, cluster->name, &refused);
              if (refused) return static_cast<int>(kExitUsage);
              if (o->health && !o->remote.local) {
                ctx.Error("--health runs on the node it checks: give --local (and --nodes NODE when the inventory "
                          "has more than one)");
                return static_cast<int>(kExitUsage);
              }
              if ((o->drain_failed || o->resume_passed) && cluster->software.scheduler.kind != model::SchedulerKind::kSlurm) {
                ctx.Error(fmt::format("--drain-failed and --resume-passed act in Slurm; {} has scheduler kind {}",
                                      o->inventory, model::ToString(cluster->software.scheduler.kind)));
                return static_cast<int>(kExitUsage);
              }
              std::vector<std::string> filter = Words(o->checks);
              if (o->health) filter = HealthChecks(filter);
              Result<std::vector<std::string>> checks = validate::SelectChecks(filter);
              if (!checks.ok()) {
                ctx.Error(checks.error().message);
                return static_cast<int>(kExitUsage);
              }
              Result<validate::ModelTable> table = validate::LoadModelTable(validate::DefaultModelTablePath());
              if (!table.ok()) {
                ctx.Error(table.error().message);
                return static_cast<int>(kExitUsage);
              }
              Result<validate::Thresholds> thresholds = validate::Thresholds::For(*cluster, std::move(*table));
              if (!thresholds.ok()) {
                ctx.Error(thresholds.error().message);
                return static_cast<int>(kExitUsage);
              }
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);
              std::vector<std::string> names;
              for (const remote::Target& t : *targets) names.push_back(t.node);
              validate::ValidatePlan vplan = validate::PlanChecks(*cluster, names, *checks);
              // --param CHECK.NAME=VALUE, checked against the probe's own parameters.
              for (const std::string& kv : o->params) {
                const std::size_t eq = kv.find('=');
                const std::size_t dot = eq == std::string::npos ? std::string::npos : kv.rfind('.', eq);
                const validate::CheckInfo* info = dot == std::string::npos ? nullptr : validate::FindCheck(kv.substr(0, dot));
                if (info == nullptr || info->probe.empty()) {
                  ctx.Error(fmt::format("--param '{}': expected CHECK.NAME=VALUE for a check that runs a probe", kv));
                  return static_cast<int>(kExitUsage);
                }
                const std::string name = kv.substr(dot + 1, eq - dot - 1), value = kv.substr(eq + 1);
                std::unique_ptr<probe::Probe> p = probe::FindProbe(info->probe);
                if (p == nullptr || !probe::ResolveParams(*p, {{name, value}}).ok()) {
                  ctx.Error(fmt::format("--param '{}': {}", kv,
                                        p == nullptr ? std::string("this build has no such probe")
                                                     : probe::ResolveParams(*p, {{name, value}}).error().message));
                  return static_cast<int>(kExitUsage);
                }
                for (validate::PlannedRun& r : vplan.runs) {
                  if (r.check != info->key) continue;
                  r.params[name] = value;
                  // The server side of a pair gets the same settings, but keeps its own role and device.
                  const bool own = name == "role" || name == "peer" || name == "device" || name == "ib_port";
                  if (!r.peer_params.empty() && !own) r.peer_params[name] = value;
                }
              }
              const bool need_agent = std::any_of(vplan.runs.begin(), vplan.runs.end(),
                                                  [](const validate::PlannedRun& r) { return !r.probe.empty(); });
              std::optional<plan::AgentBinary> agent;
              if (need_agent) {
                Result<plan::AgentBinary> a = LoadAgent();
                if (!a.ok()) {
                  ctx.Error(a.error().message);
                  return static_cast<int>(kExitUsage);
                }
                agent = std::move(*a);
              }

              InterruptGuard interrupt;
              ProgressBar bar(ctx, "validate");
              std::unique_ptr<remote::Connector> connector = MakeConnector(o->remote);
              report::RunInfo info{cluster->name, o->inventory, std::chrono::system_clock::now(), 0, o->strict};
              const auto t0 = std::chrono::steady_clock::now();
              validate::PlanRunOptions po;
              po.run.retries = o->health ? 1 : o->retries;
              po.run.timeout_s = o->timeout_s;
              po.run.cancel = interrupt.flag();
              po.fanout = o->remote.fanout;
              po.on_progress = [&bar](const remote::Progress& p) { bar.Update(p); };
              std::vector<validate::Verdict> verdicts = validate::RunPlan(
                  *connector, *targets, *cluster, *thresholds, vplan, agent ? &*agent : nullptr, po);
              bar.Clear();
              std::optional<validate::DrainResult> drained;
              if (o->drain_failed || o->resume_passed) {
                drained = SlurmActions(ctx, *cluster, o->remote, verdicts,
                                       {o->drain_failed, o->resume_passed, o->strict});
              }
              if (o->health) {
                // NHC's shape: one line, exit 0 when healthy; a HealthCheckProgram's output is
                // for the log, its exit code and the drain are what Slurm acts on.
                ctx.Out(report::HealthLine(targets->front().node, verdicts, o->strict));
                if (drained) ctx.Out(validate::DrainText(*drained));
                return validate::ExitCode(verdicts, o->strict);
              }
              info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              std::optional<report::Comparison> compared;
              if (baseline) compared = report::CompareWithBaseline(*baseline, verdicts, o->outputs.tolerance_pct);
              if (o->format == Format::kJson) {
                nlohmann::ordered_json j = report::ValidateJson(cluster->name, verdicts, o->strict);
                if (compared) j["baseline"] = report::BaselineJson(*compared);
                if (drained) j["slurm"] = validate::DrainJson(*drained);
                ctx.OutJson(j);
              } else if (o->format == Format::kJunit) {
                ctx.Out(report::ValidateJunit(info, verdicts));
              } else {
                ctx.Out(ctx.out_style.Bold(fmt::format("gpuforge validate: {} ({} node{})\n\n", cluster->name,
                                                       targets->size(), targets->size() == 1 ? "" : "s")));
                ctx.Out(report::ValidateText(verdicts, ctx.out_style, o->strict));
                if (compared) ctx.Out(report::BaselineText(*compared, ctx.out_style));
                if (drained) ctx.Out("\n" + validate::DrainText(*drained));
              }
              bool written = true;
              if (!o->outputs.junit.empty()) {
                written &= WriteOutput(ctx, "--junit", o->outputs.junit, report::ValidateJunit(info, verdicts));
              }
              if (!o->outputs.prometheus.empty()) {
                written &= WriteOutput(ctx, "--prometheus", o->outputs.prometheus,
                                       report::ValidatePrometheus(info, verdicts));
              }
              if (!o->outputs.report.empty()) {
                written &= WriteOutput(ctx, "--report", o->outputs.report,
                                       report::ValidateHtml(info, *cluster, verdicts, compared));
              }
              if (!o->outputs.save_results.empty()) {
                const std::string path =
                    (std::filesystem::path(o->outputs.save_results) / report::SavedResultsName(info)).string();
                written &= WriteOutput(ctx, "--save-results", path, report::SavedResults(info, verdicts).dump(2) + "\n");
                if (written && ctx.verbosity >= 0) ctx.Err(fmt::format("validate: results saved to {}\n", path));
              }
              const int code = validate::ExitCode(verdicts, o->strict);
              if (!written) return static_cast<int>(kExitUsage);
              if (code == 0 && compared && compared->regressions() > 0) return static_cast<int>(kExitFindings);
              return code;
            };
          }};
}

}  // namespace gpuforge::cli
