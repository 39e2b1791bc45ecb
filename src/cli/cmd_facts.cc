#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/facts/collect.h"
#include "gpuforge/report/facts_report.h"

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

              if (o->format == Format::kJson) {
                ctx.OutJson(report::FactsJson(collected));
              } else {
                ctx.Out(report::FactsText(collected, ctx.out_style));
              }
              if (ctx.verbosity >= 0) ctx.Err(report::FactsTally(collected, interrupt.interrupted()));
              return static_cast<int>(collected.failed == 0 && collected.drift.empty() ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
