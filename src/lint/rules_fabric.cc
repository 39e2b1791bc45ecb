// fabric.* and network.*: the compute fabric (kind, scale, topology, cabling, rates) and
// the separation of storage traffic from it.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gpuforge/base/fold.h"
#include "gpuforge/base/quantity.h"
#include "gpuforge/base/text.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

using model::Endpoint;

// GPUs behind one network: GPU nodes with a NIC on it. An inventory that declares the
// network but lists no NICs still means the GPU nodes talk over it, so fall back to all.
int GpusOnNetwork(const model::Cluster& c, const model::Network& net) {
  int gpus = 0;
  for (const model::Node* n : GpuNodes(c)) {
    const model::Profile& p = c.ProfileOf(*n);
    bool on = std::any_of(p.nics.begin(), p.nics.end(),
                          [&](const model::NicSpec& nic) { return nic.network == net.name; });
    if (on) gpus += p.gpu_count();
  }
  return gpus > 0 ? gpus : ComputeGpus(c);
}

int TierRank(model::SwitchTier t) {
  switch (t) {
    case model::SwitchTier::kLeaf:
      return 0;
    case model::SwitchTier::kSpine:
      return 1;
    case model::SwitchTier::kCore:
      return 2;
  }
  return 0;
}

class UnionFind {
 public:
  explicit UnionFind(std::size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  std::size_t Find(std::size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(std::size_t a, std::size_t b) { parent_[Find(a)] = Find(b); }

 private:
  std::vector<std::size_t> parent_;
};

// ---------------------------------------------------------------- kind and scale

void NoComputeNetwork(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  std::vector<const model::Node*> nodes = GpuNodes(c);
  // One node trains over NVLink alone; the rule is about talking between nodes.
  if (nodes.size() < 2) return;
  std::vector<const model::Network*> nets = ComputeNetworks(c);
  if (nets.empty()) {
    ctx.Report(fmt::format("{} GPU nodes ({}) but no network has role compute; multi-node "
                           "training needs a compute fabric",
                           nodes.size(), FoldNames(NamesOf(nodes))),
               NamesOf(nodes), SourcePos{});
    return;
  }
  std::vector<std::string> bare;
  for (const model::Node* n : nodes) {
    if (ComputeNics(c, c.ProfileOf(*n)).empty()) bare.push_back(n->name);
  }
  if (bare.empty()) return;
  std::vector<std::string> net_names;
  for (const model::Network* n : nets) net_names.push_back(n->name);
  ctx.Report(fmt::format("GPU {} {} no NIC on the compute network {}", NodeList(bare),
                         bare.size() == 1 ? "has" : "have", fmt::join(net_names, ", ")),
             bare, c.FindNode(bare.front())->where);
}

void EthernetScale(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double max_gpus = ctx.Param("max_gpus");
  for (const model::Network* net : ComputeNetworks(c)) {
    if (net->kind != model::NetKind::kEthernet) continue;
    int gpus = GpusOnNetwork(c, *net);
    if (!(gpus > max_gpus)) continue;
    ctx.Report(fmt::format("compute network {} is plain Ethernet (no RDMA) carrying {}, above "
                           "the {} GPU limit for Ethernet training; use InfiniBand or RoCE",
                           net->name, text::Plural(gpus, "GPU"), FormatNumber(max_gpus)),
               {net->name}, net->where);
  }
}

void NoInfiniband(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double min_gpus = ctx.Param("min_gpus");
  for (const model::Network* net : ComputeNetworks(c)) {
    if (net->kind == model::NetKind::kInfiniband) continue;
    int gpus = GpusOnNetwork(c, *net);
    if (!(gpus >= min_gpus)) continue;
    ctx.Report(fmt::format("compute network {} is {}, not InfiniBand, at {} (InfiniBand "
                           "advised from {} GPUs)",
                           net->name, model::ToString(net->kind), text::Plural(gpus, "GPU"),
                           FormatNumber(min_gpus)),
               {net->name}, net->where);
  }
}

void RoceScale(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double max_gpus = ctx.Param("max_gpus");
  for (const model::Network* net : ComputeNetworks(c)) {
    if (net->kind != model::NetKind::kRoce) continue;
    int gpus = GpusOnNetwork(c, *net);
    if (!(gpus > max_gpus)) continue;
    ctx.Report(fmt::format("compute network {} is RoCE carrying {}, above {} GPUs; at this "
                           "scale use InfiniBand",
                           net->name, text::Plural(gpus, "GPU"), FormatNumber(max_gpus)),
               {net->name}, net->where);
  }
}

void L2Topology(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  for (const model::Network* net : ComputeNetworks(c)) {
    if (net->topology != model::Topology::kL2) continue;
    ctx.Report(fmt::format("compute network {} is a flat L2 network (spanning tree); use a "
                           "fat-tree, spine-leaf or torus",
                           net->name),
               {net->name}, net->where);
  }
}

// ---------------------------------------------------------------- topology

// "8 x 400 Gb/s", or "6 x 400 Gb/s + 2 x 200 Gb/s" when rates differ.
std::string RateMix(const std::map<double, int, std::greater<>>& by_rate) {
  std::vector<std::string> parts;
  for (const auto& [rate, n] : by_rate) {
    parts.push_back(fmt::format("{} x {}", n, quantity::FormatBandwidthBits(rate)));
  }
  return parts.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(parts, " + "));
}

void Oversubscription(const model::Cluster& c, const model::Fabric& f, RuleContext& ctx) {
  const double max_ratio = ctx.Param("max_ratio");
  for (const model::SwitchLoad& load : f.switches) {
    const model::Switch& sw = *load.sw;
    // Storage and management fabrics are oversubscribed by design; the guides' 1:1 is about
    // the fabric gradients cross.
    if (!IsComputeNetwork(c, sw.network)) continue;
    if (!load.oversubscription || !(*load.oversubscription > max_ratio + 1e-9)) continue;
    // Re-walk the links for the per-rate breakdown the message shows; the classification is
    // the one AnalyzeFabric uses (lower tier or a NIC: down; higher tier: up).
    std::map<double, int, std::greater<>> down, up;
    for (const model::Link& l : c.links) {
      const Endpoint* self = nullptr;
      const Endpoint* other = nullptr;
      if (l.a.kind == Endpoint::Kind::kSwitchPort && l.a.device == sw.name) {
        self = &l.a;
        other = &l.b;
      } else if (l.b.kind == Endpoint::Kind::kSwitchPort && l.b.device == sw.name) {
        self = &l.b;
        other = &l.a;
      }
      if (self == nullptr) continue;
      if (other->kind == Endpoint::Kind::kNic) {
        ++down[l.rate_bytes_per_s];
        continue;
      }
      const model::Switch* peer = c.FindSwitch(other->device);
      if (peer == nullptr) continue;
      int me = TierRank(sw.tier), them = TierRank(peer->tier);
      if (them < me) ++down[l.rate_bytes_per_s];
      if (them > me) ++up[l.rate_bytes_per_s];
    }
    ctx.Report(fmt::format("{}: {} down vs {} up = {}:1 oversubscribed (limit {}:1)", sw.name,
                           RateMix(down), RateMix(up), FormatNumber(*load.oversubscription),
                           FormatNumber(max_ratio)),
               {sw.name}, sw.where);
  }
}

void MissingUplinks(const model::Cluster& c, const model::Fabric& f, RuleContext& ctx) {
  for (const model::Network& net : c.networks) {
    std::vector<const model::SwitchLoad*> loads;
    for (const model::SwitchLoad& s : f.switches) {
      if (s.sw->network == net.name) loads.push_back(&s);
    }
    if (loads.empty()) continue;

    // Islands: switches joined by switch-to-switch links, then nodes joined through any
    // switch they share. Counting islands of nodes (not of switches) keeps rail-only
    // designs, where each node reaches every rail, from looking partitioned.
    std::map<std::string, std::size_t> index;
    for (const model::SwitchLoad* s : loads) index.emplace(s->sw->name, index.size());
    UnionFind islands(index.size());
    for (const model::SwitchLoad* s : loads) {
      for (const std::string& up : s->upper_switches) {
        if (auto it = index.find(up); it != index.end())
          islands.Union(index[s->sw->name], it->second);
      }
    }
    std::map<std::string, std::vector<std::size_t>> node_switches;
    for (const model::NicAttachment& a : f.attachments) {
      if (auto it = index.find(a.sw); it != index.end())
        node_switches[a.node].push_back(it->second);
    }
    for (const auto& [node, sws] : node_switches) {
      for (std::size_t i = 1; i < sws.size(); ++i) islands.Union(sws[0], sws[i]);
    }
    std::map<std::size_t, std::vector<std::string>> island_nodes;
    for (const auto& [node, sws] : node_switches)
      island_nodes[islands.Find(sws[0])].push_back(node);

    if (island_nodes.size() > 1) {
      std::vector<std::string> parts;
      std::vector<std::string> objects;
      for (const auto& [root, nodes] : island_nodes) {
        std::set<std::string> leaves;
        for (const std::string& n : nodes) {
          for (std::size_t s : node_switches[n]) leaves.insert(loads[s]->sw->name);
        }
        parts.push_back(fmt::format("{} ({})", FoldNames(nodes),
                                    fmt::join(leaves, ", ")));
        objects.insert(objects.end(), nodes.begin(), nodes.end());
      }
      ctx.Report(fmt::format("nodes on network {} are split into {} islands with no switch path "
                             "between them: {}",
                             net.name, island_nodes.size(), fmt::join(parts, "; ")),
                 std::move(objects), net.where);
      continue;  // the islands name the leaves already; one finding per partition
    }

    std::vector<const model::SwitchLoad*> leaves;
    for (const model::SwitchLoad* s : loads) {
      if (s->sw->tier == model::SwitchTier::kLeaf) leaves.push_back(s);
    }
    if (leaves.size() < 2) continue;
    // With every node in one island, a leaf without uplinks is only cut off when it is not in
    // that island (a rail-only fabric's leaves are joined through the nodes themselves).
    std::optional<std::size_t> node_island;
    if (island_nodes.size() == 1) node_island = island_nodes.begin()->first;
    for (const model::SwitchLoad* s : leaves) {
      if (!s->upper_switches.empty()) continue;
      if (node_island && islands.Find(index[s->sw->name]) == *node_island) continue;
      std::string behind = s->nodes.empty()
                               ? std::string()
                               : fmt::format(" (nodes behind it: {})", FoldNames(s->nodes));
      ctx.Report(fmt::format("leaf {} on network {} has no uplinks; with {} leaves the fabric is "
                             "partitioned{}",
                             s->sw->name, net.name, leaves.size(), behind),
                 {s->sw->name}, s->sw->where);
    }
  }
}

void RailAlignment(const model::Cluster& c, const model::Fabric& f, RuleContext& ctx) {
  for (const model::Network* net : ComputeNetworks(c)) {
    if (net->topology != model::Topology::kRailOptimized) continue;
    // node -> rail -> switch, and switch -> rail -> nodes, from the cabling.
    std::map<std::string, std::map<int, std::set<std::string>>> node_rails;
    std::map<std::string, std::map<int, std::vector<std::string>>> switch_rails;
    for (const model::NicAttachment& a : f.attachments) {
      const model::Switch* sw = c.FindSwitch(a.sw);
      const model::NicSpec* nic = FindNic(c, a.node, a.nic);
      if (sw == nullptr || sw->network != net->name || nic == nullptr || !nic->rail) continue;
      node_rails[a.node][*nic->rail].insert(a.sw);
      switch_rails[a.sw][*nic->rail].push_back(a.node);
    }
    // Nodes whose every rail lands on one switch: the rails buy nothing there.
    std::map<std::string, std::vector<std::string>> collapsed;  // switch -> nodes
    for (const auto& [node, rails] : node_rails) {
      std::set<std::string> sws;
      for (const auto& [rail, s] : rails) sws.insert(s.begin(), s.end());
      if (rails.size() >= 2 && sws.size() == 1) collapsed[*sws.begin()].push_back(node);
    }
    for (const auto& [sw, nodes] : collapsed) {
      const bool one = nodes.size() == 1;
      ctx.Report(fmt::format("{} on rail-optimized network {} {} all {} rails ({}) on {}; each "
                             "rail belongs on its own leaf",
                             NodeList(nodes), net->name, one ? "lands" : "land",
                             one ? "its" : "their", node_rails[nodes.front()].size(), sw),
                 nodes, c.FindSwitch(sw)->where);
    }
    // A leaf may carry several whole rails (8 rails on 2 leaves is a small rail-optimized
    // fabric, #28 item 4); what breaks rail alignment is a NIC away from its rail's leaf. Two
    // nodes are in one scalable unit when at least half their rails share leaves (several
    // units put the same rail on different leaves; a stray cable or two does not join units);
    // in a unit, a rail's home is the leaf most of its NICs land on.
    std::set<std::string> collapsed_nodes;
    for (const auto& [sw, nodes] : collapsed) collapsed_nodes.insert(nodes.begin(), nodes.end());
    //
    // Nodes cabled alike (the same leaf for every rail) share all their rails, so they are one
    // unit outright, and any two of them share as many rails with a third node: pairs are
    // counted between classes of alike nodes, not between nodes. Counting node pairs was
    // quadratic in the nodes per leaf: 4.1 million pairs at 16,384 nodes (#28 item 19).
    std::map<std::map<int, std::set<std::string>>, int> class_of_cabling;
    std::map<std::string, int> node_class;
    std::vector<std::size_t> class_rails;  // class -> rails of each of its nodes
    std::vector<bool> class_collapsed;
    for (const auto& [node, rails] : node_rails) {
      auto [it, fresh] = class_of_cabling.emplace(rails, static_cast<int>(class_rails.size()));
      if (fresh) {
        class_rails.push_back(rails.size());
        class_collapsed.push_back(collapsed_nodes.count(node) > 0);
      }
      node_class.emplace(node, it->second);
    }
    // Union-find over classes; the smaller class (the one met first, by node name) is the root.
    std::vector<int> parent(class_rails.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::function<int(int)> root = [&](int k) { return parent[k] == k ? k : parent[k] = root(parent[k]); };
    std::map<std::pair<int, int>, std::size_t> shared;  // class pair -> rails on one leaf
    for (const auto& [sw, rails] : switch_rails) {
      for (const auto& [rail, nodes] : rails) {
        std::vector<int> classes;
        for (const std::string& n : nodes) classes.push_back(node_class.at(n));
        std::sort(classes.begin(), classes.end());
        classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
        for (std::size_t i = 0; i < classes.size(); ++i) {
          for (std::size_t j = i + 1; j < classes.size(); ++j) ++shared[{classes[i], classes[j]}];
        }
      }
    }
    for (const auto& [pair, n] : shared) {
      if (class_collapsed[pair.first] || class_collapsed[pair.second]) continue;
      const std::size_t fewer = std::min(class_rails[pair.first], class_rails[pair.second]);
      if (2 * n < fewer) continue;
      const int a = root(pair.first), b = root(pair.second);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
    auto find = [&](const std::string& node) { return root(node_class.at(node)); };
    auto is_collapsed = [&](const std::string& node) { return collapsed_nodes.count(node) > 0; };
    // unit -> rail -> switch -> nodes
    std::map<int, std::map<int, std::map<std::string, std::vector<std::string>>>> placed;
    for (const auto& [node, rails] : node_rails) {
      if (is_collapsed(node)) continue;
      for (const auto& [rail, sws] : rails) {
        for (const std::string& sw : sws) placed[find(node)][rail][sw].push_back(node);
      }
    }
    struct Stray {
      std::string node;
      int rail;
      std::string at, home;
    };
    std::vector<Stray> strays;
    for (const auto& [rep, rails] : placed) {
      for (const auto& [rail, by_switch] : rails) {
        if (by_switch.size() < 2) continue;
        std::size_t most = 0, at_most = 0;
        std::string home;
        for (const auto& [sw, nodes] : by_switch) {
          if (nodes.size() > most) {
            most = nodes.size();
            home = sw;
            at_most = 1;
          } else if (nodes.size() == most) {
            ++at_most;
          }
        }
        if (at_most > 1) {
          // No majority: say how the rail splits, without guessing which side is wrong.
          std::vector<std::string> parts, objects;
          for (const auto& [sw, nodes] : by_switch) {
            parts.push_back(fmt::format("{} ({})", sw, FoldNames(nodes)));
            objects.insert(objects.end(), nodes.begin(), nodes.end());
          }
          ctx.Report(fmt::format("rail {} on rail-optimized network {} splits across {} within one scalable unit; the "
                                 "same rail of nodes that share a leaf should share its leaf too",
                                 rail, net->name, fmt::join(parts, ", ")),
                     std::move(objects), c.FindSwitch(by_switch.begin()->first)->where);
          continue;
        }
        for (const auto& [sw, nodes] : by_switch) {
          if (sw == home) continue;
          for (const std::string& n : nodes) strays.push_back({n, rail, sw, home});
        }
      }
    }
    // Two rails of one node each on the other's leaf: crossed cables, one swap fixes both.
    std::vector<bool> done(strays.size(), false);
    for (std::size_t i = 0; i < strays.size(); ++i) {
      for (std::size_t j = i + 1; j < strays.size() && !done[i]; ++j) {
        const Stray &x = strays[i], &y = strays[j];
        if (done[j] || x.node != y.node || x.at != y.home || y.at != x.home) continue;
        done[i] = done[j] = true;
        ctx.Report(fmt::format("{} on rail-optimized network {}: rail {} lands on {} and rail {} on {}, each on the "
                               "other's leaf; swap the two cables",
                               x.node, net->name, x.rail, x.at, y.rail, y.at),
                   {x.node, x.at, y.at}, c.FindSwitch(x.at)->where);
      }
    }
    std::map<std::tuple<int, std::string, std::string>, std::vector<std::string>> away;  // (rail, at, home)
    for (std::size_t i = 0; i < strays.size(); ++i) {
      if (!done[i]) away[{strays[i].rail, strays[i].at, strays[i].home}].push_back(strays[i].node);
    }
    for (const auto& [key, nodes] : away) {
      const auto& [rail, at, home] = key;
      const std::size_t others = placed[find(nodes.front())][rail][home].size();
      std::vector<std::string> objects = nodes;
      objects.push_back(at);
      ctx.Report(fmt::format("rail {} of {} on rail-optimized network {} lands on {}; rail {} of the other {} node{} "
                             "sharing a leaf with {} lands on {}",
                             rail, NodeList(nodes), net->name, at, rail, others, others == 1 ? "" : "s",
                             nodes.size() == 1 ? "it" : "them", home),
                 std::move(objects), c.FindSwitch(at)->where);
    }
  }
}

// ---------------------------------------------------------------- cabling

void Dangling(const model::Cluster& c, const model::Fabric& f, RuleContext& ctx) {
  // Grouped by (NIC, network) so 32 nodes missing the same cable read as one line.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> missing;
  for (const auto& [node, nic] : f.unattached_nics) {
    const model::NicSpec* spec = FindNic(c, node, nic);
    missing[{nic, spec != nullptr ? spec->network : std::string()}].push_back(node);
  }
  for (const auto& [key, nodes] : missing) {
    const model::NicSpec* spec = FindNic(c, nodes.front(), key.first);
    ctx.Report(fmt::format("NIC {} on {} (network {}) is not cabled to any switch", key.first,
                           FoldNames(nodes), key.second),
               nodes, spec != nullptr ? spec->where : c.FindNode(nodes.front())->where);
  }
  for (const model::SwitchLoad& s : f.switches) {
    if (s.ports_used > 0) continue;
    ctx.Report(fmt::format("switch {} (network {}) has no links", s.sw->name, s.sw->network),
               {s.sw->name}, s.sw->where);
  }
}

double EndRate(const model::Cluster& c, const Endpoint& e) {
  if (e.kind == Endpoint::Kind::kNic) {
    const model::NicSpec* nic = FindNic(c, e.device, e.nic);
    return nic != nullptr ? NicRate(c, *nic) : 0;
  }
  const model::Switch* sw = c.FindSwitch(e.device);
  return sw != nullptr ? sw->port_rate_bytes_per_s : 0;
}

void SwitchCapacity(const model::Cluster& c, const model::Fabric& f, RuleContext& ctx) {
  for (const model::SwitchLoad& s : f.switches) {
    if (s.sw->ports > 0 && s.ports_used > s.sw->ports) {
      ctx.Report(fmt::format("switch {} has {} cabled but only {}", s.sw->name,
                             text::Plural(s.ports_used, "port"), s.sw->ports),
                 {s.sw->name}, s.sw->where);
    }
  }
  // Port numbers: cabled twice, or past the switch's port count. Port 0 means "not said".
  // Keyed by the link's own strings and holding the links' other ends, not names built per
  // port: 16,384 nodes have 330,000 switch ports in use (#28 item 19). Only the ports in
  // trouble are sorted, for a stable report.
  struct PortKey {
    std::string_view device;
    int port;
    bool operator==(const PortKey&) const = default;
    bool operator<(const PortKey& o) const { return std::tie(device, port) < std::tie(o.device, o.port); }
  };
  struct PortHash {
    std::size_t operator()(const PortKey& k) const {
      return std::hash<std::string_view>{}(k.device) * 31 + static_cast<std::size_t>(k.port);
    }
  };
  struct PortUse {
    const Endpoint* first = nullptr;  // the other end of the first link; `more` only when cabled twice
    std::vector<const Endpoint*> more;
    const SourcePos* where = nullptr;
    const model::Switch* sw = nullptr;
  };
  std::unordered_map<PortKey, PortUse, PortHash> port_use;
  port_use.reserve(2 * c.links.size());
  // Links come switch by switch in an inventory: the last switch looked up is usually the one.
  std::string_view last_name;
  const model::Switch* last_sw = nullptr;
  for (const model::Link& l : c.links) {
    for (const auto& [self, other] : {std::pair{&l.a, &l.b}, std::pair{&l.b, &l.a}}) {
      if (self->kind != Endpoint::Kind::kSwitchPort || self->port <= 0) continue;
      PortUse& use = port_use[PortKey{self->device, self->port}];
      if (use.first == nullptr) {
        use.first = other;
        use.where = &l.where;
        if (last_sw == nullptr || self->device != last_name) {
          last_name = self->device;
          last_sw = c.FindSwitch(last_name);
        }
        use.sw = last_sw;
      } else {
        use.more.push_back(other);
      }
    }
  }
  struct Trouble {
    PortKey key;
    const PortUse* use;
    const model::Switch* sw;
  };
  std::vector<Trouble> trouble;
  for (const auto& [key, use] : port_use) {
    const model::Switch* sw = use.sw;
    if (sw == nullptr) continue;
    if ((sw->ports > 0 && key.port > sw->ports) || !use.more.empty()) trouble.push_back({key, &use, sw});
  }
  std::sort(trouble.begin(), trouble.end(), [](const Trouble& x, const Trouble& y) { return x.key < y.key; });
  for (const Trouble& t : trouble) {
    const std::pair<std::string, int> key{std::string(t.key.device), t.key.port};
    const model::Switch* sw = t.sw;
    const PortUse* use = t.use;
    const SourcePos& where = *use->where;
    std::vector<std::string> others{use->first->ToString()};
    for (const Endpoint* e : use->more) others.push_back(e->ToString());
    if (sw->ports > 0 && key.second > sw->ports) {
      ctx.Report(fmt::format("link to {} port {} ({}) is past its {}", key.first, key.second,
                             base::FoldEndpoints(others), text::Plural(sw->ports, "port")),
                 {key.first}, where);
    }
    if (others.size() > 1) {
      ctx.Report(fmt::format("port {}:{} is cabled {} times ({})", key.first, key.second,
                             others.size(), base::FoldEndpoints(others)),
                 {key.first}, where);
    }
  }
  // Links slower than an end can run, grouped per switch, rates and cause (#28 item 12: a port
  // split on purpose was called "reduced width: bandwidth halved"):
  //  - kCapped: a NIC faster than the switch port; the port rate caps it;
  //  - kSlowerEnd: a switch port faster than the NIC on it: a split port (2 x 400 on an 800
  //    port) or a slower NIC; a split made on purpose is declared as its logical ports;
  //  - kBelowBoth: a link rate written below both ends: a cable or a link up at reduced width.
  enum Cause { kCapped, kSlowerEnd, kBelowBoth };
  struct Slow {
    std::vector<std::string> ends;
    SourcePos where;
    double low_end = 0;  // kBelowBoth: the slower of the two ends
  };
  std::map<std::tuple<std::string, double, double, int>, Slow> slow;
  for (const model::Link& l : c.links) {
    if (l.rate_bytes_per_s <= 0) continue;
    const Endpoint* sw_end = l.a.kind == Endpoint::Kind::kSwitchPort ? &l.a : &l.b;
    const Endpoint* other = sw_end == &l.a ? &l.b : &l.a;
    if (sw_end->kind != Endpoint::Kind::kSwitchPort) continue;
    double sw_rate = EndRate(c, *sw_end);
    double other_rate = EndRate(c, *other);
    double faster = std::max(sw_rate, other_rate);
    if (!(l.rate_bytes_per_s < faster * (1 - 1e-9))) continue;
    double slower = std::min(sw_rate, other_rate);
    Cause cause = slower > 0 && l.rate_bytes_per_s < slower * (1 - 1e-9) ? kBelowBoth
                  : other_rate >= sw_rate                               ? kCapped
                                                                        : kSlowerEnd;
    Slow& entry = slow[{sw_end->device, l.rate_bytes_per_s, faster, cause}];
    if (entry.ends.empty()) entry.where = l.where;
    entry.low_end = slower;
    entry.ends.push_back(other->ToString());
  }
  for (const auto& [key, entry] : slow) {
    const auto& [sw, rate, faster, cause] = key;
    const std::size_t n = entry.ends.size();
    const bool one = n == 1;
    const std::string ends = base::FoldEndpoints(entry.ends);
    const std::string at = quantity::FormatBandwidthBits(rate);
    std::string message;
    if (cause == kCapped) {
      message = fmt::format("{}: {} {} at {}, the switch's port rate, below the {} of {} other end{} ({})", sw,
                            text::Plural(n, "link"), one ? "runs" : "run", at, quantity::FormatBandwidthBits(faster),
                            one ? "its" : "their", one ? "" : "s", ends);
    } else if (cause == kSlowerEnd) {
      message = fmt::format(
          "{}: {} {} at {} on {}'s {} ports ({}): a slower NIC, or a port split on purpose; declare a split "
          "switch by its logical ports (port_rate: {}, ports: the count after the split)",
          sw, text::Plural(n, "link"), one ? "runs" : "run", at, sw, quantity::FormatBandwidthBits(faster), ends, at);
    } else {
      message = fmt::format("{}: {} {} at {} ({}), below both ends (the slower runs {}): a slower cable, or a "
                            "link up at reduced width, which halves bandwidth",
                            sw, text::Plural(n, "link"), one ? "is written" : "are written", at, ends,
                            quantity::FormatBandwidthBits(entry.low_end));
    }
    ctx.Report(Severity::kWarning, std::move(message), {sw}, entry.where);
  }
}

// ---------------------------------------------------------------- rates

void NicRateRule(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  if (GpuNodes(c).size() < 2) return;
  const double min_rate = ctx.Param("min_bytes_per_s");
  for (const ProfileUse& use : GpuProfiles(c)) {
    std::vector<const model::NicSpec*> nics = ComputeNics(c, *use.profile);
    if (nics.empty()) continue;  // fabric.no_compute_network says so
    double total = 0;
    std::map<double, int, std::greater<>> by_rate;
    for (const model::NicSpec* nic : nics) {
      double r = NicRate(c, *nic);
      total += r;
      ++by_rate[r];
    }
    if (!(total < min_rate * (1 - 1e-9))) continue;
    std::vector<std::string> objects = {use.profile->name};
    objects.insert(objects.end(), use.nodes.begin(), use.nodes.end());
    ctx.Report(
        fmt::format("profile {} ({}) has {} of compute network bandwidth per node ({}), "
                    "below {}",
                    use.profile->name, NodeList(use.nodes), quantity::FormatBandwidthBits(total),
                    RateMix(by_rate), quantity::FormatBandwidthBits(min_rate)),
        std::move(objects), use.profile->where);
  }
}

void IbLinkRate(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const double min_rate = ctx.Param("min_bytes_per_s");
  for (const ProfileUse& use : GpuProfiles(c)) {
    std::vector<std::string> slow;
    double rate = 0;
    SourcePos where;
    for (const model::NicSpec* nic : ComputeNics(c, *use.profile)) {
      double r = NicRate(c, *nic);
      if (nic->kind != model::NetKind::kInfiniband || r <= 0 || !(r < min_rate * (1 - 1e-9)))
        continue;
      if (slow.empty()) where = nic->where;
      slow.push_back(nic->name);
      rate = std::max(rate, r);
    }
    if (slow.empty()) continue;
    std::vector<std::string> objects = {use.profile->name};
    objects.insert(objects.end(), use.nodes.begin(), use.nodes.end());
    ctx.Report(
        fmt::format("InfiniBand {} {} on {} run at {} or less, below {} (HDR)",
                    slow.size() == 1 ? "NIC" : "NICs", FoldNames(slow), NodeList(use.nodes),
                    quantity::FormatBandwidthBits(rate), quantity::FormatBandwidthBits(min_rate)),
        std::move(objects), where);
  }
}

void NoStorageNetwork(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  std::vector<const model::Node*> nodes = GpuNodes(c);
  std::vector<const model::Network*> compute = ComputeNetworks(c);
  if (nodes.size() < 2 || compute.empty()) return;
  std::vector<const model::Network*> side;
  for (const model::Network& n : c.networks) {
    if (n.role != model::NetRole::kCompute) side.push_back(&n);
  }
  if (side.empty()) {
    ctx.Report(fmt::format("no storage or control network: checkpoints, data loading and "
                           "control traffic share compute network {}",
                           compute.front()->name),
               {compute.front()->name}, compute.front()->where);
    return;
  }
  std::vector<std::string> bare;
  for (const model::Node* n : nodes) {
    const auto& nics = c.ProfileOf(*n).nics;
    bool has = std::any_of(nics.begin(), nics.end(), [&](const model::NicSpec& nic) {
      const model::Network* net = nic.network.empty() ? nullptr : c.FindNetwork(nic.network);
      return net != nullptr && net->role != model::NetRole::kCompute;
    });
    if (!has) bare.push_back(n->name);
  }
  if (!bare.empty()) {
    std::vector<std::string> side_names;
    for (const model::Network* n : side) side_names.push_back(n->name);
    ctx.Report(fmt::format("GPU {} {} no NIC on a storage or control network ({}), so {} file "
                           "I/O rides the compute fabric",
                           NodeList(bare), bare.size() == 1 ? "has" : "have", fmt::join(side_names, ", "),
                           bare.size() == 1 ? "its" : "their"),
               bare, c.FindNode(bare.front())->where);
  }
  for (const model::StorageTier& t : c.storage.tiers) {
    if (t.role == model::StorageRole::kCold || !IsComputeNetwork(c, t.network)) continue;
    ctx.Report(fmt::format("storage tier {} ({}) is reached over compute network {}; data "
                           "loading and checkpoints then compete with gradients",
                           t.name, model::ToString(t.role), t.network),
               {t.name}, t.where);
  }
}

}  // namespace

void AddFabricRules(std::vector<Rule>& rules) {
  const std::string_view topology_000 =
      "000_bf90931f775ecd9c.txt, Network Topology: How to Wire the Damn Thing";
  rules.push_back({"fabric.no_compute_network",
                   Severity::kError,
                   "several GPU nodes but no compute network, or GPU nodes with no NIC on it",
                   "000_bf90931f775ecd9c.txt, Networking: The Hidden Bottleneck",
                   {},
                   &NoComputeNetwork});
  rules.push_back(
      {"fabric.ethernet_scale",
       Severity::kError,
       "plain Ethernet (no RDMA) compute network above a small GPU count",
       "000_bf90931f775ecd9c.txt, Networking tiers for GPU clusters (Ethernet: 4-16 GPUs) and "
       "FAQ (\"Is Ethernet acceptable for AI training?\")",
       {{"max_gpus", 16, "GPUs", "most GPUs on plain Ethernet; guide 000 says 4-16"}},
       &EthernetScale});
  rules.push_back(
      {"fabric.no_infiniband",
       Severity::kWarning,
       "compute network that is not InfiniBand at a GPU count where the guide says buy it",
       "000_bf90931f775ecd9c.txt, Networking tiers for GPU clusters (\"My advice: If your "
       "cluster is 32 GPUs or more, buy InfiniBand\")",
       {{"min_gpus", 32, "GPUs", "GPU count from which InfiniBand is advised; guide 000"}},
       &NoInfiniband});
  rules.push_back(
      {"fabric.roce_scale",
       Severity::kError,
       "RoCE compute network above the GPU count where "
       "the guide wants InfiniBand",
       "004_910c09f65559b553.txt, The Networking Architecture That Actually Works (and the One "
       "That Doesn't) (\"For clusters above 128 GPUs, you want InfiniBand\")",
       {{"max_gpus", 128, "GPUs", "most GPUs on RoCE; guide 004"}},
       &RoceScale});
  rules.push_back({"fabric.l2_topology",
                   Severity::kError,
                   "compute network with a flat L2 (spanning tree) topology",
                   "000_bf90931f775ecd9c.txt, Network Topology: How to Wire the Damn Thing "
                   "(\"Don't use L2 networking\")",
                   {},
                   &L2Topology});
  rules.push_back(
      {"fabric.oversubscription",
       Severity::kError,
       "compute-fabric switch whose downlink bandwidth exceeds its uplink bandwidth",
       "000_bf90931f775ecd9c.txt, Network Topology: How to Wire the Damn Thing (spine-leaf with "
       "1:1 oversubscription); 004_910c09f65559b553.txt, The Networking Architecture That "
       "Actually Works (and the One That Doesn't) (full bisection bandwidth)",
       {{"max_ratio", 1.0, "ratio",
         "largest down:up bandwidth ratio per switch; 1:1 per both guides"}},
       &Oversubscription});
  rules.push_back({"fabric.missing_uplinks",
                   Severity::kError,
                   "leaf without uplinks among several leaves, or nodes split into islands with "
                   "no switch path between them",
                   topology_000,
                   {},
                   &MissingUplinks});
  rules.push_back({"fabric.rail_alignment",
                   Severity::kWarning,
                   "rail-optimized network whose cabling puts different rails on one leaf",
                   topology_000,
                   {},
                   &RailAlignment});
  rules.push_back({"fabric.dangling",
                   Severity::kWarning,
                   "NICs on a switched network with no link, and switches with no links",
                   topology_000,
                   {},
                   &Dangling});
  rules.push_back({"fabric.switch_capacity",
                   Severity::kError,
                   "switch with more ports cabled than it has, ports cabled twice or out of "
                   "range; links slower than an end (warning)",
                   "000_bf90931f775ecd9c.txt, Network Topology: How to Wire the Damn Thing and "
                   "Common Failure Modes I've Seen (link up at reduced width: bandwidth halved, for "
                   "a link written below both ends)",
                   {},
                   &SwitchCapacity});
  rules.push_back(
      {"fabric.nic_rate",
       Severity::kWarning,
       "compute network bandwidth per GPU node (sum of its compute NICs)",
       "004_910c09f65559b553.txt, Why You Can't Just Stack GPUs Like Lego (\"Bandwidth density "
       "- GPUs need 400-800 Gbps per node\")",
       {{"min_bytes_per_s", 50e9, "bytes/s",
         "least compute bandwidth per node; 50e9 bytes/s = 400 Gb/s, guide 004's lower figure"}},
       &NicRateRule});
  rules.push_back(
      {"fabric.ib_link_rate",
       Severity::kWarning,
       "InfiniBand compute NICs slower than HDR",
       "000_bf90931f775ecd9c.txt, Networking tiers for GPU clusters (InfiniBand \"Requires HDR "
       "or higher\")",
       {{"min_bytes_per_s", 25e9, "bytes/s",
         "least InfiniBand NIC rate; 25e9 bytes/s = 200 Gb/s (HDR)"}},
       &IbLinkRate});
  rules.push_back(
      {"network.no_storage_network",
       Severity::kWarning,
       "no storage/control network separate from the compute fabric, GPU nodes not on it, or "
       "hot/warm storage reached over the compute network",
       "004_910c09f65559b553.txt, The Networking Architecture That Actually Works (and the One "
       "That Doesn't) (\"Layer 3: Ethernet for storage and control ... the one people forget\")",
       {},
       &NoStorageNetwork});
}

}  // namespace gpuforge::lint
