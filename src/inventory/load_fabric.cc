// The fabric sections: 'networks', 'switches' and the 'links' that cable NICs to switch ports.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuforge/base/names.h"
#include "gpuforge/base/text.h"
#include "gpuforge/inventory/schema.h"
#include "gpuforge/model/switch_names.h"
#include "inventory/sections.h"

namespace gpuforge::inventory::internal {

model::NetKind NetKindOf(const std::string& s) {
  return s == "infiniband" ? model::NetKind::kInfiniband
         : s == "roce"     ? model::NetKind::kRoce
                           : model::NetKind::kEthernet;
}

using quantity::Dimension;

std::vector<std::string> Loader::NetworkNames() const {
  std::vector<std::string> known;
  for (const auto& n : cluster_.networks) known.push_back(n.name);
  return known;
}

// networks.NAME.roce: what the network's hosts and switches must agree on. Ranges are the
// fields' own: an Ethernet MTU the ConnectX and Spectrum families accept (1500..9216), a
// 6-bit DSCP, a 3-bit 802.1p priority, and a GID table index.
void Loader::LoadRoceSettings(const YAML::Node& b, std::string_view network_what, model::Network* net) {
  std::string what = fmt::format("'roce' of {}", network_what);
  if (!r_.CheckMap(b, what, schema::kRoce)) return;
  model::RoceSettings s;
  s.where = r_.Pos(b);
  if (auto v = r_.Int(b, "mtu", what, 1500, 9216)) s.mtu = static_cast<int>(*v);
  if (auto v = r_.Int(b, "dscp", what, 0, 63)) s.dscp = static_cast<int>(*v);
  if (auto v = r_.Int(b, "pfc_priority", what, 0, 7)) s.pfc_priority = static_cast<int>(*v);
  if (auto v = r_.Bool(b, "ecn", what)) s.ecn = *v;
  if (auto v = r_.Int(b, "gid_index", what, 0, 255)) s.gid_index = static_cast<int>(*v);
  if (net->kind != model::NetKind::kRoce) {
    r_.Error(b, fmt::format("{} is a {} network; 'roce' settings belong to a network of kind roce", network_what,
                            model::ToString(net->kind)));
    return;
  }
  net->roce = s;
}

void Loader::LoadNetworks(const YAML::Node& n) {
  if (!r_.CheckOpenMap(n, "networks")) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    YAML::Node b = it->second;
    if (!key.IsScalar()) continue;
    std::string name = key.Scalar();
    if (cluster_.FindNetwork(name) != nullptr) continue;  // duplicate key: reported by CheckOpenMap
    CheckWith(key, names::CheckName, name, "network name");
    std::string what = fmt::format("network '{}'", name);
    model::Network net;
    net.name = name;
    net.where = r_.Pos(key);
    // Registered even when its body is wrong, so NICs, switches and tiers on it are not
    // reported as well.
    if (r_.CheckMap(b, what, schema::kNetwork)) {
      if (auto role = r_.Choice(b, "role", what, {"compute", "storage", "control"}, true)) {
        net.role = *role == "compute"   ? model::NetRole::kCompute
                   : *role == "storage" ? model::NetRole::kStorage
                                        : model::NetRole::kControl;
      }
      if (auto kind = r_.Choice(b, "kind", what, {"infiniband", "roce", "ethernet"}, true)) net.kind = NetKindOf(*kind);
      if (auto rate = r_.Qty(b, "rate", what, Dimension::kBandwidth)) net.rate_bytes_per_s = *rate;
      static const std::map<std::string, model::Topology> kTopo = {
          {"fat-tree", model::Topology::kFatTree},
          {"spine-leaf", model::Topology::kSpineLeaf},
          {"rail-optimized", model::Topology::kRailOptimized},
          {"single-switch", model::Topology::kSingleSwitch},
          {"l2", model::Topology::kL2},
          {"torus", model::Topology::kTorus}};
      if (auto t = r_.Choice(b, "topology", what,
                             {"fat-tree", "spine-leaf", "rail-optimized", "single-switch", "l2", "torus"})) {
        net.topology = kTopo.at(*t);
      }
      if (Has(b, "roce")) LoadRoceSettings(Get(b, "roce"), what, &net);
    }
    cluster_.networks.push_back(std::move(net));
  }
}

