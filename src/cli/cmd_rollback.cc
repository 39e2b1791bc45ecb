#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <random>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/rollback_run.h"
#include "gpuforge/report/rollback_report.h"

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
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
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
                  fmt::format("rollback {} of {} by {} (pid {}) at {}", run_id, o->run, LocalUserAtHost(), ::getpid(), time);

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
              if (o->format == Format::kJson) {
                ctx.OutJson(report::RollbackJson(run));
              } else {
                ctx.Out(report::RollbackText(run, ctx.out_style));
              }
              return static_cast<int>(run.ok() ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
