#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/run_command.h"
#include "gpuforge/report/fold.h"

namespace gpuforge::cli {
namespace {

std::string Block(const remote::NodeRun& r) {
  if (r.state == remote::NodeRun::State::kUnreachable) return "unreachable: " + r.error + "\n";
  if (!r.error.empty()) return "error: " + r.error + "\n";
  std::string text = r.result.out;
  if (!text.empty() && text.back() != '\n') text += "\n";
  if (!r.result.err.empty()) {
    text += "stderr:\n" + r.result.err;
    if (text.back() != '\n') text += "\n";
  }
  if (r.state == remote::NodeRun::State::kFailed) text += r.end + "\n";
  return text;
}

}  // namespace

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
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
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
              const std::vector<remote::NodeRun>& runs = run.nodes;
              const std::size_t ok = run.ok, failed = run.failed, unreachable = run.unreachable;
              const double seconds = run.seconds;
              if (o->format == Format::kJson) {
                nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
                for (std::size_t i = 0; i < runs.size(); ++i) {
                  const remote::NodeRun& r = runs[i];
                  nlohmann::ordered_json n = {{"node", (*targets)[i].node}};
                  n["state"] = r.state == remote::NodeRun::State::kOk       ? "ok"
                               : r.state == remote::NodeRun::State::kFailed ? "failed"
                                                                            : "unreachable";
                  if (!r.error.empty()) {
                    n["error"] = r.error;
                  } else {
                    n["end"] = r.end;
                    if (r.result.end == remote::ExecEnd::kExited) n["exit_status"] = r.result.exit_status;
                    n["stdout"] = r.result.out;
                    n["stderr"] = r.result.err;
                    n["elapsed_ms"] = r.result.elapsed.count();
                  }
                  nodes.push_back(std::move(n));
                }
                nlohmann::ordered_json j = {{"schema", "gpuforge.run/v1"},
                                            {"command", command},
                                            {"ok", ok},
                                            {"failed", failed},
                                            {"unreachable", unreachable},
                                            {"nodes", std::move(nodes)}};
                // Output from nodes may hold any bytes; replace what is not UTF-8.
                ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
              } else {
                std::vector<std::pair<std::string, std::string>> blocks;
                for (std::size_t i = 0; i < runs.size(); ++i) blocks.emplace_back((*targets)[i].node, Block(runs[i]));
                std::vector<report::Folded> groups;
                if (o->no_fold) {
                  for (auto& [node, text] : blocks) groups.push_back({node, 1, text});
                } else {
                  groups = report::FoldIdentical(blocks);
                }
                const std::string rule(15, '-');
                for (const report::Folded& g : groups) {
                  ctx.Out(fmt::format("{}\n{} ({})\n{}\n{}", rule, ctx.out_style.Bold(g.nodes), g.count, rule, g.text));
                }
              }
              if (ctx.verbosity >= 0) {
                ctx.Err(fmt::format("run: {} ok, {} failed, {} unreachable, {} nodes in {:.1f} s{}\n", ok, failed,
                                    unreachable, runs.size(), seconds,
                                    interrupt.interrupted() ? " (interrupted)" : ""));
              }
              return static_cast<int>(failed + unreachable == 0 ? kExitOk : kExitFindings);
            };
          },
          /*takes_trailing=*/true};
}

}  // namespace gpuforge::cli
