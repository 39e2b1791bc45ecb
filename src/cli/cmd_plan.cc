#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fmt/chrono.h>
#include <pwd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "gpuforge/base/files.h"
#include "cli/remote_options.h"
#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/read_plans.h"
#include "gpuforge/render/render.h"
#include "gpuforge/estimate/estimate.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/plan/desired.h"
#include "gpuforge/plan/saved_plan.h"
#include "gpuforge/report/fold.h"
#include "gpuforge/report/plan_report.h"
#include "gpuforge/report/estimate_report.h"
#include "gpuforge/report/lint_report.h"

namespace gpuforge::cli {

namespace {

std::string ResourceLine(const plan::Resource& r, const report::Style& s) {
  return fmt::format("    {} {:<9} {:<42} {}\n", s.Green("+"), plan::ToString(r.kind), r.id, r.summary);
}

struct PlanFlags {
  RemoteFlags remote;
  Format format = Format::kText;
  bool detailed = false;
  bool diff = false;
  std::string only;
  std::string out;
};

// Reads every selected node's state and prints the plan. Returns the exit code.
int PlanOnline(Context& ctx, const model::Cluster& cluster, const std::string& inventory, const PlanFlags& flags) {
  const int input_error = flags.detailed ? kExitFindings : kExitUsage;
  auto parts = PartsFrom(ctx, flags.only);
  if (!parts) return input_error;
  auto targets = SelectTargets(ctx, cluster, flags.remote);
  if (!targets) return input_error;
  auto desired = DesiredNodesFor(ctx, cluster, *targets, inventory, *parts);
  if (!desired) return input_error;
  std::optional<std::string> inventory_sha;
  if (!flags.out.empty()) {
    inventory_sha = FileSha256(ctx, inventory);
    if (!inventory_sha) return input_error;
  }

  InterruptGuard interrupt;
  ProgressBar bar(ctx, "plan");
  std::unique_ptr<remote::Connector> ssh = MakeConnector(flags.remote);
  remote::FanoutOptions fo = OneStepFanout(flags.remote, interrupt, bar);
  apply::ReadPlansOptions ro;
  ro.fanout = fo;
  ro.diffs = flags.diff;
  const std::vector<apply::NodePlanRead> reads = apply::ReadPlans(*ssh, *targets, *desired, ro);
  bar.Clear();

  const apply::PlanCounts counts = apply::CountPlans(reads);
  const std::size_t add = counts.add, change = counts.change, destroy = counts.destroy, failed = counts.failed;
  int code = failed > 0 ? kExitFindings : (flags.detailed && add + change + destroy > 0) ? 2 : kExitOk;

  if (!flags.out.empty() && failed == 0) {
    plan::SavedPlan saved =
        apply::SavedPlanFrom(reads, *desired, NowUtc(), std::filesystem::absolute(inventory).lexically_normal().string(),
                             *inventory_sha, flags.only);
    if (Status st = base::WriteFileAtomically(flags.out, plan::ToJson(saved)); !st.ok()) {
      ctx.Error(st.error().message);
      return kExitFindings;
    }
  } else if (!flags.out.empty()) {
    ctx.Err(fmt::format("plan: {} was not written: {} node{} could not be read\n", flags.out, failed, failed == 1 ? "" : "s"));
  }

  if (flags.format == Format::kJson) {
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    for (const apply::NodePlanRead& r : reads) {
      if (r.plan) nodes.push_back(report::PlanJson(*r.plan, flags.diff ? &r.diffs : nullptr));
      else nodes.push_back({{"node", r.node}, {"state", "error"}, {"error", r.error}});
    }
    nlohmann::ordered_json j = {{"schema", "gpuforge.plan/v1"}, {"mode", "online"}, {"cluster", cluster.name},
                                {"nodes", nodes}, {"summary", {{"add", add}, {"change", change}, {"destroy", destroy},
                                                               {"failed", failed}}}};
    ctx.Out(j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
    return code;
  }
  const report::Style& s = ctx.out_style;
  ctx.Out(s.Bold(fmt::format("gpuforge plan: {} ({} node{}{})\n", cluster.name, targets->size(),
                             targets->size() == 1 ? "" : "s", flags.only.empty() ? "" : ", only " + flags.only)));
  // Nodes fold when their plans and their diffs are the same.
  std::vector<std::pair<std::string, std::string>> blocks;
  for (const apply::NodePlanRead& r : reads) {
    if (!r.plan) continue;
    blocks.emplace_back(r.node, report::PlanSummary(*r.plan) + "\n" +
                                    report::PlanLines(*r.plan, s, flags.diff ? &r.diffs : nullptr));
  }
  for (const report::Folded& g : report::FoldIdentical(blocks)) {
    ctx.Out(fmt::format("\n{} ({}): {}", s.Bold(g.nodes), g.count, g.text));
  }
  for (const apply::NodePlanRead& r : reads) {
    if (!r.error.empty()) ctx.Out(fmt::format("\n{} {}\n", s.Red("error:"), r.error));
  }
  ctx.Out(fmt::format("\n{}{}\n", report::PlanTotal(add, change, destroy),
                      failed > 0 ? fmt::format(" {} node{} could not be read.", failed, failed == 1 ? "" : "s") : ""));
  if (!flags.out.empty() && failed == 0) {
    ctx.Out(fmt::format("Saved to {}; `gpuforge apply {}` carries out exactly this plan.\n", flags.out, flags.out));
  }
  return code;
}

}  // namespace

std::optional<std::map<std::string, plan::DesiredNode>> DesiredNodesFor(Context& ctx, const model::Cluster& cluster,
                                                                        std::span<const remote::Target> targets,
                                                                        const std::string& inventory,
                                                                        const plan::Parts& parts) {
  render::Options ro;
  ro.inventory_label = std::filesystem::path(inventory).filename().string();
  for (const remote::Target& t : targets) ro.nodes.push_back(t.node);
  Result<render::Output> out = render::Render(cluster, ro);
  if (!out.ok()) {
    ctx.Error(out.error().message);
    return std::nullopt;
  }
  std::optional<plan::AgentBinary> agent;
  if (parts.count(plan::Part::kAgent)) {
    Result<plan::AgentBinary> a = LoadAgent();
    if (!a.ok()) {
      ctx.Error(a.error().message);
      return std::nullopt;
    }
    agent = std::move(*a);
  }
  std::map<std::string, plan::DesiredNode> m;
  for (const remote::Target& t : targets) {
    const model::Node* n = cluster.FindNode(t.node);
    m[t.node] = plan::DesiredNodeState(cluster, *n, plan::DesiredFiles(*out, t.node), parts, agent ? &*agent : nullptr);
  }
  return m;
}

Result<plan::AgentBinary> LoadAgent() {
  // The build writes a copy without debug information beside the binary (CMakeLists.txt);
  // an installed or copied binary without one pushes itself.
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return Error{fmt::format("agent: cannot find this binary (/proc/self/exe): {}", ec.message())};
  std::filesystem::path stripped = self.parent_path() / "gpuforge-agent";
  std::filesystem::path source = std::filesystem::is_regular_file(stripped, ec) ? stripped : self;
  std::ifstream in(source, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) return Error{fmt::format("agent: cannot read {}", source.string())};
  auto blob = std::make_shared<plan::Blob>();
  blob->bytes = ss.str();
  blob->sha256 = plan::Sha256Hex(blob->bytes);
  struct utsname u {};
  if (::uname(&u) != 0) return Error{"agent: uname failed"};
  return plan::AgentBinary{std::move(blob), u.machine};
}

std::optional<plan::Parts> PartsFrom(Context& ctx, const std::string& only) {
  if (only.empty()) return plan::AllParts();
  Result<plan::Parts> p = plan::ParseParts(only);
  if (!p.ok()) {
    ctx.Error("--only: " + p.error().message);
    return std::nullopt;
  }
  return *p;
}

std::optional<std::string> FileSha256(Context& ctx, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) {
    ctx.Error(fmt::format("{}: cannot read it", path));
    return std::nullopt;
  }
  return plan::Sha256Hex(ss.str());
}

std::string LocalUserAtHost() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::string user;
  if (const char* env = std::getenv("USER"); env != nullptr && *env != '\0') {
    user = env;
  } else if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    user = pw->pw_name;  // cron and systemd units often run without USER
  } else {
    user = fmt::format("uid{}", ::geteuid());
  }
  return user + "@" + host;
}

