#include "gpuforge/remote/target.h"

#include <fmt/format.h>

#include <charconv>

#include "gpuforge/base/hostlist.h"

namespace gpuforge::remote {
namespace {

// The loader has checked the parts of `[user@]host[:port]`; this only splits them.
Endpoint ParseJump(const std::string& spec, const std::string& default_user) {
  Endpoint e;
  e.user = default_user;
  std::string host = spec;
  if (auto at = host.find('@'); at != std::string::npos) {
    e.user = host.substr(0, at);
    host = host.substr(at + 1);
  }
  if (auto colon = host.rfind(':'); colon != std::string::npos && host.find(':') == colon) {
    int port = 22;
    std::string p = host.substr(colon + 1);
    std::from_chars(p.data(), p.data() + p.size(), port);
    e.port = port;
    host = host.substr(0, colon);
  }
  e.host = host;
  return e;
}

}  // namespace

std::string Describe(const Endpoint& e) {
  bool v6 = e.host.find(':') != std::string::npos;
  return fmt::format("{}@{}{}{}:{}", e.user, v6 ? "[" : "", e.host, v6 ? "]" : "", e.port);
}

Result<Target> TargetFor(const model::Cluster& cluster, const model::Node& node) {
  Target t;
  t.node = node.name;
  t.endpoint.host = node.address.empty() ? node.name : node.address;
  t.endpoint.port = node.ssh.port;
  t.endpoint.user = node.ssh.user.empty() ? "root" : node.ssh.user;
  // The loader gives a node without an address its name; then ~/.ssh/config may say where.
  t.host_stated = !node.address.empty() && node.address != node.name;
  t.user_stated = node.ssh.user_set;
  t.port_stated = node.ssh.port_set;
  t.identity_file = node.ssh.identity_file;
  t.sudo_wanted = node.ssh.sudo;
  t.sudo = node.ssh.sudo && t.endpoint.user != "root";
  if (!node.ssh.jump.empty()) {
    const std::string& spec = node.ssh.jump;
    bool plain_name = spec.find('@') == std::string::npos && spec.find(':') == std::string::npos;
    const model::Node* via = plain_name ? cluster.FindNode(spec) : nullptr;
    if (via == &node) {
      return Error{fmt::format("node {}: ssh.jump names the node itself", node.name)};
    }
    if (via != nullptr) {
      if (!via->ssh.jump.empty()) {
        return Error{fmt::format(
            "node {}: ssh.jump is node {}, which itself has a jump host ({}); chained jumps are "
            "not supported, name the last bastion directly",
            node.name, via->name, via->ssh.jump)};
      }
      t.jump = Endpoint{via->address.empty() ? via->name : via->address, via->ssh.port,
                        via->ssh.user.empty() ? "root" : via->ssh.user};
    } else {
      t.jump = ParseJump(spec, t.endpoint.user);
    }
  }
  return t;
}

Result<std::vector<Target>> TargetsFor(const model::Cluster& cluster,
                                       const std::vector<std::string>& names) {
  std::vector<Target> out;
  std::vector<const model::Node*> nodes;
  if (names.empty()) {
    for (const model::Node& n : cluster.nodes) nodes.push_back(&n);
  } else {
    for (const std::string& name : names) {
      const model::Node* n = cluster.FindNode(name);
      if (n == nullptr) return Error{fmt::format("'{}' is not a node of the inventory", name)};
      nodes.push_back(n);
    }
  }
  for (const model::Node* n : nodes) {
    Result<Target> t = TargetFor(cluster, *n);
    if (!t.ok()) return t.error();
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace gpuforge::remote
