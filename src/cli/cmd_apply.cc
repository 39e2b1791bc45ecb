#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/read_plans.h"
#include "gpuforge/apply/rollout.h"
#include "gpuforge/base/hostlist.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/report/fold.h"
#include "gpuforge/report/plan_report.h"

namespace gpuforge::cli {
namespace {

using State = apply::NodeApply::State;

std::string Outcome(const apply::NodeApply& a) {
  std::string text;
  switch (a.state) {
    case State::kUnchanged: text = "no changes\n"; break;
    case State::kApplied:
      text = fmt::format("applied: {} created, {} changed, {} removed{}{}\n", a.plan.Count(plan::Action::kCreate),
                         a.plan.Count(plan::Action::kChange), a.plan.Count(plan::Action::kRemove),
                         a.handlers.empty() ? "" : fmt::format("; ran {}", fmt::join(a.handlers, ", ")),
                         a.reboot_needed ? "; REBOOT NEEDED (drain first)" : "");
      break;
    case State::kLocked: text = "refused: " + a.detail + "\n"; break;
    case State::kStale: text = "refused: " + a.detail + "\n"; break;
    case State::kFailed:
      text = fmt::format("failed at {}: {}\n", a.step, a.detail);
      if (!a.written.empty()) text += fmt::format("  written before the failure: {}\n", fmt::join(a.written, ", "));
      if (!a.items.empty()) text += fmt::format("  done before the failure: {}\n", fmt::join(a.items, ", "));
      if (a.lock_left) text += fmt::format("  the lock {} may be left; check and remove it by hand\n", apply::kLockDir);
      break;
  }
  return text;
}

std::string LocalHolder(const std::string& run_id, const std::string& time) {
  return fmt::format("run {} by {} at {}", run_id, LocalUserAtHost(), time);
}

// --batch: "8" nodes or "25%" of them, at least 1; "" = all at once.
std::optional<std::size_t> BatchSize(Context& ctx, const std::string& batch, std::size_t nodes) {
  if (batch.empty()) return std::max<std::size_t>(nodes, 1);
  const bool percent = batch.back() == '%';
  const std::string digits = percent ? batch.substr(0, batch.size() - 1) : batch;
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) {
    ctx.Error(fmt::format("--batch '{}': give a node count (8) or a percentage (25%)", batch));
    return std::nullopt;
  }
  const std::size_t n = std::stoul(digits);
  if (n == 0 || (percent && n > 100)) {
    ctx.Error(fmt::format("--batch '{}': must be at least 1{}", batch, percent ? "% and at most 100%" : ""));
    return std::nullopt;
  }
  if (!percent) return n;
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(static_cast<double>(nodes) * n / 100.0)));
}