void Loader::LoadSwitches(const YAML::Node& n) {
  if (!r_.CheckSeq(n, "switches")) return;
  for (const YAML::Node& e : n) {
    YAML::Node name_node = Get(e, "name");
    if (!r_.CheckMap(e, "a switch entry", schema::kSwitch) || !Has(e, "name")) {
      if (e.IsMap()) r_.Missing(e, "name", "a switch entry");
      NoteFailedEntry(name_node);
      continue;
    }
    std::optional<std::vector<std::string>> names;
    if (CheckHostlistChars(name_node, "-.", "switch name",
                           "a switch name is a host name: letters, digits, '-' and '.' (with hostlist brackets)")) {
      names = Expand(name_node, "switch name", 16384);
    }
    if (!names) {
      NoteFailedEntry(name_node);
      continue;
    }
    std::string what = fmt::format("switch entry '{}'", name_node.Scalar());
    model::Switch base;
    base.where = r_.Pos(name_node);
    if (auto t = r_.Choice(e, "tier", what, {"leaf", "spine", "core"}, true)) {
      base.tier = *t == "leaf" ? model::SwitchTier::kLeaf : *t == "spine" ? model::SwitchTier::kSpine : model::SwitchTier::kCore;
    }
    if (auto net = r_.Str(e, "network", what, true)) {
      if (cluster_.FindNetwork(*net) == nullptr) {
        r_.Error(Get(e, "network"), fmt::format("{} is on network '{}', which is not defined under 'networks'{}", what, *net,
                                                DidYouMean(*net, NetworkNames())));
      }
      base.network = *net;
    }
    if (auto m = r_.Str(e, "model", what)) {
      CheckWith(Get(e, "model"), names::CheckName, *m, "switch model");
      base.model = *m;
    }
    auto ports = r_.Int(e, "ports", what, 1, kMaxSwitchPorts, true);
    if (ports) base.ports = static_cast<int>(*ports);
    // An InfiniBand port number is 8 bits, 0 the switch's management port and 255 reserved
    // (IBA vol. 1, PortInfo LocalPortNum; infiniband-diags print no port above 254).
    if (const model::Network* net = cluster_.FindNetwork(base.network);
        ports && net != nullptr && net->kind == model::NetKind::kInfiniband && *ports > 254) {
      r_.Error(Get(e, "ports"),
               fmt::format("{} is on InfiniBand network '{}', whose switches number their ports 1-254; "
                           "{} ports cannot be addressed (a director is several switches: list its leaves "
                           "and spines)",
                           what, base.network, *ports));
    }
    if (auto rate = r_.Qty(e, "port_rate", what, Dimension::kBandwidth, true)) base.port_rate_bytes_per_s = *rate;
    if (auto pattern = r_.Str(e, "port_pattern", what)) {
      if (Status st = model::CheckPortPattern(*pattern); !st) {
        r_.Error(Get(e, "port_pattern"), fmt::format("{}: port_pattern {}", what, st.error().message));
      } else {
        base.port_pattern = *pattern;
      }
    }
    if (Has(e, "aliases")) {
      const YAML::Node al = Get(e, "aliases");
      if (names->size() != 1) {
        r_.Error(al, fmt::format("{} names {} switches; aliases belong to one switch (give it its own entry)",
                                 what, names->size()));
      } else if (r_.CheckSeq(al, fmt::format("'aliases' in {}", what))) {
        for (const YAML::Node& a : al) {
          std::optional<std::string> v = r_.ScalarOf(a, "an alias");
          if (!v) continue;
          if (v->empty() || v->size() > 128 ||
              v->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:;/-") !=
                  std::string::npos) {
            r_.Error(a, fmt::format("alias {} of {}: expected a name or GUID of letters, digits and '._:;/-', "
                                    "at most 128 characters",
                                    text::Quote(*v), what));
            continue;
          }
          base.aliases.push_back(*v);
        }
      }
    }
    for (const std::string& name : *names) {
      CheckWith(name_node, names::CheckHostname, name, "switch name");
      if (FindSwitch(name) != nullptr) {
        r_.Error(name_node, fmt::format("switch '{}' is declared twice", name));
        continue;
      }
      if (FindNode(name) != nullptr || broken_nodes_.count(name)) {
        r_.Error(name_node, fmt::format("switch '{}' has the name of a node; link ends could not tell them apart", name));
        continue;
      }
      if (!ports) broken_switches_.insert(name);
      model::Switch s = base;
      s.name = name;
      switch_index_[name] = cluster_.switches.size();
      cluster_.switches.push_back(std::move(s));
    }
  }
}

