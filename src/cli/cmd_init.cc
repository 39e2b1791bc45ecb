// `gpuforge init` (#33): the first inventory, written from the live nodes' facts. The facts
// come from the same gather script as `facts` (one SSH round trip per node), the grouping from
// facts/draft.h, the YAML from report/init_yaml.h; this file reads the flags, checks the text
// loads before anything is written, and never overwrites a file.

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/remote_options.h"
#include "gpuforge/base/files.h"
#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/names.h"
#include "gpuforge/base/text.h"
#include "gpuforge/facts/collect.h"
#include "gpuforge/facts/draft.h"
#include "gpuforge/facts/fabric.h"
#include "gpuforge/facts/measure_fabric.h"
#include "gpuforge/inventory/loader.h"
#include "gpuforge/lint/lint.h"
#include "gpuforge/report/facts_report.h"
#include "gpuforge/report/init_yaml.h"

namespace gpuforge::cli {
namespace {

struct InitOpts {
  RemoteFlags remote;
  std::string out;
  std::string name = "cluster";
  std::string addresses;
  std::string user;
  int port = 0;
  std::string identity_file;
  std::string jump;
  bool sudo = false;
  double timeout_s = 180;
  std::string diff;
  SubnetFlags subnet;
};

// The nodes to reach, as a cluster of bare nodes the remote layer resolves like any other.
std::optional<model::Cluster> NodesFromFlags(Context& ctx, const InitOpts& o, std::vector<std::string>* names) {
  Result<std::vector<std::string>> expanded = hostlist::Expand(o.remote.nodes, inventory::kMaxNodes);
  if (!expanded.ok()) {
    ctx.Error(fmt::format("--nodes: {} (an inventory holds at most {} nodes)", expanded.error().message,
                          inventory::kMaxNodes));
    return std::nullopt;
  }
  std::vector<std::string> addresses;
  if (!o.addresses.empty()) {
    Result<std::vector<std::string>> a = hostlist::Expand(o.addresses, inventory::kMaxNodes);
    if (!a.ok()) {
      ctx.Error("--addresses: " + a.error().message);
      return std::nullopt;
    }
    if (a->size() != expanded->size()) {
      ctx.Error(fmt::format("--addresses names {} addresses for {} nodes; they are zipped in order", a->size(),
                            expanded->size()));
      return std::nullopt;
    }
    addresses = std::move(*a);
  }
  model::Cluster c;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < expanded->size(); ++i) {
    const std::string& n = (*expanded)[i];
    if (auto bad = names::CheckHostname(n)) {
      ctx.Error(fmt::format("--nodes: {}: {}", text::Quote(n), *bad));
      return std::nullopt;
    }
    if (!seen.insert(n).second) {
      ctx.Error(fmt::format("--nodes: {} is named twice", n));
      return std::nullopt;
    }
    model::Node node;
    node.name = n;
    if (!addresses.empty()) {
      if (auto bad = names::CheckAddress(addresses[i])) {
        ctx.Error(fmt::format("--addresses: {}: {}", text::Quote(addresses[i]), *bad));
        return std::nullopt;
      }
      node.address = addresses[i];
    }
    node.ssh.user = o.user.empty() ? "root" : o.user;
    node.ssh.user_set = !o.user.empty();
    node.ssh.port = o.port > 0 ? o.port : 22;
    node.ssh.port_set = o.port > 0;
    node.ssh.identity_file = o.identity_file;
    node.ssh.jump = o.jump;
    node.ssh.sudo = o.sudo;
    c.nodes.push_back(std::move(node));
  }
  *names = std::move(*expanded);
  return c;
}

std::string Now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

// The gather script on every target, as `facts` runs it: Ctrl-C stops it, a progress bar on a
// terminal; with `check`, the drift from `cluster`.
facts::Collected Gather(Context& ctx, const InitOpts& o, const std::vector<remote::Target>& targets,
                        const model::Cluster& cluster, bool check, bool* interrupted) {
  InterruptGuard interrupt;
  ProgressBar bar(ctx, check ? "init --diff" : "init");
  std::unique_ptr<remote::Connector> ssh = MakeConnector(o.remote);
  facts::CollectOptions co;
  co.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  co.fanout = OneStepFanout(o.remote, interrupt, bar);
  co.check = check;
  facts::Collected collected = facts::Collect(*ssh, targets, cluster, co);
  bar.Clear();
  *interrupted = interrupt.interrupted();
  return collected;
}

// `--diff EXISTING`: the live nodes against an inventory already written, through facts' drift.
int Diff(Context& ctx, const InitOpts& o) {
  auto cluster = LoadInventory(ctx, o.diff);
  if (!cluster) return static_cast<int>(kExitUsage);
  auto targets = SelectTargets(ctx, *cluster, o.remote);
  if (!targets) return static_cast<int>(kExitUsage);
  bool interrupted = false;
  const facts::Collected collected = Gather(ctx, o, *targets, *cluster, /*check=*/true, &interrupted);
  ctx.Out(report::FactsText(collected, ctx.out_style));
  if (ctx.verbosity >= 0) ctx.Err(report::FactsTally(collected, interrupted));
  return static_cast<int>(collected.failed == 0 && collected.drift.empty() ? kExitOk : kExitFindings);
}

int Init(Context& ctx, const InitOpts& o, const std::string& command_line) {
  if (o.remote.nodes.empty() && !o.remote.local) {
    ctx.Error("--nodes: name the nodes to draft the inventory from (a hostlist: gpu[001-064]), or --local");
    return static_cast<int>(kExitUsage);
  }
  InitOpts opts = o;
  if (opts.remote.local && opts.remote.nodes.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    opts.remote.nodes = std::string(host).substr(0, std::string(host).find('.'));
  }
  if (auto bad = names::CheckName(opts.name)) {
    ctx.Error(fmt::format("--name: {}", *bad));
    return static_cast<int>(kExitUsage);
  }
  if (auto bad = opts.user.empty() ? std::nullopt : names::CheckUser(opts.user)) {
    ctx.Error(fmt::format("--user: {}: {}", text::Quote(opts.user), *bad));
    return static_cast<int>(kExitUsage);
  }
  if (!opts.jump.empty()) {
    if (auto bad = names::CheckJump(opts.jump)) {
      ctx.Error(fmt::format("--jump: {}: {}", text::Quote(opts.jump), *bad));
      return static_cast<int>(kExitUsage);
    }
  }
  if (!opts.identity_file.empty()) {
    if (auto bad = names::CheckPath(opts.identity_file)) {
      ctx.Error(fmt::format("--identity-file: {}", *bad));
      return static_cast<int>(kExitUsage);
    }
  }
  // The file is refused before any node is asked: an hour of gathering must not end in "exists".
  if (!opts.out.empty() && opts.out != "-") {
    std::error_code ec;
    if (std::filesystem::symlink_status(opts.out, ec).type() != std::filesystem::file_type::not_found) {
      ctx.Error(fmt::format("--out {}: already exists; init never overwrites (to compare the nodes with it: --diff {})",
                            opts.out, opts.out));
      return static_cast<int>(kExitUsage);
    }
  }
  std::vector<std::string> names;
  std::optional<model::Cluster> bare = NodesFromFlags(ctx, opts, &names);
  if (!bare) return static_cast<int>(kExitUsage);
  if (opts.remote.local && names.size() != 1) {
    ctx.Error(fmt::format("--local: this machine stands for one node, and --nodes names {}", names.size()));
    return static_cast<int>(kExitUsage);
  }
  Result<std::vector<remote::Target>> targets = remote::TargetsFor(*bare, {});
  if (!targets.ok()) {
    ctx.Error(targets.error().message);
    return static_cast<int>(kExitUsage);
  }

  // The subnet's view, from saved output (read before any node is asked) or from one node.
  std::optional<std::vector<facts::IbSubnet>> saved_subnets = ReadSubnetFiles(ctx, opts.subnet);
  if (!saved_subnets) return static_cast<int>(kExitUsage);
  std::vector<facts::IbSubnet> subnets = std::move(*saved_subnets);
  std::optional<remote::Target> subnet_node;
  if (!opts.subnet.subnet_from.empty()) {
    if (!subnets.empty()) {
      ctx.Error("--subnet-from runs the subnet tools on a node; --iblinkinfo and --ibnetdiscover read them from files: give one or the other");
      return static_cast<int>(kExitUsage);
    }
    for (const remote::Target& t : *targets) {
      if (t.node == opts.subnet.subnet_from) subnet_node = t;
    }
    if (!subnet_node) {
      ctx.Error(fmt::format("--subnet-from: {} is not one of --nodes", text::Quote(opts.subnet.subnet_from)));
      return static_cast<int>(kExitUsage);
    }
  }

  bool interrupted = false;
  const facts::Collected collected = Gather(ctx, opts, *targets, *bare, /*check=*/false, &interrupted);
  if (interrupted) {
    ctx.Error("interrupted; nothing written");
    return static_cast<int>(kExitFindings);
  }
  facts::Draft draft = facts::MakeDraft(collected.gathered);
  std::vector<std::string> subnet_problems;
  if (subnet_node) {
    InterruptGuard interrupt;
    ProgressBar bar(ctx, "init: subnet");
    std::unique_ptr<remote::Connector> conn = MakeConnector(opts.remote);
    facts::MeasureOptions mo;
    mo.timeout = std::chrono::milliseconds(static_cast<long long>(opts.timeout_s * 1000));
    mo.fanout = OneStepFanout(opts.remote, interrupt, bar);
    mo.gather_nodes = false;
    mo.subnet_node = *subnet_node;
    facts::Measured m = facts::MeasureFabric(*conn, {}, *bare, mo);
    bar.Clear();
    if (interrupt.interrupted()) {
      ctx.Error("interrupted; nothing written");
      return static_cast<int>(kExitFindings);
    }
    subnets = std::move(m.inputs.subnets);
    subnet_problems = std::move(m.problems);
  }
  facts::DraftSubnet(draft, collected.gathered, subnets);
  if (!subnet_problems.empty()) {
    if (!draft.fabric) draft.fabric.emplace();
    draft.fabric->notes.insert(draft.fabric->notes.begin(), subnet_problems.begin(), subnet_problems.end());
    for (const std::string& p : subnet_problems) ctx.Err(fmt::format("init: {}\n", text::OneLine(p)));
  }
  if (draft.nodes.empty()) {
    for (const facts::Draft::Unreached& u : draft.unreached) ctx.Err(fmt::format("  {}: {}\n", u.node, text::OneLine(u.why)));
    ctx.Error(fmt::format("no node of {} answered; nothing written", names.size()));
    return static_cast<int>(kExitFindings);
  }

  report::InitYamlOptions yo;
  yo.cluster_name = opts.name;
  yo.generated_by = command_line;
  yo.generated_at = Now();
  yo.ssh_user = opts.user;
  yo.ssh_port = opts.port;
  yo.ssh_identity_file = opts.identity_file;
  yo.ssh_jump = opts.jump;
  yo.ssh_sudo = opts.sudo;
  for (const model::Node& n : bare->nodes) {
    if (!n.address.empty()) yo.addresses[n.name] = n.address;
  }
  const std::string yaml = report::InitYaml(draft, yo);

  // What is written must load as written: checked here, before the file exists.
  const std::string shown = opts.out.empty() || opts.out == "-" ? "<init>" : opts.out;
  inventory::LoadOutcome loaded = inventory::LoadString(yaml, shown);
  if (!loaded.ok()) {
    ctx.Err(loaded.FormatDiagnostics());
    ctx.Error("the drafted inventory does not load (a gpuforge bug: please report it with the lines above); nothing written");
    return static_cast<int>(kExitFindings);
  }
  if (opts.out.empty() || opts.out == "-") {
    ctx.OutRaw(yaml);
  } else if (Status s = base::WriteFileAtomically(opts.out, yaml, 0644, /*replace=*/false); !s) {
    ctx.Error(s.error().message);
    return static_cast<int>(kExitFindings);
  }

  if (ctx.verbosity >= 0) {
    std::size_t outliers = 0;
    for (const facts::DraftProfile& p : draft.profiles) outliers += !p.outlier_of.empty();
    const lint::LintResult lint = lint::Lint(*loaded.cluster);
    const std::size_t errors = lint.errors, warnings = lint.warnings;
    ctx.Err(fmt::format("init: {} {} node{} in {} profile{} ({} outlier{}); {} not reached{}\n",
                        opts.out.empty() || opts.out == "-" ? "drafted" : "wrote " + opts.out + ":", draft.nodes.size(),
                        draft.nodes.size() == 1 ? "" : "s", draft.profiles.size(), draft.profiles.size() == 1 ? "" : "s",
                        outliers, outliers == 1 ? "" : "s", draft.unreached.size(),
                        draft.unreached.empty() ? "" : " (listed at the top of the file)"));
    ctx.Err(fmt::format("init: lint finds {} error{} and {} warning{} before the TODOs are filled in; next: {}\n",
                        errors, errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s",
                        shown == "<init>" ? "save it to a file and run gpuforge lint on it" : "gpuforge lint " + shown));
  }
  if (ctx.verbosity >= 0 && draft.fabric && !draft.fabric->cables.empty()) {
    ctx.Err(fmt::format("init: the subnet ({}) gave {} switch{} and {} cable{}; {} note{} in the file\n",
                        text::OneLine(draft.fabric->source), draft.fabric->switches.size(),
                        draft.fabric->switches.size() == 1 ? "" : "es", draft.fabric->cables.size(),
                        draft.fabric->cables.size() == 1 ? "" : "s", draft.fabric->notes.size(),
                        draft.fabric->notes.size() == 1 ? "" : "s"));
  }
  // Asked for a subnet and got none: the file is written without it, and the run says so.
  const bool subnet_missing = (subnet_node || !subnets.empty()) && (!draft.fabric || draft.fabric->cables.empty());
  if (subnet_missing) ctx.Error("no cable of the subnet could be drafted (the reasons are in the file and above)");
  return static_cast<int>(draft.unreached.empty() && !subnet_missing ? kExitOk : kExitFindings);
}

}  // namespace

