#include <fmt/format.h>
#include <signal.h>
#include <cerrno>
#include <unistd.h>

#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/unlock.h"
#include "gpuforge/report/unlock_report.h"

namespace gpuforge::cli {
namespace {

bool Alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

std::string ThisHost() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

}  // namespace

Command UnlockCommand() {
  return {"unlock", "Remove the node lock a killed apply or rollback run left, only where that run holds it",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              std::string run;
              RemoteFlags remote;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            app.add_option("--run", o->run, "The run whose lock to remove (apply and the refusal print its id)")
                ->required();
            AddRemoteOptions(app, &o->remote);
            AddFormatOption(app, &o->format);
            app.footer("A lock held by any other run is shown and left. Exit codes: 0 every selected node's lock\n"
                       "removed or absent; 1 another run holds one, or a node failed or was unreachable; 2 invalid\n"
                       "inventory, run id or usage.");
            return [o](Context& ctx) {
              if (!apply::IsRunId(o->run)) {
                ctx.Error(fmt::format("--run '{}': not a run id (like 20261130T064252Z-1a2b3c4d)", o->run));
                return static_cast<int>(kExitUsage);
              }
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);
              InterruptGuard interrupt;
              ProgressBar bar(ctx, "unlock");
              std::unique_ptr<remote::Connector> ssh = MakeConnector(o->remote);
              const apply::UnlockRun run = apply::UnlockNodes(*ssh, *targets, o->run, OneStepFanout(o->remote, interrupt, bar));
              bar.Clear();
              if (o->format == Format::kJson) {
                ctx.OutJson(report::UnlockJson(run));
              } else {
                ctx.Out(report::UnlockText(run, ctx.out_style, ThisHost(), Alive));
              }
              return static_cast<int>(run.ok() ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
