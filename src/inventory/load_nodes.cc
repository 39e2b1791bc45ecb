// The 'groups' and 'nodes' sections, and the ssh and vars layers that defaults, profiles,
// groups and nodes stack.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/names.h"
#include "gpuforge/inventory/schema.h"
#include "gpuforge/model/roce.h"
#include "inventory/sections.h"

namespace gpuforge::inventory::internal {

namespace {

// Profiles are a few levels deep; anything deeper in an `overrides` merge is an alias cycle.
constexpr int kMaxMergeDepth = 16;

// Deep merge for node `overrides`: maps merge key by key, anything else replaces. The
// original key and value nodes are reused so positions in messages stay right.
YAML::Node Merge(const YAML::Node& base, const YAML::Node& over, int depth = 0) {
  if (!base.IsMap() || !over.IsMap() || depth > kMaxMergeDepth) return over;
  YAML::Node out(YAML::NodeType::Map);
  std::set<std::string> overridden;
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it->first.IsScalar()) overridden.insert(it->first.Scalar());
  }
  for (auto it = base.begin(); it != base.end(); ++it) {
    if (it->first.IsScalar() && overridden.count(it->first.Scalar())) continue;
    out.force_insert(it->first, it->second);
  }
  for (auto it = over.begin(); it != over.end(); ++it) {
    YAML::Node b = it->first.IsScalar() ? Get(base, it->first.Scalar()) : YAML::Node();
    out.force_insert(it->first, b.IsDefined() ? Merge(b, it->second, depth + 1) : it->second);
  }
  return out;
}

}  // namespace

SshLayer Loader::LoadSsh(const YAML::Node& n, std::string_view what) {
  SshLayer out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!r_.CheckMap(n, what, schema::kSsh)) return out;
  if (auto u = r_.Str(n, "user", what)) {
    if (auto bad = names::CheckUser(*u)) {
      r_.Error(Get(n, "user"), fmt::format("'user' in {} is '{}'; {}", what, *u, *bad));
    } else {
      out.user = *u;
    }
  }
  if (auto p = r_.Int(n, "port", what, 1, 65535)) out.port = static_cast<int>(*p);
  if (auto f = r_.Str(n, "identity_file", what)) {
    CheckWith(Get(n, "identity_file"), names::CheckPath, *f, fmt::format("'identity_file' in {}", what));
    out.identity_file = *f;
  }
  if (auto j = r_.Str(n, "jump", what)) {
    // [user@]host[:port]: every part reaches an ssh command line.
    if (auto bad = names::CheckJump(*j)) {
      r_.Error(Get(n, "jump"), fmt::format("'jump' in {} is '{}': {}", what, *j, *bad));
    } else {
      out.jump = *j;
    }
  }
  out.sudo = r_.Bool(n, "sudo", what);
  return out;
}

std::map<std::string, std::string> Loader::LoadVars(const YAML::Node& n, std::string_view what) {
  std::map<std::string, std::string> out;
  if (!n.IsDefined() || n.IsNull()) return out;
  if (!r_.CheckOpenMap(n, what)) return out;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key_node = it->first;
    YAML::Node value = it->second;
    if (!key_node.IsScalar()) continue;
    const std::string& key = key_node.Scalar();
    bool ok = !key.empty() && key.size() <= 64 && (std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_');
    for (char c : key) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) {
      r_.Error(key_node, fmt::format("variable name '{}' in {} must be letters, digits and '_', starting with a letter or '_'", key, what));
      continue;
    }
    auto v = r_.ScalarOf(value, fmt::format("variable '{}' in {}", key, what));
    if (!v) continue;
    if (!CheckSafe(value, *v, fmt::format("variable '{}' in {}", key, what),
                   "variables are written into rendered files and commands")) {
      continue;
    }
    out[key] = *v;
  }
  return out;
}

void Loader::LoadGroups(const YAML::Node& n) {
  if (!r_.CheckOpenMap(n, "groups")) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node body = it->second;
    if (!key.IsScalar() || group_layers_.count(key.Scalar())) continue;
    model::Group g;
    g.name = key.Scalar();
    g.where = r_.Pos(key);
    CheckWith(key, names::CheckName, g.name, "group name");
    std::string what = fmt::format("group '{}'", g.name);
    Layer layer;
    // A group whose body is wrong is still a group, so its members are not reported as well.
    if (!body.IsNull() && r_.CheckMap(body, what, schema::kGroup)) {
      layer.ssh = LoadSsh(Get(body, "ssh"), what + " ssh");
      layer.vars = LoadVars(Get(body, "vars"), what + " vars");
    }
    layer.ssh.ApplyTo(&g.ssh);
    g.vars = layer.vars;
    group_layers_[g.name] = std::move(layer);
    cluster_.groups.push_back(std::move(g));
  }
}