Command InitCommand() {
  return {"init", "Draft a first inventory from the live nodes' facts, grouped into profiles, outliers first",
          [](CLI::App& app) -> Runner {
            auto o = std::make_shared<InitOpts>();
            AddRemoteOptions(app, &o->remote);
            app.get_option("--nodes")->description(
                "The nodes to draft from: a hostlist (gpu[001-064]); with --diff, nodes of that inventory");
            CompleteAs(app.add_option("--out", o->out, "Write the inventory to FILE, which must not exist (default: stdout)"),
                       Values::kFile)
                ->option_text("FILE");
            app.add_option("--name", o->name, "The cluster's name in the draft (default: cluster)")->option_text("NAME");
            app.add_option("--addresses", o->addresses,
                           "Addresses to reach the nodes at, a hostlist zipped with --nodes (198.18.0.[11-74])")
                ->option_text("HOSTLIST");
            app.add_option("--user", o->user, "SSH user (default: ~/.ssh/config's, else root)")->option_text("USER");
            app.add_option("--port", o->port, "SSH port (default: ~/.ssh/config's, else 22)")
                ->check(CLI::Range(1, 65535))
                ->option_text("PORT");
            CompleteAs(app.add_option("--identity-file", o->identity_file, "SSH private key"), Values::kFile)
                ->option_text("FILE");
            app.add_option("--jump", o->jump, "Reach the nodes through this bastion: [user@]host[:port]")
                ->option_text("HOST");
            app.add_flag("--sudo", o->sudo, "Privileged steps of later commands go through sudo -n (written to the draft)");
            app.add_option("--timeout", o->timeout_s, "Seconds the gather script may run on each node (default 180)")
                ->check(CLI::Range(1.0, 3600.0))
                ->option_text("SECONDS");
            AddSubnetOptions(app, &o->subnet,
                             "Draft the InfiniBand switches and cables from iblinkinfo and ibnetdiscover "
                             "(infiniband-diags, as root) run on NODE, one of --nodes");
            CompleteAs(app.add_option("--diff", o->diff,
                                      "Compare the live nodes with this existing inventory (facts --check) instead of drafting"),
                       Values::kInventory)
                ->option_text("INVENTORY");
            app.footer(
                "Gathers each node's facts (one SSH round trip, as `facts`), groups nodes with the same hardware into\n"
                "profiles, and names the nodes that differ from their majority at the top of the file. What no node\n"
                "can tell (racks, networks, switches, storage, scheduler roles) is left as TODO comments.\n"
                "Docs: docs/init.md. Exit codes: 0 written, 1 a node not reached (the file is still written, naming\n"
                "it) or drift with --diff, 2 invalid flags or an --out that exists.");
            return [o](Context& ctx) {
              if (!o->diff.empty()) return Diff(ctx, *o);
              std::string line = "gpuforge init";
              if (!o->remote.nodes.empty()) line += " --nodes " + o->remote.nodes;
              if (o->remote.local) line += " --local";
              return Init(ctx, *o, line);
            };
          }};
}

}  // namespace gpuforge::cli
