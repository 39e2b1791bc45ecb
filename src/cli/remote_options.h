#pragma once

// What every command that reaches nodes shares: the SSH flags, --nodes selection, Ctrl-C and
// the progress bar.

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/app.h"
#include "gpuforge/base/nodeset.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/ssh.h"
#include "gpuforge/remote/target.h"

namespace gpuforge::cli {

// The help of every --nodes flag.
inline constexpr const char* kNodesHelp =
    "Only these nodes: hostlists and @groups with ClusterShell's set operators "
    "(gpu[001-004],@login; @gpu!gpu003; @role:compute&@rack:r1)";

struct RemoteFlags {
  std::string nodes;  // node set expression (nodeset.h); "" = all
  int fanout = remote::kDefaultFanout;
  double connect_timeout_s = 10;
  std::string known_hosts;
  std::string ssh_config;
  bool accept_new_host_keys = false;
  bool local = false;  // --local: this machine is the one selected node; no SSH
};

void AddRemoteOptions(CLI::App& app, RemoteFlags* flags);

remote::SshOptions SshOptionsFrom(const RemoteFlags& flags);

// SSH, or with --local the session that runs on this machine.
std::unique_ptr<remote::Connector> MakeConnector(const RemoteFlags& flags);

// The node groups --nodes can name, from the inventory: every `groups:` entry as @NAME,
// @role:ROLE for each node role, @profile:NAME (a profile's nodes, overridden ones included),
// @rack:NAME, and @* for every node. Members in inventory order.
nodeset::Groups NodeGroups(const model::Cluster& cluster);

// The node names a --nodes expression (nodeset.h: hostlists, @groups, set operators) selects,
// each checked to be a node of the inventory; an expression selecting nothing is an error, never
// "all nodes".
Result<std::vector<std::string>> SelectNodeNames(const model::Cluster& cluster, std::string_view expr);

// The targets --nodes selects; prints the error and returns nullopt on a bad selection (with
// --local, anything but exactly one node).
std::optional<std::vector<remote::Target>> SelectTargets(Context& ctx, const model::Cluster& cluster,
                                                         const RemoteFlags& flags);

// Ctrl-C, SIGTERM or SIGHUP sets the flag this returns (the first time; a second one ends the
// process the default way). Restored when the guard goes.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  const std::atomic<bool>* flag() const;
  bool interrupted() const;
};

// A one-line progress bar on stderr when stderr is a terminal: hosts done / failed / running.
class ProgressBar {
 public:
  ProgressBar(Context& ctx, std::string label);
  ~ProgressBar();
  void Update(const remote::Progress& p);
  void Clear();

 private:
  Context& ctx_;
  std::string label_;
  bool enabled_;
  long long last_ms_ = -1000;
  bool drawn_ = false;
};

// What every one-step remote command (run, facts, plan) fans out with: --fanout, Ctrl-C, the
// progress bar, and each node's connection closed as soon as that node is done.
remote::FanoutOptions OneStepFanout(const RemoteFlags& flags, const InterruptGuard& interrupt, ProgressBar& bar);

}  // namespace gpuforge::cli
