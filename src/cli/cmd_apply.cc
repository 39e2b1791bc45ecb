#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/report/fold.h"

namespace gpuforge::cli {
namespace {

std::string Outcome(const apply::NodeApply& a) {
  std::string text;
  switch (a.state) {
    case apply::NodeApply::State::kUnchanged: text = "no changes\n"; break;
    case apply::NodeApply::State::kApplied:
      text = fmt::format("applied: {} created, {} changed{}\n", a.plan.Count(plan::Action::kCreate),
                         a.plan.Count(plan::Action::kChange),
                         a.handlers.empty() ? "" : fmt::format("; ran {}", fmt::join(a.handlers, ", ")));
      break;
    case apply::NodeApply::State::kLocked: text = "refused: " + a.detail + "\n"; break;
    case apply::NodeApply::State::kFailed:
      text = fmt::format("failed at {}: {}\n", a.step, a.detail);
      if (!a.written.empty()) text += fmt::format("  written before the failure: {}\n", fmt::join(a.written, ", "));
      if (a.lock_left) text += fmt::format("  the lock {} may be left; check and remove it by hand\n", apply::kLockDir);
      break;
  }
  return text;
}

std::string LocalHolder(const std::string& run_id, const std::string& time) {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  const char* user = std::getenv("USER");
  return fmt::format("run {} by {}@{} at {}", run_id, user != nullptr ? user : "?", host, time);
}

}  // namespace

Command ApplyCommand() {
  return {"apply", "Write the rendered files to the nodes over SSH: lock, back up, replace atomically, run handlers",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              RemoteFlags remote;
              bool yes = false;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            AddRemoteOptions(app, &o->remote);
            app.add_flag("-y,--yes", o->yes, "Apply without asking (required when stdin is not a terminal)");
            AddFormatOption(app, &o->format);
            app.footer("Exit codes: 0 every node applied or unchanged; 1 a node failed, was locked or unreachable;\n"
                       "2 invalid inventory or usage, --yes missing without a terminal, or not confirmed.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);
              const bool tty = ::isatty(STDIN_FILENO) == 1;
              if (!o->yes && !tty) {
                ctx.Error("apply: stdin is not a terminal, so there is no one to confirm; rerun with --yes "
                          "(see what would change first with `gpuforge plan`)");
                return static_cast<int>(kExitUsage);
              }
              auto desired = DesiredFilesFor(ctx, *cluster, *targets, o->inventory);
              if (!desired) return static_cast<int>(kExitUsage);

              InterruptGuard interrupt;
              std::unique_ptr<remote::Connector> ssh = remote::MakeSshConnector(SshOptionsFrom(o->remote));
              remote::FanoutOptions fo;
              fo.width = o->remote.fanout;
              fo.cancel = interrupt.flag();
              remote::Fleet fleet(*ssh, *targets, fo);

              if (!o->yes) {
                // Show the plan, then ask: only "yes" goes on.
                std::vector<std::string> lines(targets->size());
                std::size_t changes = 0;
                fleet.Each([&](std::size_t i, remote::Session& s) {
                  Result<plan::NodePlan> p = apply::ReadPlan(s, desired->at(s.target().node), s.target().sudo);
                  if (!p.ok()) {
                    lines[i] = "error: " + p.error().message + "\n";
                    return false;
                  }
                  lines[i] = p->HasChanges() ? FilePlanLines(*p, ctx.out_style) : "    no changes\n";
                  changes += p->Count(plan::Action::kCreate) + p->Count(plan::Action::kChange);
                  return true;
                });
                std::vector<std::pair<std::string, std::string>> blocks;
                for (std::size_t i = 0; i < lines.size(); ++i) {
                  blocks.emplace_back((*targets)[i].node, lines[i].empty() && fleet.lost(i) ? "error: " + fleet.lost(i)->message + "\n" : lines[i]);
                }
                for (const report::Folded& g : report::FoldIdentical(blocks)) {
                  ctx.Out(fmt::format("{} ({}):\n{}", ctx.out_style.Bold(g.nodes), g.count, g.text));
                }
                ctx.Out(fmt::format("\n{} file changes. Apply them? Only 'yes' is accepted: ", changes));
                std::fflush(ctx.io.out);
                std::string answer;
                std::getline(std::cin, answer);
                if (answer != "yes") {
                  ctx.Err("apply: not confirmed; nothing was changed\n");
                  return static_cast<int>(kExitUsage);
                }
              }

              const auto now = std::chrono::system_clock::now();
              const std::string run_id = apply::MakeRunId(now, std::random_device{}());
              const std::string time =
                  fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(now));
              ProgressBar bar(ctx, "apply");
              std::vector<std::optional<apply::NodeApply>> results(targets->size());
              fleet.Each([&](std::size_t i, remote::Session& s) {
                apply::ApplyOptions ao{run_id, LocalHolder(run_id, time), time, s.target().sudo};
                results[i] = apply::ApplyNode(s, desired->at(s.target().node), ao);
                return results[i]->state == apply::NodeApply::State::kApplied ||
                       results[i]->state == apply::NodeApply::State::kUnchanged;
              });
              std::size_t applied = 0, unchanged = 0, failed = 0;
              std::vector<std::pair<std::string, std::string>> blocks;
              nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
              for (std::size_t i = 0; i < results.size(); ++i) {
                const std::string& node = (*targets)[i].node;
                if (!results[i]) {
                  ++failed;
                  std::string why = fleet.lost(i) ? fleet.lost(i)->message : "not reached";
                  blocks.emplace_back(node, "unreachable: " + why + "\n");
                  nodes.push_back({{"node", node}, {"state", "unreachable"}, {"error", why}});
                  continue;
                }
                const apply::NodeApply& a = *results[i];
                applied += a.state == apply::NodeApply::State::kApplied;
                unchanged += a.state == apply::NodeApply::State::kUnchanged;
                failed += a.state == apply::NodeApply::State::kFailed || a.state == apply::NodeApply::State::kLocked;
                blocks.emplace_back(node, Outcome(a));
                nlohmann::ordered_json n = {{"node", node}, {"state", apply::ToString(a.state)}, {"written", a.written},
                                            {"handlers", a.handlers}};
                if (!a.step.empty()) n["step"] = a.step;
                if (!a.detail.empty()) n["error"] = a.detail;
                n["lock_left"] = a.lock_left;
                nodes.push_back(std::move(n));
              }
              fleet.Close();
              bar.Clear();
              if (o->format == Format::kJson) {
                nlohmann::ordered_json j = {{"schema", "gpuforge.apply/v1"}, {"run", run_id},
                                            {"applied", applied}, {"unchanged", unchanged},
                                            {"failed", failed}, {"nodes", nodes}};
                ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
              } else {
                for (const report::Folded& g : report::FoldIdentical(blocks)) {
                  ctx.Out(fmt::format("{} ({}): {}", ctx.out_style.Bold(g.nodes), g.count, g.text));
                }
                ctx.Out(fmt::format("Apply {}: {} applied, {} unchanged, {} failed.\n", run_id, applied, unchanged, failed));
              }
              return static_cast<int>(failed == 0 ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