std::optional<std::string> Loader::DeriveProfile(const std::string& base, const YAML::Node& entry,
                                                 const YAML::Node& name_node, std::string_view what) {
  YAML::Node over = Get(entry, "overrides");
  if (!r_.CheckMap(over, fmt::format("'overrides' in {}", what), schema::kProfile)) return std::nullopt;
  std::string name = fmt::format("{}@{}", base, name_node.Scalar());
  if (FindProfile(name) != nullptr) return name;  // the same entry text twice: nodes clash anyway
  // Most of the merged profile is the base profile's text, already checked: keep only problems
  // at places not reported yet, so one bad profile line stays one error.
  Diagnostics scratch;
  Diagnostics* outer = r_.Redirect(&scratch);
  bool ok = LoadProfileEntry(name, Merge(profile_nodes_[base], over), r_.Pos(over));
  r_.Redirect(outer);
  bool fresh_errors = false;
  for (const Diagnostic& d : scratch.items()) {
    bool reported = std::any_of(outer->items().begin(), outer->items().end(), [&](const Diagnostic& m) {
      return m.pos.line == d.pos.line && m.pos.col == d.pos.col;
    });
    if (reported) continue;
    fresh_errors = fresh_errors || d.severity == DiagSeverity::kError;
    outer->Add(d);
  }
  if (!ok || fresh_errors) return std::nullopt;
  return name;
}

