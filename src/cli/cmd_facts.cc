#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "cli/remote_options.h"
#include "gpuforge/report/junit.h"
#include "gpuforge/facts/collect.h"
#include "gpuforge/facts/saved.h"
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
              std::string save;
              Format format = Format::kText;
              OutputFlags outputs;
            };
            auto o = std::make_shared<Opts>();
            CompleteAs(app.add_option("INVENTORY", o->inventory, "Inventory YAML file"), Values::kInventory)->required();
            AddRemoteOptions(app, &o->remote);
            app.add_option("--timeout", o->timeout_s, "Seconds the gather script may run on each node (default 180)")
                ->check(CLI::Range(1.0, 3600.0))
                ->option_text("SECONDS");
            app.add_flag("--check", o->check,
                         "Compare the facts with the inventory and between nodes of one profile; exit 1 on drift");
            CompleteAs(app.add_option("--save", o->save,
                           "Keep each node's facts as DIR/NODE.facts, for `render`, `plan` and `apply --facts DIR`"), Values::kDir)
                ->option_text("DIR");
            AddFormatWithJunit(app, &o->format);
            AddJunitOption(app, &o->outputs);
            app.footer(
                "One SSH round trip per node: a POSIX sh script (no root needed) prints every source.\n"
                "Drift codes and thresholds: docs/facts.md.\n"
                "Exit codes: 0 gathered (and, with --check, no drift), 1 a node failed or drifted, 2 invalid\n"
                "inventory or flags.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(kExitUsage);
              // JUnit reports the drift findings; without --check there are none to report, and
              // a suite of passes would claim a check that did not run.
              if (!o->check && (o->format == Format::kJunit || !o->outputs.junit.empty())) {
                ctx.Error("JUnit output (--format junit, --junit) reports drift: add --check");
                return static_cast<int>(kExitUsage);
              }
              if (!CheckOutputs(ctx, o->outputs)) return static_cast<int>(kExitUsage);
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
              co.keep_raw = !o->save.empty();
              report::RunInfo info{cluster->name, o->inventory, std::chrono::system_clock::now(), 0, false};
              const auto t0 = std::chrono::steady_clock::now();
              const facts::Collected collected = facts::Collect(*ssh, *targets, *cluster, co);
              bar.Clear();
              info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

              if (!o->save.empty()) {
                Result<std::size_t> saved = facts::SaveGathered(o->save, collected);
                if (!saved.ok()) {
                  ctx.Error(saved.error().message);
                  return static_cast<int>(kExitFindings);
                }
                if (ctx.verbosity >= 0) {
                  ctx.Err(fmt::format("facts: saved {} node{} in {}\n", *saved, *saved == 1 ? "" : "s", o->save));
                }
              }
              if (o->format == Format::kJson) {
                ctx.OutJson(report::FactsJson(collected));
              } else if (o->format == Format::kJunit) {
                ctx.Out(report::FactsJunit(info, *cluster, collected));
              } else {
                ctx.Out(report::FactsText(collected, ctx.out_style));
              }
              if (ctx.verbosity >= 0) ctx.Err(report::FactsTally(collected, interrupt.interrupted()));
              if (!o->outputs.junit.empty() &&
                  !WriteOutput(ctx, "--junit", o->outputs.junit, report::FactsJunit(info, *cluster, collected))) {
                return static_cast<int>(kExitUsage);
              }
              return static_cast<int>(collected.failed == 0 && collected.drift.empty() ? kExitOk : kExitFindings);
            };
          }};
}

}  // namespace gpuforge::cli