std::optional<std::string> ReadText(Context& ctx, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ctx.Error(fmt::format("{}: cannot read it", path));
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Command ApplyCommand() {
  return {"apply",
          "Converge nodes over SSH: packages, files, modules, sysctl, services; locked, backed up, atomic, journalled",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string input;
              RemoteFlags remote;
              bool yes = false;
              std::string only;
              std::string batch;
              int max_fail = 0;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY|PLANFILE", o->input, "Inventory YAML file, or a plan saved by `plan --out`")
                ->required();
            AddRemoteOptions(app, &o->remote);
            app.add_flag("-y,--yes", o->yes, "Apply without asking (required when stdin is not a terminal)");
            app.add_option("--only", o->only, "Manage only these parts: files,packages,modules,sysctl,services,agent");
            app.add_option("--batch", o->batch, "Rolling batches of N nodes or P% of them (default: all at once)");
            app.add_option("--max-fail", o->max_fail,
                           "Start no new nodes once this many have failed (default 0: never stop)")
                ->check(CLI::NonNegativeNumber);
            AddFormatOption(app, &o->format);
            app.footer("Exit codes: 0 every node applied or unchanged; 1 a node failed, was locked, changed since the\n"
                       "saved plan, was not started (--max-fail) or was unreachable, or the saved plan is stale;\n"
                       "2 invalid inventory or usage, --yes missing without a terminal, or not confirmed.");
            return [o](Context& ctx) {
              // A saved plan names its inventory and what it was computed from.
              std::optional<plan::SavedPlan> saved;
              std::string inventory = o->input;
              std::string only = o->only;
              {
                auto text = ReadText(ctx, o->input);
                if (!text) return static_cast<int>(kExitUsage);
                if (plan::LooksLikeSavedPlan(*text)) {
                  Result<plan::SavedPlan> p = plan::ParseSavedPlan(o->input, *text);
                  if (!p.ok()) {
                    ctx.Error(p.error().message);
                    return static_cast<int>(kExitUsage);
                  }
                  if (!o->only.empty()) {
                    ctx.Error("--only cannot be given with a saved plan: the plan already says what it manages");
                    return static_cast<int>(kExitUsage);
                  }
                  saved = std::move(*p);
                  inventory = saved->inventory;
                  only = saved->parts;
                }
              }
              auto cluster = LoadInventory(ctx, inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              if (saved) {
                auto sha = FileSha256(ctx, inventory);
                if (!sha) return static_cast<int>(kExitUsage);
                if (*sha != saved->inventory_sha256) {
                  ctx.Error(fmt::format("{}: the plan is stale: {} changed since the plan was made ({}); run plan again",
                                        o->input, inventory, saved->created));
                  return static_cast<int>(kExitFindings);
                }
              }
              auto parts = PartsFrom(ctx, only);
              if (!parts) return static_cast<int>(kExitUsage);
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);
              std::map<std::string, const plan::SavedNode*> planned;
              if (saved) {
                // Only the nodes the plan changes; a node it found unchanged is not touched.
                for (const plan::SavedNode& n : saved->nodes) planned[n.node] = &n;
                std::erase_if(*targets, [&](const remote::Target& t) { return !planned.count(t.node); });
                if (targets->empty()) {
                  ctx.Out("The saved plan has no changes for the selected nodes; nothing to do.\n");
                  return static_cast<int>(kExitOk);
                }
              }
              if (!o->yes && !ctx.Interactive()) {
                ctx.Error("apply: stdin is not a terminal, so there is no one to confirm; rerun with --yes "
                          "(see what would change first with `gpuforge plan`)");
                return static_cast<int>(kExitUsage);
              }
              auto batch = BatchSize(ctx, o->batch, targets->size());
              if (!batch) return static_cast<int>(kExitUsage);
              auto desired = DesiredNodesFor(ctx, *cluster, *targets, inventory, *parts);
              if (!desired) return static_cast<int>(kExitUsage);
              if (saved) {
                for (const remote::Target& t : *targets) {
                  if (plan::DesiredDigest(desired->at(t.node)) != planned[t.node]->desired_sha256) {
                    ctx.Error(fmt::format("{}: the plan is stale: what gpuforge would write to {} is no longer what "
                                          "the plan showed (templates or gpuforge changed); run plan again",
                                          o->input, t.node));
                    return static_cast<int>(kExitFindings);
                  }
                }
              }

              InterruptGuard interrupt;
              std::unique_ptr<remote::Connector> ssh = MakeConnector(o->remote);
              remote::FanoutOptions fo;
              fo.width = o->remote.fanout;
              fo.cancel = interrupt.flag();

              if (!o->yes) {
                // Show the plan, then ask: only "yes" goes on.
                apply::ReadPlansOptions ro;
                ro.fanout = fo;
                const std::vector<apply::NodePlanRead> reads = apply::ReadPlans(*ssh, *targets, *desired, ro);
                std::vector<std::pair<std::string, std::string>> blocks;
                for (const apply::NodePlanRead& r : reads) {
                  blocks.emplace_back(r.node, r.plan ? report::PlanSummary(*r.plan) + "\n" +
                                                           report::PlanLines(*r.plan, ctx.out_style)
                                                     : "error: " + r.error + "\n");
                }
                const apply::PlanCounts counts = apply::CountPlans(reads);
                for (const report::Folded& g : report::FoldIdentical(blocks)) {
                  ctx.Out(fmt::format("{} ({}): {}", ctx.out_style.Bold(g.nodes), g.count, g.text));
                }
                ctx.Out(fmt::format("\n{} changes on {} nodes, in batches of {}. Apply them? Only 'yes' is accepted: ",
                                    counts.add + counts.change + counts.destroy, targets->size(), *batch));
                std::fflush(ctx.io.out);
                if (ctx.ReadLine() != "yes") {
                  ctx.Err("apply: not confirmed; nothing was changed\n");
                  return static_cast<int>(kExitUsage);
                }
              }

              apply::RolloutOptions ro;
              ro.batch = *batch;
              ro.max_fail = o->max_fail;
              ro.fanout = fo;
              const auto now = std::chrono::system_clock::now();
              ro.apply.run_id = apply::MakeRunId(now, std::random_device{}());
              ro.apply.time_utc = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(now));
              ro.apply.holder = LocalHolder(ro.apply.run_id, ro.apply.time_utc);
              for (const auto& [node, n] : planned) ro.expect_state_sha256[node] = n->state_sha256;
              ro.controller = cluster->software.scheduler.controller;
              const apply::RolloutResult result = apply::Rollout(*ssh, *targets, *desired, ro);
              const std::string& run_id = result.run_id;

              std::vector<std::pair<std::string, std::string>> blocks;
              nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
              for (const apply::NodeOutcome& n : result.nodes) {
                const std::string& node = n.node;
                if (!n.result) {
                  if (n.NotStarted()) {
                    blocks.emplace_back(node, "not started: --max-fail reached or interrupted\n");
                    nodes.push_back({{"node", node}, {"state", "not-started"}});
                    continue;
                  }
                  blocks.emplace_back(node, "unreachable: " + n.unreachable + "\n");
                  nodes.push_back({{"node", node}, {"state", "unreachable"}, {"error", n.unreachable}});
                  continue;
                }
                const apply::NodeApply& a = *n.result;
                blocks.emplace_back(node, Outcome(a));
                nlohmann::ordered_json j = {{"node", node},         {"state", apply::ToString(a.state)},
                                            {"written", a.written}, {"removed", a.removed},
                                            {"done", a.items},      {"handlers", a.handlers},
                                            {"reboot_needed", a.reboot_needed}};
                if (!a.step.empty()) j["step"] = a.step;
                if (!a.detail.empty()) j["error"] = a.detail;
                j["lock_left"] = a.lock_left;
                nodes.push_back(std::move(j));
              }
              if (o->format == Format::kJson) {
                nlohmann::ordered_json j = {{"schema", "gpuforge.apply/v1"}, {"run", run_id},
                                            {"applied", result.applied}, {"unchanged", result.unchanged},
                                            {"failed", result.failed}, {"not_started", result.not_started},
                                            {"cluster_handlers", result.handler_lines}, {"reboot_needed", result.reboot_needed},
                                            {"nodes", nodes}};
                ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
              } else {
                for (const report::Folded& g : report::FoldIdentical(blocks)) {
                  ctx.Out(fmt::format("{} ({}): {}", ctx.out_style.Bold(g.nodes), g.count, g.text));
                }
                for (const std::string& l : result.handler_lines) ctx.Out(l + "\n");
                if (!result.reboot_needed.empty()) {
                  ctx.Out(fmt::format("Reboot needed (drain first): {}\n", hostlist::Fold(result.reboot_needed)));
                }
                ctx.Out(fmt::format("Apply {}: {} applied, {} unchanged, {} failed{}.\n", run_id, result.applied,
                                    result.unchanged, result.failed,
                                    result.not_started > 0 ? fmt::format(", {} not started", result.not_started) : ""));
                if (result.applied > 0) {
                  ctx.Out(fmt::format("Undo the file changes with: gpuforge rollback {} --run {}\n", inventory, run_id));
                }
              }
              return static_cast<int>(result.ok() ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