void Loader::LoadNodes(const YAML::Node& n) {
  if (!r_.CheckSeq(n, "nodes")) return;
  std::map<std::string, SourcePos> seen_addrs;
  std::map<std::string, SourcePos> seen_ports;  // RoCE port addresses, cluster-wide
  std::size_t total = 0;
  for (const YAML::Node& e : n) {
    YAML::Node name_node = Get(e, "name");
    if (!r_.CheckMap(e, "a node entry", schema::kNode) || !Has(e, "name")) {
      if (e.IsMap()) r_.Missing(e, "name", "a node entry");
      NoteFailedEntry(name_node);
      continue;
    }
    std::optional<std::vector<std::string>> names;
    if (CheckHostlistChars(name_node, "-.", "node name",
                           "a node name is a host name: letters, digits, '-' and '.' (with hostlist brackets)")) {
      names = Expand(name_node, "node name");
    }
    if (!names) {
      NoteFailedEntry(name_node);
      continue;
    }
    total += names->size();
    if (total > kMaxNodes) {
      r_.Error(name_node, fmt::format("the inventory declares more than {} nodes, the most one inventory may hold; split it", kMaxNodes));
      return;
    }
    const std::string what = fmt::format("node entry '{}'", name_node.Scalar());
    broken_nodes_.insert(names->begin(), names->end());
    // A failed part makes the entry declare no nodes, but its other parts are still checked
    // so that one run reports everything.
    bool ok = true;
    std::vector<std::string> addrs = *names;
    YAML::Node addr_node = Get(e, "address");
    if (Has(e, "address")) {
      std::optional<std::vector<std::string>> a;
      if (CheckHostlistChars(addr_node, "-.:", "address",
                             "an address is an IPv4 or IPv6 address or a host name (with hostlist brackets)")) {
        a = Expand(addr_node, "node address");
      }
      if (a && a->size() != names->size()) {
        r_.Error(addr_node, fmt::format("{} names {} nodes but its address list expands to {} addresses; they are paired in order, so the counts must match",
                                        what, names->size(), a->size()));
        a.reset();
      }
      ok = ok && a.has_value();
      if (a) addrs = std::move(*a);
    }
    std::vector<std::string> racks;
    if (Has(e, "rack")) {
      YAML::Node rack_node = Get(e, "rack");
      std::optional<std::vector<std::string>> rk;
      if (CheckHostlistChars(rack_node, "_.-", "rack", "rack names are letters, digits, '_', '.' and '-'")) {
        rk = Expand(rack_node, "rack", 4096);
      }
      if (rk && rk->size() != 1 && rk->size() != names->size()) {
        r_.Error(rack_node, fmt::format("{} names {} nodes but its rack list expands to {} racks; give one rack, or one per node in order",
                                        what, names->size(), rk->size()));
        rk.reset();
      }
      for (const std::string& rack : rk ? std::set<std::string>(rk->begin(), rk->end()) : std::set<std::string>()) {
        CheckWith(rack_node, names::CheckName, rack, "rack name");
        if (cluster_.FindRack(rack) != nullptr) continue;
        if (racks_declared_) {
          std::vector<std::string> known;
          for (const auto& rr : cluster_.racks) known.push_back(rr.name);
          r_.Error(rack_node, fmt::format("{} refers to rack '{}', which is not declared under 'racks'{}", what, rack,
                                          DidYouMean(rack, known)));
          rk.reset();
          break;
        }
        cluster_.racks.push_back({rack, std::nullopt, std::nullopt, r_.Pos(rack_node)});
      }
      ok = ok && rk.has_value();
      if (rk) racks = std::move(*rk);
    }
    std::string effective_profile;
    if (auto profile_name = r_.Str(e, "profile", what, true)) {
      if (FindProfile(*profile_name) != nullptr) {
        effective_profile = *profile_name;
        if (Has(e, "overrides")) effective_profile = DeriveProfile(*profile_name, e, name_node, what).value_or("");
      } else if (profile_nodes_.count(*profile_name) == 0) {
        std::vector<std::string> known;
        for (const auto& [k, v] : profile_nodes_) known.push_back(k);
        r_.Error(Get(e, "profile"), fmt::format("{} refers to profile '{}', which is not defined under 'profiles'{}", what,
                                                *profile_name, DidYouMean(*profile_name, known)));
      }  // else: a broken profile, already reported where it is defined
    }
    ok = ok && !effective_profile.empty();
    model::NodeRole role = model::NodeRole::kCompute;
    if (auto ro = r_.Choice(e, "role", what, {"compute", "login", "controller", "storage"})) {
      role = *ro == "compute"      ? model::NodeRole::kCompute
             : *ro == "login"      ? model::NodeRole::kLogin
             : *ro == "controller" ? model::NodeRole::kController
                                   : model::NodeRole::kStorage;
    }
    std::vector<std::string> groups;
    YAML::Node gnode = Get(e, "groups");
    if (Has(e, "groups") && r_.CheckSeq(gnode, fmt::format("'groups' in {}", what))) {
      for (const YAML::Node& g : gnode) {
        auto s = r_.ScalarOf(g, "a group name");
        if (!s) continue;
        if (!group_layers_.count(*s)) {
          std::vector<std::string> known;
          for (const auto& [k, v] : group_layers_) known.push_back(k);
          r_.Error(g, fmt::format("{} is in group '{}', which is not defined under 'groups'{}", what, *s, DidYouMean(*s, known)));
          continue;
        }
        if (std::find(groups.begin(), groups.end(), *s) != groups.end()) {
          r_.Error(g, fmt::format("{} lists group '{}' twice", what, *s));
          continue;
        }
        groups.push_back(*s);
      }
    }
    std::vector<std::map<std::string, std::string>> port_addrs(names->size());
    if (Has(e, "port_addresses")) {
      auto pa = LoadPortAddresses(Get(e, "port_addresses"), what, *names, effective_profile, &seen_ports);
      ok = ok && pa.has_value();
      if (pa) port_addrs = std::move(*pa);
    }
    // Precedence, lowest first: defaults < profile < groups (in listed order) < node.
    const Layer node_layer{LoadSsh(Get(e, "ssh"), what + " ssh"), LoadVars(Get(e, "vars"), what + " vars")};
    if (!ok) continue;
    std::vector<const Layer*> layers = {&defaults_, &profile_layers_[effective_profile]};
    for (const std::string& g : groups) layers.push_back(&group_layers_[g]);
    layers.push_back(&node_layer);
    model::SshSettings ssh;
    ssh.user = "root";
    std::map<std::string, std::string> vars;
    for (const Layer* l : layers) {
      l->ssh.ApplyTo(&ssh);
      for (const auto& [k, v] : l->vars) vars[k] = v;
    }

    for (std::size_t i = 0; i < names->size(); ++i) {
      const std::string& name = (*names)[i];
      if (auto bad = names::CheckHostname(name)) {
        r_.Error(name_node, fmt::format("node name '{}': {}", name, *bad));
        continue;
      }
      if (auto bad = names::CheckAddress(addrs[i])) {
        r_.Error(Has(e, "address") ? addr_node : name_node, fmt::format("address '{}' of node {}: {}", addrs[i], name, *bad));
        continue;
      }
      SourcePos pos = r_.Pos(name_node);
      if (const model::Node* first = FindNode(name)) {
        r_.Error(name_node, fmt::format("node '{}' is declared twice (first at {})", name, first->where.ToString()));
        continue;
      }
      if (auto [it, fresh] = seen_addrs.emplace(addrs[i], pos); !fresh) {
        r_.Error(Has(e, "address") ? addr_node : name_node,
                 fmt::format("address '{}' of node {} is already used by a node declared at {}", addrs[i], name,
                             it->second.ToString()));
        continue;
      }
      model::Node node;
      node.name = name;
      node.address = addrs[i];
      node.rack = racks.empty() ? "" : racks.size() == 1 ? racks[0] : racks[i];
      node.profile = effective_profile;
      node.role = role;
      node.groups = groups;
      node.ssh = ssh;
      node.vars = vars;
      node.where = pos;
      node.port_addresses = std::move(port_addrs[i]);
      node_index_[name] = cluster_.nodes.size();
      cluster_.nodes.push_back(std::move(node));
      broken_nodes_.erase(name);
    }
  }
}