std::string NowUtc() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()));
}

Command PlanCommand() {
  return {"plan", "Show what gpuforge would configure; --offline: lint, estimates and desired state without SSH",
          [](CLI::App& app) -> Runner {
            struct Opts {
              std::string inventory;
              bool offline = false;
              PlanFlags flags;
            };
            auto o = std::make_shared<Opts>();
            app.add_option("INVENTORY", o->inventory, "Inventory YAML file")->required();
            app.add_flag("--offline", o->offline,
                         "Do not connect to nodes: lint, estimates and the desired state only");
            app.add_flag("--detailed-exitcode", o->flags.detailed,
                         "Online: exit 0 no changes, 1 error, 2 changes to make");
            app.add_flag("--diff", o->flags.diff, "Online: unified diffs of changed files (secrets masked)");
            app.add_option("--out", o->flags.out,
                           "Online: save the plan with the state it was made from; `apply FILE` carries it out");
            app.add_option("--only", o->flags.only, "Online: manage only these parts: files,packages,modules,sysctl,services,agent");
            AddRemoteOptions(app, &o->flags.remote);
            AddFormatOption(app, &o->flags.format);
            app.footer(
                "Online (default): reads each node's files over SSH and prints what apply would change.\n"
                "Exit codes: 0 plan made (--offline: design clean of errors); 1 lint errors (--offline) or a node\n"
                "could not be read; 2 invalid inventory or usage, or with --detailed-exitcode: changes to make.");
            return [o](Context& ctx) {
              auto cluster = LoadInventory(ctx, o->inventory);
              if (!cluster) return static_cast<int>(o->flags.detailed && !o->offline ? kExitFindings : kExitUsage);
              if (!o->offline) return PlanOnline(ctx, *cluster, o->inventory, o->flags);
              lint::LintResult lint_result = lint::Lint(*cluster);
              estimate::Estimates est = estimate::Estimate(*cluster);
              std::vector<plan::NodeClass> classes = plan::FoldDesiredState(*cluster);
              std::size_t resources = 0;
              for (const auto& nc : classes) resources += nc.resources.size() * nc.count;
              int code = lint_result.errors > 0 ? kExitFindings : kExitOk;
              if (o->flags.format == Format::kJson) {
                nlohmann::ordered_json j;
                j["schema"] = "gpuforge.plan/v1";
                j["mode"] = "offline";
                j["lint"] = report::LintJson(*cluster, lint_result);
                j["estimates"] = report::EstimateJson(*cluster, est);
                j["nodes"] = nlohmann::ordered_json::array();
                for (const auto& nc : classes) {
                  nlohmann::ordered_json rs = nlohmann::ordered_json::array();
                  for (const auto& r : nc.resources) {
                    rs.push_back({{"action", "create"}, {"kind", plan::ToString(r.kind)}, {"id", r.id},
                                  {"summary", r.summary}, {"reason", r.reason}});
                  }
                  j["nodes"].push_back({{"nodes", nc.nodes}, {"count", nc.count}, {"profile", nc.profile}, {"resources", rs}});
                }
                j["summary"] = {{"add", resources}, {"change", 0}, {"destroy", 0}};
                ctx.Out(j.dump(2) + "\n");
                return code;
              }
              const report::Style& s = ctx.out_style;
              ctx.Out(s.Bold(fmt::format("gpuforge plan: {} (offline: nothing read from nodes)\n\n", cluster->name)));
              ctx.Out(s.Bold("Design lint\n"));
              ctx.Out(report::LintText(*cluster, lint_result, s));
              ctx.Out("\n");
              ctx.Out(report::EstimateText(*cluster, est, s));
              ctx.Out("\n" + s.Bold("Desired state") + " (offline, so every resource shows as an add)\n");
              for (const auto& nc : classes) {
                ctx.Out(fmt::format("  {} ({} node{}, profile {}): {} to add\n", s.Bold(nc.nodes), nc.count,
                                    nc.count == 1 ? "" : "s", nc.profile, nc.resources.size()));
                for (const auto& r : nc.resources) ctx.Out(ResourceLine(r, s));
              }
              ctx.Out(fmt::format("\nPlan: {} to add, 0 to change, 0 to destroy.\n", resources));
              return code;
            };
          }};
}

}  // namespace gpuforge::cli