Loader::EndpointList Loader::ExpandEndpoint(const YAML::Node& n, std::string_view what) {
  EndpointList out;
  auto text = r_.ScalarOf(n, what);
  if (!text) return out;
  // Split at the one ':' outside brackets: DEVICES:PORTS.
  int depth = 0;
  std::vector<std::size_t> colons;
  for (std::size_t i = 0; i < text->size(); ++i) {
    char c = (*text)[i];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ':' && depth == 0) colons.push_back(i);
  }
  if (colons.size() != 1) {
    r_.Error(n, fmt::format("{} '{}' must be NODE:NIC or SWITCH:PORT, with one ':' (hostlists allowed on both sides, "
                            "e.g. gpu[01-04]:mlx5_0 or leaf1:[1-4])",
                            what, *text));
    return out;
  }
  const std::size_t colon = colons[0];
  auto devs = ExpandPart(n, std::string_view(*text).substr(0, colon), 0, what, kMaxNodes);
  if (!devs) return out;
  auto ports = ExpandPart(n, std::string_view(*text).substr(colon + 1), colon + 1, what, 4096);
  if (!ports) return out;
  if (devs->size() * ports->size() > kMaxNodes * 16) {
    r_.Error(n, fmt::format("{} '{}' expands to {} endpoints; the limit is {}", what, *text,
                            devs->size() * ports->size(), kMaxNodes * 16));
    return out;
  }
  // One message per link end, naming the first problem: a wrong range must not print a
  // screenful of errors.
  std::vector<std::string> problems;
  bool silent_failure = false;
  std::vector<std::string> known;  // built on first need
  for (const std::string& d : *devs) {
    const model::Switch* sw = FindSwitch(d);
    const model::Node* node = FindNode(d);
    if (sw == nullptr && node == nullptr) {
      if (broken_nodes_.count(d) || MaybeFromFailedEntry(d)) {
        silent_failure = true;
        continue;
      }
      if (known.empty()) {
        for (const auto& s : cluster_.switches) known.push_back(s.name);
        if (cluster_.nodes.size() < 5000) {
          for (const auto& s : cluster_.nodes) known.push_back(s.name);
        }
      }
      problems.push_back(fmt::format("'{}' is neither a node nor a switch{}", d, DidYouMean(d, known)));
      continue;
    }
    if (sw != nullptr && broken_switches_.count(d)) {
      silent_failure = true;
      continue;
    }
    out.ends.reserve(out.ends.size() + ports->size());
    for (const std::string& p : *ports) {
      model::Endpoint ep;
      ep.device = d;
      if (sw != nullptr) {
        ep.kind = model::Endpoint::Kind::kSwitchPort;
        int port = 0;
        auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
        if (ec != std::errc() || ptr != p.data() + p.size() || port < 1 || port > sw->ports) {
          problems.push_back(fmt::format("switch {} has ports 1-{}; there is no port '{}'", d, sw->ports, p));
          continue;
        }
        ep.port = port;
      } else {
        ep.kind = model::Endpoint::Kind::kNic;
        const model::Profile* prof = FindProfile(node->profile);
        bool has = prof != nullptr && std::any_of(prof->nics.begin(), prof->nics.end(),
                                                  [&](const model::NicSpec& s) { return s.name == p; });
        if (!has) {
          if (prof == nullptr || broken_nic_profiles_.count(prof->name)) {
            silent_failure = true;
            continue;
          }
          std::vector<std::string> nics;
          for (const auto& s : prof->nics) nics.push_back(s.name);
          std::string hint = nics.empty() ? "; the profile has no 'nics'" : DidYouMean(p, nics);
          if (hint.empty()) hint = fmt::format(" (it has {})", fmt::join(nics, ", "));
          problems.push_back(fmt::format("node {} (profile '{}') has no NIC '{}'{}", d, prof->name, p, hint));
          continue;
        }
        ep.nic = p;
      }
      out.ends.push_back(std::move(ep));
    }
  }
  if (!problems.empty()) {
    std::string more = problems.size() > 1 ? fmt::format(" (and {} in this link end)", text::Plural(problems.size() - 1, "more problem")) : "";
    r_.Error(n, fmt::format("{} '{}': {}{}", what, *text, problems.front(), more));
  }
  out.ok = problems.empty() && !silent_failure;
  return out;
}

