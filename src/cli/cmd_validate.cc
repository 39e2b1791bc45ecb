#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <random>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "cli/remote_options.h"
#include "gpuforge/report/baseline.h"
#include "gpuforge/report/html_report.h"
#include "gpuforge/report/isolate_report.h"
#include "gpuforge/report/junit.h"
#include "gpuforge/report/validate_report.h"
#include "gpuforge/validate/drain.h"
#include "gpuforge/validate/health.h"
#include "gpuforge/validate/isolate_run.h"
#include "gpuforge/validate/prepare.h"
#include "gpuforge/validate/runner.h"

namespace gpuforge::cli {
namespace {

struct ValidateOpts {
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
  bool isolate = false;
  std::string seed;
};

// Where --drain-failed and --resume-passed run scontrol: this machine with --local (the node a
// health check runs on), else the inventory's scheduler.controller through the SSH flags.
std::optional<remote::Target> SlurmController(Context& ctx, const model::Cluster& c, const RemoteFlags& remote) {
  if (remote.local) {
    remote::Target t;
    t.node = "localhost";
    return t;
  }
  if (c.software.scheduler.controller.empty()) return std::nullopt;
  RemoteFlags to = remote;
  to.nodes = c.software.scheduler.controller;
  std::optional<std::vector<remote::Target>> t = SelectTargets(ctx, c, to);
  if (!t || t->size() != 1) return std::nullopt;
  return t->front();
}

// --isolate's flags, before any node is touched: what it refuses, the measure it runs (written
// to o.checks) and the seed. -1 when the run goes on, else the exit code.
int IsolateUsage(Context& ctx, ValidateOpts& o, const model::Cluster& c, std::uint64_t* seed) {
  if (o.health || o.resume_passed || !o.outputs.junit.empty() || !o.outputs.prometheus.empty() ||
      !o.outputs.save_results.empty() || !o.outputs.baseline.empty()) {
    ctx.Error("--isolate writes its own report (and --report FILE.html): --health, --resume-passed, "
              "--junit, --prometheus, --save-results and --baseline do not apply to it yet");
    return static_cast<int>(kExitUsage);
  }
  // The measure: per-rail RDMA where the compute network is InfiniBand or RoCE
  // (what training traffic crosses), else TCP; --checks picks one of them or NCCL pairs.
  const model::Network* compute = c.ComputeNetwork();
  std::string measure = compute != nullptr && compute->kind != model::NetKind::kEthernet
                            ? "rdma.write_bw"
                            : "tcp.bandwidth";
  std::vector<std::string> words;
  for (const std::string& k : o.checks) {
    for (std::size_t at = 0; at <= k.size();) {
      const std::size_t comma = std::min(k.find(',', at), k.size());
      if (comma > at) words.push_back(k.substr(at, comma - at));
      at = comma + 1;
    }
  }
  if (words.size() > 1) {
    ctx.Error("--isolate runs one measure: give one of --checks rdma, --checks rdma.write_lat, --checks nccl or "
              "--checks tcp (run it again for another)");
    return static_cast<int>(kExitUsage);
  }
  for (const std::string& k : words) {
    if (k == "tcp" || k == "tcp.bandwidth") {
      measure = "tcp.bandwidth";
    } else if (k == "rdma" || k == "rdma.write_bw") {
      measure = "rdma.write_bw";
    } else if (k == "rdma.write_lat") {
      measure = "rdma.write_lat";
    } else if (k == "nccl" || k == "nccl.multinode") {
      measure = "nccl.multinode";
    } else {
      ctx.Error(fmt::format("--isolate runs rdma.write_bw or rdma.write_lat (per rail), nccl.multinode (2-node "
                            "all-reduce) or tcp.bandwidth pairs; --checks {} is not one of them", k));
      return static_cast<int>(kExitUsage);
    }
  }
  o.checks = {measure};
  if (o.seed.empty()) {
    *seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  } else {
    Result<std::uint64_t> parsed = validate::ParseSeed(o.seed);
    if (!parsed.ok()) {
      ctx.Error(parsed.error().message);
      return static_cast<int>(kExitUsage);
    }
    *seed = *parsed;
  }
  return -1;
}

// validate --isolate (docs/validate.md#isolation): the rounds, the report, --drain-failed.
int RunIsolate(Context& ctx, const ValidateOpts& o, const model::Cluster& c, const std::vector<remote::Target>& targets,
               const validate::RunSetup& setup, const validate::ValidatePlan& vplan,
               const std::optional<plan::AgentBinary>& agent, const std::atomic<bool>* cancel, std::uint64_t seed) {
  if (!agent) {
    ctx.Error(fmt::format("--isolate found no pair to run: {}",
                          vplan.left_out.empty() ? "fewer than two selected nodes to pair"
                                                  : vplan.left_out.front().detail));
    return static_cast<int>(kExitUsage);
  }
  std::unique_ptr<remote::Connector> connector = MakeConnector(o.remote);
  validate::IsolateRunOptions io;
  io.seed = seed;
  io.timeout_s = o.timeout_s;
  io.cancel = cancel;
  io.fanout = o.remote.fanout;
  ctx.Err(fmt::format("validate --isolate: seed {}\n", seed));
  Result<validate::IsolationResult> iso = validate::RunIsolation(
      *connector, targets, c, setup.thresholds, vplan, setup.probe_params, *agent, io);
  if (!iso.ok()) {
    ctx.Error(iso.error().message);
    return static_cast<int>(kExitUsage);
  }
  std::optional<validate::DrainResult> drained;
  if (o.drain_failed) {
    const std::string& name = o.remote.local ? "this machine" : c.software.scheduler.controller;
    validate::SlurmActions acted =
        validate::ActInSlurm(*connector, SlurmController(ctx, c, o.remote), name, c,
                             iso->verdicts, {true, false, o.strict});
    if (!acted.connect_error.empty()) ctx.Err(fmt::format("validate: slurm: {}\n", acted.connect_error));
    drained = std::move(acted.drain);
  }
  if (o.format == Format::kJson) {
    nlohmann::ordered_json j = report::ValidateJson(c.name, iso->verdicts, o.strict);
    j["isolation"] = report::IsolationJson(*iso);
    if (drained) j["slurm"] = validate::DrainJson(*drained);
    ctx.OutJson(j);
  } else if (o.format == Format::kJunit) {
    report::RunInfo iinfo{c.name, o.inventory, std::chrono::system_clock::now(), 0, o.strict};
    ctx.Out(report::ValidateJunit(iinfo, iso->verdicts));
  } else {
    ctx.Out(ctx.out_style.Bold(fmt::format("gpuforge validate --isolate: {} ({} node{})\n\n",
                                           c.name, targets.size(),
                                           targets.size() == 1 ? "" : "s")));
    ctx.Out(report::IsolationText(*iso, ctx.out_style));
    ctx.Out("\nVerdict: " + report::ValidateSummary(iso->verdicts, o.strict) + "\n");
    if (drained) ctx.Out("\n" + validate::DrainText(*drained));
  }
  if (!o.outputs.report.empty()) {
    // The acceptance report with the pair matrix (docs/validate.md#isolation).
    report::RunInfo hinfo{c.name, o.inventory, std::chrono::system_clock::now(), 0, o.strict};
    if (!WriteOutput(ctx, "--report", o.outputs.report,
                     report::ValidateHtml(hinfo, c, iso->verdicts, std::nullopt, &*iso))) {
      return static_cast<int>(kExitUsage);
    }
  }
  // Not one node judged (every run failed, or no rule applied) is not a quiet SKIP:
  // the operator asked which node is bad and got no answer.
  if (std::none_of(iso->node_verdicts.begin(), iso->node_verdicts.end(), [](const auto& v) {
        return v.verdict != validate::isolate::Verdict::kUnjudged &&
               v.verdict != validate::isolate::Verdict::kCouldNotRun;
      })) {
    ctx.Error("--isolate could judge no node (the reasons are above)");
    return static_cast<int>(kExitUsage);  // validate's 2: a check could not run
  }
  return validate::ExitCode(iso->verdicts, o.strict);
}

}  // namespace

Command ValidateCommand() {
  return {"validate", "Run the built-in probes on the nodes and judge them against the guides' thresholds",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<ValidateOpts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            AddRemoteOptions(app, &o->remote);
            CompleteAs(app.add_option("--checks", o->checks, "Only these checks: keys or prefixes, comma-separated (gpu,storage.read)"), Values::kChecks);
            CompleteAs(app.add_option("--param", o->params,
                           "CHECK.NAME=VALUE, repeatable: a probe parameter (storage.read.size=8GiB) or a pass mark "
                           "for this run (storage.read.min_gbs_per_gpu=2GB/s; see `thresholds show`)"), Values::kCheckParams)
                ->option_text("CHECK.NAME=VALUE");
            app.add_flag("--strict", o->strict, "Warnings fail the run too");
            app.add_flag("--health", o->health,
                         "With --local: the fast checks only, one line out, exit 0 healthy (a Slurm "
                         "HealthCheckProgram or prolog)");
            app.add_flag("--drain-failed", o->drain_failed,
                         "Slurm: drain every node that failed, Reason \"gpuforge: CODE CHECK ENTITY\"");
            app.add_flag("--resume-passed", o->resume_passed,
                         "Slurm: resume nodes that passed and that gpuforge drained (never another's drain)");
            app.add_flag("--isolate", o->isolate,
                         "Find the bad node or link: rounds of seeded random pairs, suspects retested with two "
                         "known-good nodes, a verdict per node (docs/validate.md#isolation); per-rail rdma.write_bw pairs "
                         "where the compute network is InfiniBand or RoCE, else tcp.bandwidth; --checks nccl for 2-node "
                         "NCCL all-reduce pairs");
            app.add_option("--seed", o->seed, "With --isolate: the pairing's seed (a run prints its own; default random)")
                ->option_text("N");
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
              if (!o->seed.empty() && !o->isolate) {
                ctx.Error("--seed orders the pairs of --isolate; give --isolate too");
                return static_cast<int>(kExitUsage);
              }
              std::uint64_t seed = 0;
              if (o->isolate) {
                if (const int refused = IsolateUsage(ctx, *o, *cluster, &seed); refused >= 0) return refused;
              }
              Result<validate::RunSetup> setup = validate::SetUpRun(*cluster, {o->checks, o->health, "", o->params});
              if (!setup.ok()) {
                ctx.Error(setup.error().message);
                return static_cast<int>(kExitUsage);
              }
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);
              Result<validate::ValidatePlan> vplan = validate::PlanRun(*cluster, *targets, setup->checks, setup->probe_params);
              if (!vplan.ok()) {
                ctx.Error(vplan.error().message);
                return static_cast<int>(kExitUsage);
              }
              std::optional<plan::AgentBinary> agent;
              if (validate::NeedsAgent(*vplan)) {
                Result<plan::AgentBinary> a = LoadAgent();
                if (!a.ok()) {
                  ctx.Error(a.error().message);
                  return static_cast<int>(kExitUsage);
                }
                agent = std::move(*a);
              }

              InterruptGuard interrupt;
              if (o->isolate) {
                return RunIsolate(ctx, *o, *cluster, *targets, *setup, *vplan, agent, interrupt.flag(), seed);
              }
              ProgressBar bar(ctx, "validate");
              std::unique_ptr<remote::Connector> connector = MakeConnector(o->remote);
              report::RunInfo info{cluster->name, o->inventory, std::chrono::system_clock::now(), 0, o->strict};
              const auto t0 = std::chrono::steady_clock::now();
              validate::PlanRunOptions po;
              po.run.retries = o->health ? validate::kHealthRetries : o->retries;
              po.run.timeout_s = o->timeout_s;
              po.run.cancel = interrupt.flag();
              po.fanout = o->remote.fanout;
              po.on_progress = [&bar](const remote::Progress& p) { bar.Update(p); };
              std::vector<validate::Verdict> verdicts = validate::RunPlan(
                  *connector, *targets, *cluster, setup->thresholds, *vplan, agent ? &*agent : nullptr, po);
              bar.Clear();
              std::optional<validate::DrainResult> drained;
              if (o->drain_failed || o->resume_passed) {
                const std::string& name = o->remote.local ? "this machine" : cluster->software.scheduler.controller;
                validate::SlurmActions acted =
                    validate::ActInSlurm(*connector, SlurmController(ctx, *cluster, o->remote), name, *cluster, verdicts,
                                         {o->drain_failed, o->resume_passed, o->strict});
                if (!acted.connect_error.empty()) ctx.Err(fmt::format("validate: slurm: {}\n", acted.connect_error));
                drained = std::move(acted.drain);
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
              const bool written = WriteValidateFiles(ctx, o->outputs, info, *cluster, verdicts, compared);
              const int code = validate::ExitCode(verdicts, o->strict);
              if (!written) return static_cast<int>(kExitUsage);
              if (code == 0 && compared && compared->regressions() > 0) return static_cast<int>(kExitFindings);
              return code;
            };
          }};
}

}  // namespace gpuforge::cli
