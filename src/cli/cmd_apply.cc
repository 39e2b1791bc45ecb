#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "cli/commands.h"
#include "gpuforge/base/read_file.h"
#include "gpuforge/base/text.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/read_plans.h"
#include "gpuforge/apply/rollout.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/report/apply_report.h"

namespace gpuforge::cli {
namespace {

struct ApplyFlags {
  std::string input;
  RemoteFlags remote;
  bool yes = false;
  std::string only;
  std::string batch;
  std::string facts;
  int max_fail = 0;
  Format format = Format::kText;
};

// What the rollout works from: the inventory (or the one a saved plan names), the selected
// targets (with a saved plan only the nodes it changes), the batch size and the desired state.
struct ApplyInputs {
  std::optional<plan::SavedPlan> saved;
  std::string inventory;
  std::optional<model::Cluster> cluster;
  std::vector<remote::Target> targets;
  std::size_t batch = 1;
  std::map<std::string, plan::DesiredNode> desired;
};

// --batch: "8" nodes or "25%" of them, at least 1; "" = all at once.
std::optional<std::size_t> BatchSize(Context& ctx, const std::string& batch, std::size_t nodes) {
  if (batch.empty()) return std::max<std::size_t>(nodes, 1);
  const bool percent = batch.back() == '%';
  const std::string digits = percent ? batch.substr(0, batch.size() - 1) : batch;
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) {
    ctx.Error(fmt::format("--batch '{}': give a node count (8) or a percentage (25%)", batch));
    return std::nullopt;
  }
  const std::size_t n = std::stoul(digits);
  if (n == 0 || (percent && n > 100)) {
    ctx.Error(fmt::format("--batch '{}': must be at least 1{}", batch, percent ? "% and at most 100%" : ""));
    return std::nullopt;
  }
  if (!percent) return n;
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(static_cast<double>(nodes) * n / 100.0)));
}

// An inventory or a saved plan, through the one bounded reader (base/read_file.h).
std::optional<std::string> ReadText(Context& ctx, const std::string& path) {
  Result<std::string> text = base::ReadInputFile({path, "it", 64u << 20, false});
  if (!text.ok()) {
    ctx.Error(fmt::format("{}: {}", path, text.error().message));
    return std::nullopt;
  }
  return *text;
}

// Checks the flags and the inputs in the order users meet them. Returns the exit code when the
// command ends here (an error, or a saved plan with nothing to do), nullopt to go on.
std::optional<int> Prepare(Context& ctx, const ApplyFlags& f, ApplyInputs* in) {
  in->inventory = f.input;
  std::string only = f.only;
  auto text = ReadText(ctx, f.input);
  if (!text) return kExitUsage;
  // A saved plan names its inventory and what it was computed from.
  if (plan::LooksLikeSavedPlan(*text)) {
    Result<plan::SavedPlan> p = plan::ParseSavedPlan(f.input, *text);
    if (!p.ok()) {
      ctx.Error(p.error().message);
      return kExitUsage;
    }
    if (!f.only.empty()) {
      ctx.Error("--only cannot be given with a saved plan: the plan already says what it manages");
      return kExitUsage;
    }
    in->saved = std::move(*p);
    // #28 item 17: the plan names its inventory relative to its own directory, and the file is
    // parsed only when its digest is the one the plan was made from. A plan is an artifact that
    // travels (CI); one edited to name a root-only file made a root job quote that file's lines
    // in its parse errors. Now such a file is only hashed: a digest that differs says "stale"
    // and nothing of the file is shown.
    const std::filesystem::path named = in->saved->inventory;
    if (named.empty() || named.is_absolute()) {
      ctx.Error(fmt::format("{}: the plan names its inventory as '{}'; a saved plan names it relative to the plan's "
                            "own directory: make the plan again with this gpuforge",
                            f.input, text::Visible(in->saved->inventory)));
      return kExitUsage;
    }
    in->inventory = (std::filesystem::path(f.input).parent_path() / named).lexically_normal().string();
    only = in->saved->parts;
    if (Status st = base::CheckInputFile({in->inventory, "the plan's inventory", 64u << 20}); !st.ok()) {
      ctx.Error(fmt::format("{}: {}", f.input, st.error().message));
      return kExitUsage;
    }
    auto sha = FileSha256(ctx, in->inventory);
    if (!sha) return kExitUsage;
    if (*sha != in->saved->inventory_sha256) {
      ctx.Error(fmt::format("{}: the plan is stale: {} changed since the plan was made ({}); run plan again", f.input,
                            in->inventory, in->saved->created));
      return kExitFindings;
    }
  }
  in->cluster = LoadInventory(ctx, in->inventory);
  if (!in->cluster) return kExitUsage;
  auto parts = PartsFrom(ctx, only);
  if (!parts) return kExitUsage;
  auto targets = SelectTargets(ctx, *in->cluster, f.remote);
  if (!targets) return kExitUsage;
  in->targets = std::move(*targets);
  std::map<std::string, const plan::SavedNode*> planned;
  if (in->saved) {
    // Only the nodes the plan changes; a node it found unchanged is not touched.
    for (const plan::SavedNode& n : in->saved->nodes) planned[n.node] = &n;
    std::erase_if(in->targets, [&](const remote::Target& t) { return !planned.count(t.node); });
    if (in->targets.empty()) {
      ctx.Out("The saved plan has no changes for the selected nodes; nothing to do.\n");
      return kExitOk;
    }
  }
  if (!f.yes && !ctx.Interactive()) {
    ctx.Error("apply: stdin is not a terminal, so there is no one to confirm; rerun with --yes "
              "(see what would change first with `gpuforge plan`)");
    return kExitUsage;
  }
  auto batch = BatchSize(ctx, f.batch, in->targets.size());
  if (!batch) return kExitUsage;
  in->batch = *batch;
  auto desired = DesiredNodesFor(ctx, *in->cluster, in->targets, in->inventory, *parts, f.facts);
  if (!desired) return kExitUsage;
  in->desired = std::move(*desired);
  for (const remote::Target& t : in->targets) {
    if (in->saved && plan::DesiredDigest(in->desired.at(t.node)) != planned[t.node]->desired_sha256) {
      ctx.Error(fmt::format("{}: the plan is stale: what gpuforge would write to {} is no longer what "
                            "the plan showed (templates or gpuforge changed); run plan again",
                            f.input, t.node));
      return kExitFindings;
    }
  }
  return std::nullopt;
}

