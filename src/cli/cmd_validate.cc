#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/facts/drift.h"
#include "gpuforge/facts/gather.h"
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

validate::Verdict Unreachable(const std::string& node, const std::string& why) {
  validate::Verdict v;
  v.check = "ssh";
  v.node = node;
  v.entity = "node";
  v.state = validate::State::kError;
  v.code = "unreachable";
  v.detail = why;
  v.next_step = "gpuforge run INVENTORY --nodes " + node + " -- true";
  return v;
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
            AddFormatOption(app, &o->format);
            app.footer("Exit codes: 0 every check passed (warnings allowed unless --strict); 1 a check failed;\n"
                       "2 a check could not run (ERROR), a node was unreachable, or invalid inventory or usage.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
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
              remote::FanoutOptions fo;
              fo.width = o->remote.fanout;
              fo.cancel = interrupt.flag();
              fo.on_progress = [&bar](const remote::Progress& p) { bar.Update(p); };
              validate::RunOptions ro;
              ro.retries = o->retries;
              ro.timeout_s = o->timeout_s;
              ro.cancel = interrupt.flag();

              std::mutex mu;
              std::vector<std::vector<validate::Verdict>> per_node(targets->size());
              std::vector<std::string> agents(targets->size());
              std::vector<facts::Gathered> gathered;
              remote::Fleet fleet(*connector, *targets, fo);
              // Node-local checks, in parallel across nodes.
              fleet.Each([&](std::size_t i, remote::Session& s) {
                const std::string& node = s.target().node;
                bool agent_ok = !need_agent;
                if (need_agent) {
                  Result<std::string> path = validate::EnsureAgent(s, *agent);
                  if (path.ok()) {
                    agents[i] = *path;
                    agent_ok = true;
                  } else {
                    per_node[i].push_back(Unreachable(node, path.error().message));
                    per_node[i].back().check = "agent";
                    per_node[i].back().code = "no_agent";
                    per_node[i].back().next_step = "gpuforge apply INVENTORY --only agent --nodes " + node;
                  }
                }
                for (const validate::PlannedRun& run : vplan.runs) {
                  if (run.node != node || !run.peer.empty() || !run.group.empty()) continue;
                  if (run.check == "facts") {
                    remote::ExecOptions eo;
                    eo.input = facts::GatherScript();
                    eo.output_cap = facts::kMaxGatherBytes;
                    eo.timeout = std::chrono::seconds(run.timeout_s);
                    Result<remote::ExecResult> r = s.Exec("sh -s", eo);
                    std::lock_guard lock(mu);
                    if (!r.ok()) {
                      gathered.push_back({node, r.error()});
                    } else {
                      gathered.push_back({node, facts::ParseGather(node, r->out)});
                    }
                    continue;
                  }
                  if (!agent_ok) continue;
                  std::vector<validate::Verdict> v = validate::RunCheck(s, agents[i], *cluster, *thresholds, run, ro);
                  per_node[i].insert(per_node[i].end(), v.begin(), v.end());
                }
                return true;
              });
              std::vector<validate::Verdict> verdicts;
              for (std::size_t i = 0; i < targets->size(); ++i) {
                if (fleet.lost(i) && per_node[i].empty()) per_node[i].push_back(Unreachable((*targets)[i].node, fleet.lost(i)->message));
              }
              // Facts: drift is judged across the nodes gathered (one profile's nodes against each other too).
              std::vector<validate::Verdict> fact_verdicts;
              if (std::find(checks->begin(), checks->end(), "facts") != checks->end()) {
                std::vector<std::string> ok_nodes;
                std::vector<facts::Gathered> good;
                for (facts::Gathered& g : gathered) {
                  if (g.facts.ok()) {
                    ok_nodes.push_back(g.node);
                    good.push_back(std::move(g));
                  } else {
                    validate::Verdict v;
                    v.check = "facts";
                    v.node = g.node;
                    v.entity = "node";
                    v.state = validate::State::kError;
                    v.code = "facts_unreadable";
                    v.detail = g.facts.error().message;
                    v.next_step = "gpuforge facts INVENTORY --nodes " + g.node;
                    fact_verdicts.push_back(std::move(v));
                  }
                }
                std::vector<facts::Drift> drift = facts::FindDrift(*cluster, good);
                std::vector<validate::Verdict> judged = validate::JudgeDrift(drift, ok_nodes);
                fact_verdicts.insert(fact_verdicts.end(), judged.begin(), judged.end());
              }
              // Pairs, one at a time so that they do not share links or ports.
              std::vector<validate::Verdict> pair_verdicts;
              for (const validate::PlannedRun& run : vplan.runs) {
                if (run.peer.empty() || interrupt.interrupted()) continue;
                std::size_t ci = 0, si = 0;
                for (std::size_t i = 0; i < targets->size(); ++i) {
                  if ((*targets)[i].node == run.node) ci = i;
                  if ((*targets)[i].node == run.peer) si = i;
                }
                if (agents[ci].empty() || agents[si].empty()) {
                  validate::Verdict v = Unreachable(run.node, "no agent on " + (agents[ci].empty() ? run.node : run.peer));
                  v.check = run.check;
                  v.entity = run.entity;
                  v.state = validate::State::kSkip;
                  v.code = "peer_unavailable";
                  pair_verdicts.push_back(std::move(v));
                  continue;
                }
                Result<std::unique_ptr<remote::Session>> client = connector->Connect((*targets)[ci]);
                Result<std::unique_ptr<remote::Session>> server = connector->Connect((*targets)[si]);
                if (!client.ok() || !server.ok()) {
                  pair_verdicts.push_back(Unreachable(client.ok() ? run.peer : run.node,
                                                      client.ok() ? server.error().message : client.error().message));
                  continue;
                }
                std::vector<validate::Verdict> v = validate::RunPair(**client, agents[ci], **server, agents[si], *cluster,
                                                                     *thresholds, run, ro);
                pair_verdicts.insert(pair_verdicts.end(), v.begin(), v.end());
              }
              // Group checks (multi-node NCCL): every member at once, on fresh sessions.
              for (const validate::PlannedRun& run : vplan.runs) {
                if (run.group.empty() || interrupt.interrupted()) continue;
                std::vector<std::unique_ptr<remote::Session>> owned;
                std::vector<remote::Session*> sessions;
                std::vector<std::string> member_agents;
                std::string missing;
                for (const std::string& member : run.group) {
                  std::size_t i = 0;
                  while (i < targets->size() && (*targets)[i].node != member) ++i;
                  if (i == targets->size() || agents[i].empty()) {
                    missing = member;
                    break;
                  }
                  Result<std::unique_ptr<remote::Session>> s = connector->Connect((*targets)[i]);
                  if (!s.ok()) {
                    missing = member + " (" + s.error().message + ")";
                    break;
                  }
                  sessions.push_back(s->get());
                  owned.push_back(std::move(*s));
                  member_agents.push_back(agents[i]);
                }
                if (!missing.empty()) {
                  validate::Verdict v = Unreachable(run.node, "no agent on " + missing);
                  v.check = run.check;
                  v.entity = run.entity;
                  v.state = validate::State::kSkip;
                  v.code = "member_unavailable";
                  pair_verdicts.push_back(std::move(v));
                  continue;
                }
                std::vector<validate::Verdict> v =
                    validate::RunGroupCheck(sessions, member_agents, *cluster, *thresholds, run, ro);
                pair_verdicts.insert(pair_verdicts.end(), v.begin(), v.end());
              }
              fleet.Close();
              bar.Clear();

              // In order: per node as planned (facts first), then pairs, then what did not apply.
              for (const validate::Verdict& v : fact_verdicts) verdicts.push_back(v);
              for (const auto& list : per_node) verdicts.insert(verdicts.end(), list.begin(), list.end());
              verdicts.insert(verdicts.end(), pair_verdicts.begin(), pair_verdicts.end());
              verdicts.insert(verdicts.end(), vplan.not_applicable.begin(), vplan.not_applicable.end());
              if (o->format == Format::kJson) {
                ctx.Out(report::ValidateJson(cluster->name, verdicts, o->strict)
                            .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
                        "\n");
              } else {
                ctx.Out(ctx.out_style.Bold(fmt::format("gpuforge validate: {} ({} node{})\n\n", cluster->name,
                                                       targets->size(), targets->size() == 1 ? "" : "s")));
                ctx.Out(report::ValidateText(verdicts, ctx.out_style, o->strict));
              }
              return validate::ExitCode(verdicts, o->strict);
            };
          }};
}

}  // namespace gpuforge::cli
