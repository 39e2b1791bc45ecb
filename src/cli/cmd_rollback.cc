#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/rollback_run.h"
#include "gpuforge/report/fold.h"

namespace gpuforge::cli {

Command RollbackCommand() {
  return {"rollback", "Put back the files an apply run changed, from its backups on each node, and rerun handlers",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              std::string run;
              RemoteFlags remote;
              bool yes = false;
              bool force = false;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            app.add_option("--run", o->run, "The apply run to undo (its id is printed by apply and in the journal)")
                ->required();
            AddRemoteOptions(app, &o->remote);
            app.add_flag("-y,--yes", o->yes, "Roll back without asking (required when stdin is not a terminal)");
            app.add_flag("--force", o->force, "Restore files even where they changed after the run");
            AddFormatOption(app, &o->format);
            app.footer("Files only: packages, modules, sysctl values and services are not rolled back (pin the old\n"
                       "version in the inventory and apply). Exit codes: 0 every node rolled back or untouched by the\n"
                       "run; 1 a node failed, was locked or unreachable; 2 invalid inventory, run id or usage.");
            return [o](Context& ctx) {
              if (!apply::IsRunId(o->run)) {
                ctx.Error(fmt::format("--run '{}': not a run id (like 20261130T064252Z-1a2b3c4d)", o->run));
                return static_cast<int>(kExitUsage);
              }
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);
              if (!o->yes) {
                if (!ctx.Interactive()) {
                  ctx.Error("rollback: stdin is not a terminal, so there is no one to confirm; rerun with --yes");
                  return static_cast<int>(kExitUsage);
                }
                ctx.Out(fmt::format("Roll back the files run {} changed on {} node(s)? Only 'yes' is accepted: ", o->run,
                                    targets->size()));
                std::fflush(ctx.io.out);
                if (ctx.ReadLine() != "yes") {
                  ctx.Err("rollback: not confirmed; nothing was changed\n");
                  return static_cast<int>(kExitUsage);
                }
              }
              const auto now = std::chrono::system_clock::now();
              const std::string run_id = apply::MakeRunId(now, std::random_device{}());
              const std::string time = NowUtc();
              const std::string holder =
                  fmt::format("rollback {} of {} by {} at {}", run_id, o->run, LocalUserAtHost(), time);

              InterruptGuard interrupt;
              ProgressBar bar(ctx, "rollback");
              std::unique_ptr<remote::Connector> ssh = MakeConnector(o->remote);
              apply::RollbackRunOptions ro;
              ro.rollback.apply.run_id = run_id;
              ro.rollback.apply.holder = holder;
              ro.rollback.apply.time_utc = time;
              ro.rollback.target_run = o->run;
              ro.rollback.force = o->force;
              ro.fanout.width = o->remote.fanout;
              ro.fanout.cancel = interrupt.flag();
              const apply::RollbackRun run = apply::RollbackNodes(*ssh, *targets, ro);
              bar.Clear();
              const std::vector<std::string>& lines = run.handler_lines;
              std::vector<std::pair<std::string, std::string>> blocks;
              nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
              for (const apply::NodeOutcome& n : run.nodes) {
                const std::string& node = n.node;
                if (!n.result) {
                  blocks.emplace_back(node, "unreachable: " + n.unreachable + "\n");
                  nodes.push_back({{"node", node}, {"state", "unreachable"}, {"error", n.unreachable}});
                  continue;
                }
                const apply::NodeApply& a = *n.result;
                std::string text;
                switch (a.state) {
                  case apply::NodeApply::State::kApplied:
                    text = fmt::format("restored {}{}{}\n", a.written.empty() ? "nothing" : fmt::format("{}", fmt::join(a.written, ", ")),
                                       a.removed.empty() ? "" : fmt::format("; removed {}", fmt::join(a.removed, ", ")),
                                       a.handlers.empty() ? "" : fmt::format("; ran {}", fmt::join(a.handlers, ", ")));
                    break;
                  case apply::NodeApply::State::kUnchanged:
                    text = a.detail + "\n";
                    break;
                  default:
                    text = fmt::format("failed at {}: {}\n", a.step, a.detail);
                    if (!a.written.empty()) text += fmt::format("  restored before the failure: {}\n", fmt::join(a.written, ", "));
                }
                blocks.emplace_back(node, text);
                nlohmann::ordered_json j = {{"node", node}, {"state", apply::ToString(a.state)}, {"restored", a.written},
                                            {"removed", a.removed}, {"handlers", a.handlers}};
                if (!a.step.empty()) j["step"] = a.step;
                if (!a.detail.empty()) j["detail"] = a.detail;
                nodes.push_back(std::move(j));
              }
              if (o->format == Format::kJson) {
                nlohmann::ordered_json j = {{"schema", "gpuforge.rollback/v1"}, {"run", run_id}, {"rollback_of", o->run},
                                            {"rolled_back", run.rolled_back}, {"untouched", run.untouched}, {"failed", run.failed},
                                            {"cluster_handlers", lines}, {"nodes", nodes}};
                ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
              } else {
                for (const report::Folded& g : report::FoldIdentical(blocks)) {
                  ctx.Out(fmt::format("{} ({}): {}", ctx.out_style.Bold(g.nodes), g.count, g.text));
                }
                for (const std::string& l : lines) ctx.Out(l + "\n");
                ctx.Out(fmt::format("Rollback {} of {}: {} rolled back, {} untouched by that run, {} failed.\n", run_id,
                                    o->run, run.rolled_back, run.untouched, run.failed));
              }
              return static_cast<int>(run.ok() ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