void Loader::LoadLinks(const YAML::Node& n) {
  if (!r_.CheckSeq(n, "links")) return;
  // A switch port or NIC -> where it was first used, an index into `sides` (one position per
  // entry side, not a copy of the file name per cable). Keyed by the switch or node in the
  // model and the port number or the profile's NIC, not by a name built per end: 16,384 nodes
  // have 393,000 links (#28 item 19).
  struct EndKey {
    const void* device;
    std::uintptr_t at;  // the port number, or the address of the profile's NicSpec
    bool operator==(const EndKey&) const = default;
  };
  struct EndHash {
    std::size_t operator()(const EndKey& k) const {
      return std::hash<const void*>{}(k.device) ^ (std::hash<std::uintptr_t>{}(k.at) * 0x9e3779b97f4a7c15ULL);
    }
  };
  // An end's key and its rate from one name lookup (three per end cost 10% of lint at 16,384 nodes).
  struct End {
    EndKey key;
    double rate = 0;
  };
  auto end_of = [&](const model::Endpoint& ep) -> End {
    if (ep.kind == model::Endpoint::Kind::kSwitchPort) {
      const model::Switch* sw = FindSwitch(ep.device);
      return {{sw, static_cast<std::uintptr_t>(ep.port)}, sw->port_rate_bytes_per_s};
    }
    const model::Node* node = FindNode(ep.device);
    const model::Profile* prof = FindProfile(node->profile);
    for (const model::NicSpec& nic : prof->nics) {
      if (nic.name == ep.nic) return {{node, reinterpret_cast<std::uintptr_t>(&nic)}, nic.rate_bytes_per_s};
    }
    return {{node, 0}, 0};  // not reached: ExpandEndpoint kept only the profile's NICs
  };
  // Room for every NIC and switch port up front: growing to 786,000 ends rehashed the map
  // about twenty times.
  std::size_t ends = 0;
  for (const model::Node& node : cluster_.nodes) {
    if (const model::Profile* p = FindProfile(node.profile)) ends += p->nics.size();
  }
  for (const model::Switch& sw : cluster_.switches) ends += static_cast<std::size_t>(std::max(sw.ports, 0));
  ends = std::min<std::size_t>(ends, std::size_t{1} << 22);  // a hostile port count is not an allocation
  std::unordered_map<EndKey, std::size_t, EndHash> used;
  used.reserve(ends);
  cluster_.links.reserve(cluster_.links.size() + ends / 2);
  std::vector<SourcePos> sides;
  for (const YAML::Node& e : n) {
    if (!r_.CheckMap(e, "a link entry", schema::kLink)) continue;
    std::optional<double> rate = r_.Qty(e, "rate", "a link entry", Dimension::kBandwidth);
    bool complete = true;
    for (std::string_view key : {"from", "to"}) {
      if (!Has(e, key)) {
        r_.Missing(e, key, "a link entry");
        complete = false;
      }
    }
    if (!complete) continue;
    YAML::Node from = Get(e, "from"), to = Get(e, "to");
    EndpointList a = ExpandEndpoint(from, "link end");
    EndpointList b = ExpandEndpoint(to, "link end");
    if (!a.ok || !b.ok) continue;
    if (a.ends.size() != b.ends.size()) {
      r_.Error(to, fmt::format("link '{}' -> '{}' pairs {} endpoints with {}; the two sides are zipped in order, so they must "
                               "expand to the same count",
                               from.Scalar(), to.Scalar(), a.ends.size(), b.ends.size()));
      continue;
    }
    // Problems are reported once per side of the entry, with a count, as in ExpandEndpoint.
    struct Problem {
      std::string first;
      std::size_t count = 0;
    };
    Problem twice_from, twice_to, nic_to_nic, loop;
    auto note = [](Problem* p, std::string msg) {
      if (p->count++ == 0) p->first = std::move(msg);
    };
    // A link's position leaves the file name out: a link is always in the inventory's own file
    // (Cluster::source_file), which lint's findings fill in (src/lint/lint.cc, OrFile). A copy
    // of the name per cable cost 0.7 s of lint's 2.7 s CPU at 393,000 links (#28 item 19).
    SourcePos entry_pos = r_.Pos(e);
    entry_pos.file.clear();
    const std::size_t from_side = sides.size();
    sides.push_back(r_.Pos(from));
    sides.push_back(r_.Pos(to));
    for (std::size_t i = 0; i < a.ends.size(); ++i) {
      model::Link l{std::move(a.ends[i]), std::move(b.ends[i]), 0, entry_pos};
      if (l.a.kind == model::Endpoint::Kind::kNic && l.b.kind == model::Endpoint::Kind::kNic) {
        note(&nic_to_nic, fmt::format("link {} -> {} joins two NICs; gpuforge models NICs cabled to switch ports",
                                      l.a.ToString(), l.b.ToString()));
        continue;
      }
      if (l.a.device == l.b.device) {
        note(&loop, fmt::format("link {} -> {} joins {} to itself", l.a.ToString(), l.b.ToString(), l.a.device));
        continue;
      }
      bool dup = false;
      const End end_a = end_of(l.a), end_b = end_of(l.b);
      for (auto [ep, end, side, problem] : {std::tuple{&l.a, &end_a, from_side, &twice_from},
                                            std::tuple{&l.b, &end_b, from_side + 1, &twice_to}}) {
        auto [it, inserted] = used.emplace(end->key, side);
        if (!inserted) {
          const char* thing = ep->kind == model::Endpoint::Kind::kNic ? "NIC" : "switch port";
          note(problem, fmt::format("{} {} is cabled twice, first at {}", thing, ep->ToString(), sides[it->second].ToString()));
          dup = true;
        }
      }
      if (dup) continue;
      l.rate_bytes_per_s = rate ? *rate : std::min(end_a.rate, end_b.rate);
      // Keep node ends first so readers of the model need not check both orders.
      if (l.b.kind == model::Endpoint::Kind::kNic) std::swap(l.a, l.b);
      cluster_.links.push_back(std::move(l));
    }
    for (auto [problem, at] : {std::pair{&nic_to_nic, &to}, std::pair{&loop, &to}, std::pair{&twice_from, &from},
                               std::pair{&twice_to, &to}}) {
      if (problem->count == 0) continue;
      std::string more = problem->count > 1 ? fmt::format(" (and {} more like it in this entry)", problem->count - 1) : "";
      r_.Error(*at, problem->first + more);
    }
  }
}

}  // namespace gpuforge::inventory::internal
