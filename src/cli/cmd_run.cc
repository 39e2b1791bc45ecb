#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/base/fold.h"

namespace gpuforge::cli {
namespace {

// One node's outcome of `gpuforge run`.
struct NodeRun {
  enum class State { kOk, kFailed, kUnreachable } state = State::kUnreachable;
  remote::ExecResult result;
  std::string error;  // unreachable, or the transport failed mid-command
};

// Drops the "node NAME: " every remote error starts with, so identical errors fold.
std::string WithoutNodePrefix(const std::string& message, const std::string& node) {
  std::string prefix = "node " + node + ": ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

std::string Block(const NodeRun& r, const remote::ExecOptions& eo) {
  if (r.state == NodeRun::State::kUnreachable) return "unreachable: " + r.error + "\n";
  if (!r.error.empty()) return "error: " + r.error + "\n";
  std::string text = r.result.out;
  if (!text.empty() && text.back() != '\n') text += "\n";
  if (!r.result.err.empty()) {
    text += "stderr:\n" + r.result.err;
    if (text.back() != '\n') text += "\n";
  }
  if (r.state == NodeRun::State::kFailed) text += remote::DescribeEnd(r.result, eo) + "\n";
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

              const auto start = std::chrono::steady_clock::now();
              std::vector<NodeRun> runs(targets->size());
              remote::Fleet fleet(*ssh, *targets, fo);
              fleet.Each([&](std::size_t i, remote::Session& s) {
                Result<remote::ExecResult> r = s.Exec(command, eo);
                if (!r.ok()) {
                  // Connected, then the transport failed: the command may have run.
                  runs[i].state = NodeRun::State::kFailed;
                  runs[i].error = r.error().message;
                  return false;
                }
                runs[i].result = std::move(*r);
                runs[i].state = runs[i].result.Succeeded() ? NodeRun::State::kOk : NodeRun::State::kFailed;
                return runs[i].state == NodeRun::State::kOk;
              });
              for (std::size_t i = 0; i < runs.size(); ++i) {
                if (runs[i].state == NodeRun::State::kUnreachable && runs[i].error.empty() && fleet.lost(i)) {
                  runs[i].error = fleet.lost(i)->message;
                }
                runs[i].error = WithoutNodePrefix(runs[i].error, fleet.target(i).node);
              }
              fleet.Close();
              bar.Clear();
              const double seconds =
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

              std::size_t ok = 0, failed = 0, unreachable = 0;
              for (const NodeRun& r : runs) {
                ok += r.state == NodeRun::State::kOk;
                failed += r.state == NodeRun::State::kFailed;
                unreachable += r.state == NodeRun::State::kUnreachable;
              }
              if (o->format == Format::kJson) {
                nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
                for (std::size_t i = 0; i < runs.size(); ++i) {
                  const NodeRun& r = runs[i];
                  nlohmann::ordered_json n = {{"node", (*targets)[i].node}};
                  n["state"] = r.state == NodeRun::State::kOk       ? "ok"
                               : r.state == NodeRun::State::kFailed ? "failed"
                                                                    : "unreachable";
                  if (!r.error.empty()) {
                    n["error"] = r.error;
                  } else {
                    n["end"] = remote::DescribeEnd(r.result, eo);
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
                for (std::size_t i = 0; i < runs.size(); ++i) blocks.emplace_back((*targets)[i].node, Block(runs[i], eo));
                std::vector<base::Folded> groups;
                if (o->no_fold) {
                  for (auto& [node, text] : blocks) groups.push_back({node, 1, text});
                } else {
                  groups = base::FoldIdentical(blocks);
                }
                const std::string rule(15, '-');
                for (const base::Folded& g : groups) {
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
