#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/facts/collect.h"
#include "gpuforge/facts/json.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/report/fold.h"

namespace gpuforge::cli {

Command FactsCommand() {
  return {"facts", "Gather OS, CPU, PCI, GPU, InfiniBand and software facts from nodes; --check reports drift",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              RemoteFlags remote;
              double timeout_s = 180;
              bool check = false;
              Format format = Format::kText;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            AddRemoteOptions(app, &o->remote);
            app.add_option("--timeout", o->timeout_s, "Seconds the gather script may run on each node (default 180)")
                ->check(CLI::Range(1.0, 3600.0))
                ->option_text("SECONDS");
            app.add_flag("--check", o->check,
                         "Compare the facts with the inventory and between nodes of one profile; exit 1 on drift");
            AddFormatOption(app, &o->format);
            app.footer(
                "One SSH round trip per node: a POSIX sh script (no root needed) prints every source.\n"
                "Drift codes and thresholds: docs/facts.md.\n"
                "Exit codes: 0 gathered (and, with --check, no drift), 1 a node failed or drifted, 2 invalid\n"
                "inventory or flags.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              auto targets = SelectTargets(ctx, *cluster, o->remote);
              if (!targets) return static_cast<int>(kExitUsage);

              InterruptGuard interrupt;
              ProgressBar bar(ctx, "facts");
              std::unique_ptr<remote::Connector> ssh = MakeConnector(o->remote);
              remote::FanoutOptions fo = OneStepFanout(o->remote, interrupt, bar);
              facts::CollectOptions co;
              co.timeout = std::chrono::milliseconds(static_cast<long long>(o->timeout_s * 1000));
              co.fanout = fo;
              co.check = o->check;
              const facts::Collected collected = facts::Collect(*ssh, *targets, *cluster, co);
              bar.Clear();
              const std::vector<facts::Gathered>& gathered = collected.gathered;
              const std::vector<facts::Drift>& drift = collected.drift;
              const std::size_t failed = collected.failed;

              if (o->format == Format::kJson) {
                nlohmann::ordered_json j = {{"schema", "gpuforge.facts/v1"}};
                nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
                for (const facts::Gathered& g : gathered) {
                  if (g.facts.ok()) {
                    nodes.push_back(facts::ToJson(*g.facts));
                  } else {
                    nodes.push_back({{"node", g.node}, {"error", g.facts.error().message}});
                  }
                }
                j["nodes"] = std::move(nodes);
                if (o->check) {
                  nlohmann::ordered_json d = nlohmann::ordered_json::array();
                  for (const facts::Drift& x : drift) d.push_back(facts::ToJson(x));
                  j["drift"] = std::move(d);
                }
                ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
              } else {
                std::vector<std::pair<std::string, std::string>> lines;
                for (const facts::Gathered& g : gathered) {
                  if (!g.facts.ok()) continue;
                  std::string text = facts::Summary(*g.facts) + "\n";
                  for (const facts::Section& s : g.facts->sections) {
                    if (s.outcome != facts::Outcome::kFailed) continue;
                    text += fmt::format("  {} failed (exit {}){}\n", s.command, s.exit_code,
                                        s.first_line.empty() ? "" : ": " + s.first_line);
                  }
                  lines.emplace_back(g.node, text);
                }
                for (const report::Folded& f : report::FoldIdentical(lines)) {
                  ctx.Out(fmt::format("{}: {}", ctx.out_style.Bold(f.nodes), f.text));
                }
                for (const facts::Gathered& g : gathered) {
                  if (!g.facts.ok()) ctx.Out(fmt::format("{}\n", ctx.out_style.Red(g.facts.error().message)));
                }
                if (o->check) {
                  if (drift.empty()) {
                    ctx.Out(ctx.out_style.Green("no drift") + fmt::format(": {} nodes match the inventory\n",
                                                                          gathered.size()));
                  } else {
                    ctx.Out(fmt::format("\n{} drift findings:\n", drift.size()));
                    for (const facts::Drift& d : drift) {
                      ctx.Out(fmt::format("{} {} {}{}: {}\n", d.node, ctx.out_style.Yellow(d.code), d.subject,
                                          d.expected.empty() && d.actual.empty()
                                              ? ""
                                              : fmt::format(" (expected {}, found {})", d.expected, d.actual),
                                          d.message));
                    }
                  }
                }
              }
              if (ctx.verbosity >= 0) {
                ctx.Err(fmt::format("facts: {} gathered, {} failed{}{}\n", gathered.size() - failed, failed,
                                    o->check ? fmt::format(", {} drift", drift.size()) : "",
                                    interrupt.interrupted() ? " (interrupted)" : ""));
              }
              return static_cast<int>(failed == 0 && drift.empty() ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
