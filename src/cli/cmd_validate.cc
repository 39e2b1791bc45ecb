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
#include "gpuforge/report/junit.h"
#include "gpuforge/report/prometheus.h"
#include "gpuforge/report/validate_report.h"
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
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            AddRemoteOptions(app, &o->remote);
            app.add_option("--checks", o->checks, "Only these checks: keys or prefixes, comma-separated (gpu,storage.read)");
            app.add_option("--param", o->params,
                           "CHECK.NAME=VALUE: a probe parameter for one check, repeatable (storage.read.size=8GiB)")
                ->option_text("CHECK.NAME=VALUE");
            app.add_flag("--strict", o->strict, "Warnings fail the run too");
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
              std::vector<std::string> filter = Words(o->checks);
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
              po.run.retries = o->retries;
              po.run.timeout_s = o->timeout_s;
              po.run.cancel = interrupt.flag();
              po.fanout = o->remote.fanout;
              po.on_progress = [&bar](const remote::Progress& p) { bar.Update(p); };
              const std::vector<validate::Verdict> verdicts = validate::RunPlan(
                  *connector, *targets, *cluster, *thresholds, vplan, agent ? &*agent : nullptr, po);
              bar.Clear();
              info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
              std::optional<report::Comparison> compared;
              if (baseline) compared = report::CompareWithBaseline(*baseline, verdicts, o->outputs.tolerance_pct);
              if (o->format == Format::kJson) {
                nlohmann::ordered_json j = report::ValidateJson(cluster->name, verdicts, o->strict);
                if (compared) j["baseline"] = report::BaselineJson(*compared);
                ctx.OutJson(j);
              } else if (o->format == Format::kJunit) {
                ctx.Out(report::ValidateJunit(info, verdicts));
              } else {
                ctx.Out(ctx.out_style.Bold(fmt::format("gpuforge validate: {} ({} node{})\n\n", cluster->name,
                                                       targets->size(), targets->size() == 1 ? "" : "s")));
                ctx.Out(report::ValidateText(verdicts, ctx.out_style, o->strict));
                if (compared) ctx.Out(report::BaselineText(*compared, ctx.out_style));
              }
              bool written = true;
              if (!o->outputs.junit.empty()) {
                written &= WriteOutput(ctx, "--junit", o->outputs.junit, report::ValidateJunit(info, verdicts));
              }
              if (!o->outputs.prometheus.empty()) {
                written &= WriteOutput(ctx, "--prometheus", o->outputs.prometheus,
                                       report::ValidatePrometheus(info, verdicts));
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
