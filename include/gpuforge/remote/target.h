#pragma once

// Where and as whom gpuforge reaches one node: the inventory's resolved ssh settings turned
// into a connection target, with a jump host resolved to an address.

#include <optional>
#include <string>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::remote {

struct Endpoint {
  std::string host;  // address or host name to connect to
  int port = 22;
  std::string user;
};

struct Target {
  std::string node;  // the inventory's node name; every message names it
  Endpoint endpoint;
  // What the inventory stated; the rest may come from ~/.ssh/config (docs/remote.md).
  bool host_stated = true;
  bool user_stated = true;
  bool port_stated = true;
  std::string identity_file;    // "" = agent and ssh's default identities
  std::optional<Endpoint> jump;  // reach `endpoint` through this host
  bool sudo_wanted = false;     // the inventory's ssh.sudo
  bool sudo = false;            // privileged steps run through `sudo -n`: sudo_wanted and the
                                // user logged in as (which ~/.ssh/config may name) is not root
};

// The target of one node. `jump` naming another node resolves to that node's address, port
// and user; `[user@]host[:port]` is taken as written.
Result<Target> TargetFor(const model::Cluster& cluster, const model::Node& node);

// Targets for the named nodes (all nodes when `names` is empty), in inventory order.
Result<std::vector<Target>> TargetsFor(const model::Cluster& cluster,
                                       const std::vector<std::string>& names);

// "user@host:port" for messages.
std::string Describe(const Endpoint& e);

}  // namespace gpuforge::remote
