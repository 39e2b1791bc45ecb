#include "cli/remote_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <filesystem>

#include "gpuforge/base/read_file.h"
#include "gpuforge/remote/local.h"
#include "gpuforge/remote/ssh.h"

namespace gpuforge::cli {
namespace {

std::atomic<bool> g_interrupted{false};

// SIGTERM (a CI job cancelled) and SIGHUP (the terminal gone) are a first Ctrl-C too: the
// nodes' steps stop where they are, and what apply already did is journalled, instead of the
// process dying with replaced files nothing points to (issue #12, item 3).
constexpr int kInterrupts[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void OnInterrupt(int) {
  g_interrupted.store(true);
  // The next one ends the process without waiting for the nodes.
  for (int sig : kInterrupts) std::signal(sig, SIG_DFL);
}

}  // namespace

void AddRemoteOptions(CLI::App& app, RemoteFlags* f) {
  CompleteAs(app.add_option("--nodes", f->nodes, kNodesHelp), Values::kNodes)
      ->option_text("EXPR");
  app.add_option("--fanout", f->fanout, "Nodes worked on at once (default 64)")
      ->check(CLI::Range(1, 4096))
      ->option_text("N");
  app.add_option("--connect-timeout", f->connect_timeout_s, "Seconds to connect and authenticate (default 10)")
      ->check(CLI::Range(1.0, 600.0))
      ->option_text("SECONDS");
  CompleteAs(app.add_option("--known-hosts", f->known_hosts, "known_hosts file (default ~/.ssh/known_hosts)"), Values::kFile)
      ->option_text("FILE");
  CompleteAs(app.add_option("--ssh-config", f->ssh_config, "ssh config file (default ~/.ssh/config; 'none' for none)"), Values::kFile)
      ->option_text("FILE");
  app.add_flag("--accept-new-host-keys", f->accept_new_host_keys,
               "Add unknown host keys to known_hosts (a changed key is always an error)");
  app.add_flag("--local", f->local,
               "Run on this machine as the one node --nodes selects, without SSH (gpuforge on the node it checks)");
}

nodeset::Groups NodeGroups(const model::Cluster& cluster) {
  nodeset::Groups g;
  for (const model::Group& group : cluster.groups) g[group.name];
  // Every role is a group even without members, so "@role:storage" on a cluster without
  // storage nodes says it selects nothing rather than that no such group exists.
  for (model::NodeRole r : {model::NodeRole::kCompute, model::NodeRole::kLogin, model::NodeRole::kController,
                            model::NodeRole::kStorage}) {
    g[fmt::format("role:{}", model::ToString(r))];
  }
  for (const model::Profile& p : cluster.profiles) {
    // A node with overrides has the derived profile "<profile>@<node>": it is still one of
    // the profile's nodes.
    if (p.name.find('@') == std::string::npos) g["profile:" + p.name];
  }
  for (const model::Rack& r : cluster.racks) g["rack:" + r.name];
  std::vector<std::string>& all = g["*"];
  for (const model::Node& n : cluster.nodes) {
    all.push_back(n.name);
    for (const std::string& name : n.groups) g[name].push_back(n.name);
    g[fmt::format("role:{}", model::ToString(n.role))].push_back(n.name);
    g["profile:" + n.profile.substr(0, n.profile.find('@'))].push_back(n.name);
    if (!n.rack.empty()) g["rack:" + n.rack].push_back(n.name);
  }
  return g;
}

Result<std::vector<std::string>> SelectNodeNames(const model::Cluster& cluster, std::string_view expr) {
  Result<std::vector<std::string>> names = nodeset::Evaluate(expr, NodeGroups(cluster));
  if (!names.ok()) return names.error();
  if (names->empty()) return Error{fmt::format("\"{}\" selects no node", expr)};
  for (const std::string& n : *names) {
    if (cluster.FindNode(n) == nullptr) return Error{fmt::format("'{}' is not a node of the inventory", n)};
  }
  return names;
}

std::unique_ptr<remote::Connector> MakeConnector(const RemoteFlags& flags) {
  if (flags.local) return remote::MakeLocalConnector();
  return remote::MakeSshConnector(SshOptionsFrom(flags));
}

remote::SshOptions SshOptionsFrom(const RemoteFlags& f) {
  remote::SshOptions o;
  o.known_hosts = f.known_hosts;
  o.config_file = f.ssh_config;
  o.accept_new_host_keys = f.accept_new_host_keys;
  o.connect_timeout = std::chrono::seconds(static_cast<long>(std::ceil(f.connect_timeout_s)));
  return o;
}

std::optional<std::vector<remote::Target>> SelectTargets(Context& ctx, const model::Cluster& cluster,
                                                         const RemoteFlags& flags) {
  std::vector<std::string> names;
  if (!flags.nodes.empty()) {
    Result<std::vector<std::string>> expanded = SelectNodeNames(cluster, flags.nodes);
    if (!expanded.ok()) {
      ctx.Error(fmt::format("--nodes: {}", expanded.error().message));
      return std::nullopt;
    }
    names = std::move(*expanded);
  }
  // libssh reads the config by path and would wait forever on a FIFO: it must be a regular
  // file of a sane size (issue #12, item 9).
  if (!flags.ssh_config.empty() && flags.ssh_config != "none") {
    if (Status s = base::CheckInputFile({flags.ssh_config, "ssh config", remote::kMaxSshConfigBytes}); !s) {
      ctx.Error("--ssh-config: " + s.error().message);
      return std::nullopt;
    }
  }
  Result<std::vector<remote::Target>> targets = remote::TargetsFor(cluster, names);
  if (!targets.ok()) {
    ctx.Error(flags.nodes.empty() ? targets.error().message : "--nodes: " + targets.error().message);
    return std::nullopt;
  }
  if (flags.local && targets->size() != 1) {
    ctx.Error(fmt::format("--local: this machine stands for one node, and {} are selected; name it with --nodes NODE",
                          targets->size()));
    return std::nullopt;
  }
  return std::move(*targets);
}

InterruptGuard::InterruptGuard() {
  g_interrupted.store(false);
  for (int sig : kInterrupts) std::signal(sig, OnInterrupt);
}
InterruptGuard::~InterruptGuard() {
  for (int sig : kInterrupts) std::signal(sig, SIG_DFL);
}
const std::atomic<bool>* InterruptGuard::flag() const { return &g_interrupted; }
bool InterruptGuard::interrupted() const { return g_interrupted.load(); }

ProgressBar::ProgressBar(Context& ctx, std::string label)
    : ctx_(ctx), label_(std::move(label)), enabled_(ctx.verbosity >= 0 && ::isatty(::fileno(ctx.io.err)) == 1) {}

ProgressBar::~ProgressBar() { Clear(); }

void ProgressBar::Update(const remote::Progress& p) {
  if (!enabled_) return;
  long long now = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
  // At most ten redraws a second, but always the last one.
  if (now - last_ms_ < 100 && p.done != p.total) return;
  last_ms_ = now;
  constexpr int kWidth = 30;
  int filled = p.total == 0 ? kWidth : static_cast<int>(kWidth * p.done / p.total);
  ctx_.ErrRaw(fmt::format("\r\x1b[K{} [{}{}] {}/{} done, {} failed, {} running", label_, std::string(filled, '#'),
                       std::string(kWidth - filled, ' '), p.done, p.total, p.failed, p.running));
  drawn_ = true;
}

void ProgressBar::Clear() {
  if (drawn_) ctx_.ErrRaw("\r\x1b[K");
  drawn_ = false;
}

remote::FanoutOptions OneStepFanout(const RemoteFlags& flags, const InterruptGuard& interrupt, ProgressBar& bar) {
  remote::FanoutOptions fo;
  fo.width = flags.fanout;
  fo.cancel = interrupt.flag();
  fo.keep_connections = false;
  fo.on_progress = [&bar](const remote::Progress& p) { bar.Update(p); };
  return fo;
}

}  // namespace gpuforge::cli
