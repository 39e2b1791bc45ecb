#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/remote/run_command.h"
#include "gpuforge/report/run_report.h"

namespace gpuforge::cli {
Command RunCommand() {
  return {"run", "Run a shell command on the inventory's nodes in parallel, output folded like clush -b",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              RemoteFlags remote;
              double timeout_s = 60;
              bool sudo = false;
              bool no_fold = false;
              std::size_t output_cap = std::size_t{1} << 20;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            AddRemoteOptions(app, &o->remote);
            app.add_option("--timeout", o->timeout_s, "Seconds the command may run on each node (default 60)")
                ->check(CLI::Range(0.1, 86400.0))
                ->option_text("SECONDS");
            app.add_flag("--sudo", o->sudo, "Run through sudo -n on nodes whose ssh user is not root");
            app.add_option("--output-cap", o->output_cap,
                           "Bytes of stdout and of stderr kept per node; more stops the command (default 1 MiB)")
                ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30))
                ->option_text("BYTES");
            app.add_flag("--no-fold", o->no_fold, "One block per node, even when outputs are identical");
            AddFormatOption(app, &o->format);
            app.footer(
                "Example: gpuforge run cluster.yaml --nodes 'gpu[01-08]' -- nvidia-smi -L\n"
                "Exit codes: 0 the command succeeded on every node, 1 it failed, timed out or a node was\n"
                "unreachable, 2 invalid inventory or flags.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);
              // Like ssh: the words after -- are joined with spaces for the login shell.
              std::string command;
              for (const std::string& word : ctx.trailing) command += (command.empty() ? "" : " ") + word;
              if (command.empty()) {
                ctx.Error("run: give the command after --, e.g. gpuforge run INVENTORY -- uname -r");
                return static_cast<int>(kExitUsage);
              }

              InterruptGuard interrupt;
              ProgressBar bar(ctx, "run");
              std::unique_ptr<remote::Connector> ssh = MakeConnector(o->remote);
              remote::FanoutOptions fo = OneStepFanout(o->remote, interrupt, bar);
              remote::ExecOptions eo;
              eo.timeout = std::chrono::milliseconds(static_cast<long long>(o->timeout_s * 1000));
              eo.sudo = o->sudo;
              eo.output_cap = o->output_cap;
              eo.cancel = interrupt.flag();

              const remote::CommandRun run = remote::RunOnNodes(*ssh, *targets, command, eo, fo);
              bar.Clear();
              if (o->format == Format::kJson) {
                ctx.OutJson(report::RunJson(run));
              } else {
                // Command output stays raw, as pdsh and clush print it (docs/cli.md).
                ctx.OutRaw(report::RunText(run, !o->no_fold, ctx.out_style));
              }
              if (ctx.verbosity >= 0) ctx.Err(report::RunTally(run, interrupt.interrupted()));
              return static_cast<int>(run.failed + run.unreachable == 0 ? kExitOk : kExitFindings);
            };
          },
          /*takes_trailing=*/true};
}

}  // namespace gpuforge::cli