// nodes[].port_addresses (#13): NIC name -> IPv4 ADDRESS/PREFIX, hostlist-expanded in step
// with the entry's names like 'address'. The NIC must be a RoCE port of the node's profile with
// a netdev, since the address goes on that interface; an address is used once in the cluster.
std::optional<std::vector<std::map<std::string, std::string>>> Loader::LoadPortAddresses(
    const YAML::Node& n, std::string_view what, const std::vector<std::string>& names, const std::string& profile,
    std::map<std::string, SourcePos>* seen) {
  const std::string pwhat = fmt::format("'port_addresses' of {}", what);
  if (!n.IsMap()) {
    r_.Error(n, fmt::format("{} must be a map from NIC name to IPv4 ADDRESS/PREFIX, e.g. {{mlx5_0: \"198.18.8.[1-4]/24\"}}",
                            pwhat));
    return std::nullopt;
  }
  const model::Profile* prof = profile.empty() ? nullptr : FindProfile(profile);
  std::vector<std::map<std::string, std::string>> out(names.size());
  bool ok = true;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node val = it->second;
    auto nic = r_.ScalarOf(key, "a NIC name in 'port_addresses'");
    if (!nic) {
      ok = false;
      continue;
    }
    if (!out.empty() && out[0].count(*nic)) {
      r_.Error(key, fmt::format("{} lists NIC '{}' twice", pwhat, *nic));
      ok = false;
      continue;
    }
    if (prof != nullptr) {
      auto spec = std::find_if(prof->nics.begin(), prof->nics.end(), [&](const model::NicSpec& x) { return x.name == *nic; });
      std::string problem;
      if (spec == prof->nics.end()) {
        std::vector<std::string> known;
        for (const auto& x : prof->nics) known.push_back(x.name);
        problem = fmt::format("profile '{}' has no NIC '{}'{}", prof->name, *nic, DidYouMean(*nic, known));
      } else if (spec->kind != model::NetKind::kRoce) {
        problem = fmt::format("NIC '{}' of profile '{}' is {}; port addresses are for RoCE ports", *nic, prof->name,
                              model::ToString(spec->kind));
      } else if (spec->netdev.empty()) {
        problem = fmt::format("NIC '{}' of profile '{}' has no 'netdev'; the address goes on that interface, so the "
                              "profile must name it",
                              *nic, prof->name);
      }
      if (!problem.empty()) {
        r_.Error(key, fmt::format("{}: {}", pwhat, problem));
        ok = false;
        continue;
      }
    }
    if (!CheckHostlistChars(val, "-./", "port address",
                            "a port address is an IPv4 ADDRESS/PREFIX (with hostlist brackets), e.g. 198.18.8.[1-4]/24")) {
      ok = false;
      continue;
    }
    auto addrs = Expand(val, "port address");
    if (!addrs) {
      ok = false;
      continue;
    }
    if (addrs->size() != names.size()) {
      r_.Error(val, fmt::format("{} names {} nodes but the port address of NIC '{}' expands to {}; they are paired in "
                                "order, so the counts must match",
                                what, names.size(), *nic, addrs->size()));
      ok = false;
      continue;
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::optional<model::Ipv4Prefix> a = model::ParseIpv4Prefix((*addrs)[i]);
      if (!a) {
        r_.Error(val, fmt::format("port address '{}' of node {} NIC '{}' is not an IPv4 ADDRESS/PREFIX such as "
                                  "198.18.8.1/24",
                                  (*addrs)[i], names[i], *nic));
        ok = false;
        break;
      }
      if (auto [at, fresh] = seen->emplace(a->Address(), r_.Pos(val)); !fresh) {
        r_.Error(val, fmt::format("port address {} of node {} NIC '{}' is already used at {}", a->Address(), names[i], *nic,
                                  at->second.ToString()));
        ok = false;
        break;
      }
      out[i][*nic] = a->ToString();
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace gpuforge::inventory::internal