// Shows the plan, then asks: only "yes" goes on.
bool Confirmed(Context& ctx, remote::Connector& connector, const ApplyInputs& in, const remote::FanoutOptions& fo) {
  apply::ReadPlansOptions ro;
  ro.fanout = fo;
  const std::vector<apply::NodePlanRead> reads = apply::ReadPlans(connector, in.targets, in.desired, ro);
  ctx.Out(report::ApplyPreviewText(reads, in.batch, ctx.out_style));
  std::fflush(ctx.io.out);
  if (ctx.ReadLine() == "yes") return true;
  ctx.Err("apply: not confirmed; nothing was changed\n");
  return false;
}

int RunApply(Context& ctx, const ApplyFlags& f) {
  ApplyInputs in;
  if (std::optional<int> done = Prepare(ctx, f, &in)) return *done;
  InterruptGuard interrupt;
  std::unique_ptr<remote::Connector> ssh = MakeConnector(f.remote);
  apply::RolloutOptions ro;
  ro.fanout.width = f.remote.fanout;
  ro.fanout.cancel = interrupt.flag();
  if (!f.yes && !Confirmed(ctx, *ssh, in, ro.fanout)) return kExitUsage;

  ro.batch = in.batch;
  ro.max_fail = f.max_fail;
  const auto now = std::chrono::system_clock::now();
  ro.apply.run_id = apply::MakeRunId(now, std::random_device{}());
  ro.apply.time_utc = fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(now));
  ro.apply.holder = fmt::format("run {} by {} (pid {}) at {}", ro.apply.run_id, LocalUserAtHost(), ::getpid(), ro.apply.time_utc);
  if (in.saved) {
    for (const plan::SavedNode& n : in.saved->nodes) ro.expect_state_sha256[n.node] = n.state_sha256;
  }
  ro.controller = in.cluster->software.scheduler.controller;
  const apply::RolloutResult result = apply::Rollout(*ssh, in.targets, in.desired, ro);
  if (f.format == Format::kJson) {
    ctx.OutJson(report::ApplyJson(result));
  } else {
    ctx.Out(report::ApplyText(result, in.inventory, ctx.out_style));
  }
  return result.ok() ? kExitOk : kExitFindings;
}

}  // namespace

Command ApplyCommand() {
  return {"apply",
          "Converge nodes over SSH: packages, files, modules, sysctl, services; locked, backed up, atomic, journalled",
          [](CLI::App& app) -> Runner {
            auto f = std::make_shared<ApplyFlags>();
            CompleteAs(app.add_option("INVENTORY|PLANFILE", f->input, "Inventory YAML file, or a plan saved by `plan --out`"), Values::kInventory)
                ->required();
            AddRemoteOptions(app, &f->remote);
            app.add_flag("-y,--yes", f->yes, "Apply without asking (required when stdin is not a terminal)");
            CompleteAs(app.add_option("--only", f->only, "Manage only these parts: files,packages,modules,sysctl,services,agent"), Values::kParts);
            CompleteAs(app.add_option("--facts", f->facts, kFactsDirHelp), Values::kDir)->option_text("DIR");
            app.add_option("--batch", f->batch, "Rolling batches of N nodes or P% of them (default: all at once)");
            app.add_option("--max-fail", f->max_fail,
                           "Start no new nodes once this many have failed (default 0: never stop)")
                ->check(CLI::NonNegativeNumber);
            AddFormatOption(app, &f->format);
            app.footer("Exit codes: 0 every node applied or unchanged; 1 a node failed, was locked, changed since the\n"
                       "saved plan, was not started (--max-fail) or was unreachable, or the saved plan is stale;\n"
                       "2 invalid inventory or usage, --yes missing without a terminal, or not confirmed.");
            return [f](Context& ctx) { return RunApply(ctx, *f); };
          }};
}

}  // namespace gpuforge::cli
