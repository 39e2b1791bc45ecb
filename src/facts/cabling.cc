#include "gpuforge/facts/cabling.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "facts/pci_tree.h"
#include "gpuforge/base/text.h"
#include "gpuforge/facts/ib_link.h"
#include "gpuforge/model/switch_names.h"

namespace gpuforge::facts {

const char* ToString(CableState s) {
  switch (s) {
    case CableState::kOk: return "OK";
    case CableState::kDegraded: return "DEGRADED";
    case CableState::kMissing: return "MISSING";
    case CableState::kMiswired: return "MISWIRED";
    case CableState::kSwapped: return "SWAPPED";
    case CableState::kUnexpected: return "UNEXPECTED";
    case CableState::kPortUnknown: return "PORT-UNKNOWN";
    case CableState::kUnmeasured: return "UNMEASURED";
  }
  return "?";
}

const char* CodeOf(CableState s) {
  switch (s) {
    case CableState::kOk: return "";
    case CableState::kDegraded: return "cabling.degraded";
    case CableState::kMissing: return "cabling.missing";
    case CableState::kMiswired: return "cabling.miswired";
    case CableState::kSwapped: return "cabling.swapped";
    case CableState::kUnexpected: return "cabling.unexpected";
    case CableState::kPortUnknown: return "cabling.port_unknown";
    case CableState::kUnmeasured: return "cabling.unmeasured";
  }
  return "";
}

bool IsMiswire(CableState s) {
  return s == CableState::kMissing || s == CableState::kMiswired || s == CableState::kSwapped;
}

bool CablingResult::Miswired() const {
  return std::any_of(cables.begin(), cables.end(), [](const CableCheck& c) { return IsMiswire(c.state); });
}

namespace {

using model::Endpoint;

constexpr double kBitsPerByte = 8.0;

double Gbps(double bytes_per_s) { return bytes_per_s * kBitsPerByte / 1e9; }

// What is at the far end of a measured port.
struct Far {
  std::optional<Endpoint> end;  // resolved to an inventory device and port
  std::string shown;            // "leaf2:7", or as the tool named it
  bool port_unknown = false;    // the switch is known, its port name is not
};

// One port as measured, keyed by its own end.
struct Seen {
  Endpoint own;  // the port itself
  bool ib = false;
  bool conflict = false;  // listed twice with different peers: which is true is not known
  std::string conflict_with;
  std::optional<Far> far;  // nullopt: no peer (down, polling, no LLDP neighbour)
  std::optional<int> width;
  std::optional<double> gbps;
  std::string could_be;
  std::string state;   // "Down/Polling" for a port without a peer, where printed
  std::string source;  // "iblinkinfo on gpu001:118"
};

std::string Key(const Endpoint& e) { return e.ToString(); }

using gpuforge::text::Trim;

// A cable by its two ends as shown, in either order.
std::pair<std::string, std::string> PairKey(const std::string& a, const std::string& b) { return std::minmax(a, b); }

Endpoint NicEnd(std::string node, std::string nic) {
  Endpoint e;
  e.kind = Endpoint::Kind::kNic;
  e.device = std::move(node);
  e.nic = std::move(nic);
  return e;
}

Endpoint PortEnd(std::string sw, int port) {
  Endpoint e;
  e.kind = Endpoint::Kind::kSwitchPort;
  e.device = std::move(sw);
  e.port = port;
  return e;
}

bool SameEnd(const Endpoint& a, const Endpoint& b) {
  return a.kind == b.kind && a.device == b.device && a.nic == b.nic && a.port == b.port;
}

const model::NicSpec* NicOf(const model::Cluster& c, const model::Node& n, std::string_view nic) {
  for (const model::NicSpec& s : c.ProfileOf(n).nics) {
    if (s.name == nic) return &s;
  }
  return nullptr;
}

class Resolver {
 public:
  Resolver(const model::Cluster& c, const CablingInputs& in) : c_(c), names_(c) {
    for (const NodeFacts& f : in.nodes) {
      const model::Node* n = c.FindNode(f.node);
      if (n == nullptr) continue;
      for (const IbDevice& d : f.ib) {
        if (NicOf(c, *n, d.name) != nullptr) {
          if (!d.node_guid.empty()) {
            by_guid_[d.node_guid] = {f.node, d.name};
            nodes_with_guids_.insert(f.node);
          }
          // iblinkinfo prints an HCA's port GUID, ibnetdiscover its node GUID: both map.
          for (const IbPort& p : d.ports) {
            if (!p.port_guid.empty() && p.port_guid != "0x0000000000000000") by_guid_[p.port_guid] = {f.node, d.name};
          }
        }
        for (const std::string& net : d.netdevs) by_netdev_[f.node + "/" + net] = d.name;
      }
    }
  }

  // A port a subnet tool printed.
  Far Ib(const IbNodeRef& node, int port, const std::string& port_guid = "") const {
    IbNodeRef r = node;
    if (!r.is_switch && !port_guid.empty() && by_guid_.count(port_guid)) r.guid = port_guid;
    Far out;
    if (r.is_switch || !r.guid.empty() || !r.desc.empty()) {
      const model::Switch* sw = nullptr;
      if (!r.guid.empty()) sw = names_.Find(r.guid);
      if (sw == nullptr && (r.is_switch || by_guid_.find(r.guid) == by_guid_.end())) sw = names_.Find(r.desc);
      if (sw != nullptr && (r.is_switch || !LooksLikeHost(r.desc))) {
        if (port >= 1 && port <= sw->ports) {
          out.end = PortEnd(sw->name, port);
          out.shown = Key(*out.end);
        } else {
          out.shown = fmt::format("{} port {} (it has {})", sw->name, port, sw->ports);
        }
        return out;
      }
    }
    if (!r.is_switch) {
      std::string node, nic;
      if (auto it = by_guid_.find(r.guid); !r.guid.empty() && it != by_guid_.end()) {
        node = it->second.first;
        nic = it->second.second;
      } else {
        // rdma-ndd's default node description is "%h %d": host name, space, device
        // (rdma-core rdma-ndd/rdma-ndd.c, and the "ip-211 mlx4_0" of the fixtures).
        std::string_view d = r.desc;
        std::size_t sp = d.find(' ');
        if (sp != std::string_view::npos) {
          std::string_view host = d.substr(0, sp);
          std::string_view dev = Trim(d.substr(sp + 1));
          const model::Node* n = c_.FindNode(host);
          if (n == nullptr && host.find('.') != std::string_view::npos) n = c_.FindNode(host.substr(0, host.find('.')));
          // A description is taken only where no GUID says otherwise: when the node's own
          // GUIDs are known (facts) and this device's is not among them, it is another HCA that
          // carries the node's name (a cloned host name), not the node's.
          const bool guid_says_no = n != nullptr && !r.guid.empty() && nodes_with_guids_.count(n->name);
          if (n != nullptr && !guid_says_no && NicOf(c_, *n, dev) != nullptr) {
            node = n->name;
            nic = std::string(dev);
          }
        }
      }
      if (!node.empty()) {
        const model::Node* n = c_.FindNode(node);
        const model::NicSpec* s = n == nullptr ? nullptr : NicOf(c_, *n, nic);
        if (s != nullptr && s->port == port) {
          out.end = NicEnd(node, nic);
          out.shown = Key(*out.end);
          return out;
        }
        out.shown = fmt::format("{}:{} port {}", node, nic, port);
        return out;
      }
    }
    std::string who = r.desc.empty() ? r.guid : text::Quote(r.desc, 60);
    if (who.empty()) who = port_guid;
    if (!r.guid.empty() && !r.desc.empty()) who += " (" + r.guid + ")";
    if (who.empty() && r.lid != 0) who = fmt::format("LID {}", r.lid);
    out.shown = fmt::format("{} {} port {}", r.is_switch ? "switch" : "device", who, port);
    return out;
  }

  // An LLDP neighbour.
  Far Lldp(const LldpNeighbor& nb) const {
    Far out;
    const model::Switch* sw = nb.chassis_name.empty() ? nullptr : names_.Find(nb.chassis_name);
    if (sw == nullptr && !nb.chassis_id.empty()) sw = names_.Find(nb.chassis_id);
    std::string port_name = nb.port_id;
    if (sw == nullptr) {
      std::string who = !nb.chassis_name.empty() ? nb.chassis_name : nb.chassis_id;
      out.shown = fmt::format("{} port {}", text::Quote(who, 60),
                              text::Quote(!nb.port_id.empty() ? nb.port_id : nb.port_descr, 40));
      return out;
    }
    std::optional<int> port;
    // A MAC as port id says nothing of the port (sonic-buildimage #11255 sends it while a port
    // is down); the description then often holds the name.
    if (nb.port_id_type != "mac") port = model::PortFromName(nb.port_id, sw->port_pattern, sw->ports);
    if (!port && !nb.port_descr.empty()) port = model::PortFromName(nb.port_descr, sw->port_pattern, sw->ports);
    if (!port) {
      out.port_unknown = true;
      out.shown = fmt::format("{} port {}", sw->name, text::Quote(nb.port_id.empty() ? nb.port_descr : nb.port_id, 40));
      return out;
    }
    out.end = PortEnd(sw->name, *port);
    out.shown = Key(*out.end);
    return out;
  }

  // The NIC of `node` whose kernel interface is `netdev`: the inventory's netdev, else sysfs'.
  std::string NicOfNetdev(const model::Node& n, std::string_view netdev) const {
    for (const model::NicSpec& s : c_.ProfileOf(n).nics) {
      if (s.netdev == netdev || s.name == netdev) return s.name;
    }
    auto it = by_netdev_.find(n.name + "/" + std::string(netdev));
    if (it != by_netdev_.end() && NicOf(c_, n, it->second) != nullptr) return it->second;
    return "";
  }

 private:
  // "gpu001 mlx5_0": a host and a device, not a switch's description.
  bool LooksLikeHost(std::string_view desc) const {
    std::size_t sp = desc.find(' ');
    if (sp == std::string_view::npos) return false;
    std::string_view host = desc.substr(0, sp);
    return c_.FindNode(host) != nullptr ||
           (host.find('.') != std::string_view::npos && c_.FindNode(host.substr(0, host.find('.'))) != nullptr);
  }

  const model::Cluster& c_;
  model::SwitchNames names_;
  std::unordered_map<std::string, std::pair<std::string, std::string>> by_guid_;  // node GUID -> node, NIC
  std::unordered_map<std::string, std::string> by_netdev_;                       // "node/netdev" -> NIC
  std::unordered_set<std::string> nodes_with_guids_;  // nodes whose HCA GUIDs the facts give
};

// "GPU 3": the GPU nearest the NIC on the node's PCI tree, when one is nearer than the rest.
std::string GpuOf(const NodeFacts& f, std::string_view nic) {
  if (!f.pci_tree) return "";
  const model::PciTree& t = *f.pci_tree;
  const model::PciEndpoint* n = nullptr;
  for (const model::PciEndpoint& e : t.endpoints) {
    if (e.kind == model::PciEndpointKind::kNic &&
        std::find(e.rdma_devices.begin(), e.rdma_devices.end(), nic) != e.rdma_devices.end()) {
      n = &e;
    }
  }
  if (n == nullptr) return "";
  std::vector<std::string> gpus;  // bus order: nvidia-smi's index order unless the query says otherwise
  for (const model::PciEndpoint& e : t.endpoints) {
    if (e.kind == model::PciEndpointKind::kGpu) gpus.push_back(e.bdf);
  }
  int best = 99, count = 0;
  std::string best_bdf;
  for (const std::string& g : gpus) {
    std::optional<std::string> d = PciDistance(t, g, n->bdf);
    if (!d) continue;
    int r = DistanceRank(*d);
    if (r < best) {
      best = r;
      best_bdf = g;
      count = 1;
    } else if (r == best) {
      ++count;
    }
  }
  if (best > 1 || count != 1) return "";  // only a GPU behind the NIC's own switch
  for (const Gpu& g : f.gpus) {
    if (g.pci_bus_id == best_bdf) return fmt::format("GPU {}", g.index);
  }
  auto it = std::find(gpus.begin(), gpus.end(), best_bdf);
  return fmt::format("GPU {}", it - gpus.begin());
}

// The design's near end: a NIC, else the switch of the lower tier (a leaf's uplink).
std::pair<Endpoint, Endpoint> Oriented(const model::Cluster& c, const model::Link& l) {
  if (l.a.kind == Endpoint::Kind::kNic) return {l.a, l.b};
  if (l.b.kind == Endpoint::Kind::kNic) return {l.b, l.a};
  const model::Switch* a = c.FindSwitch(l.a.device);
  const model::Switch* b = c.FindSwitch(l.b.device);
  if (a != nullptr && b != nullptr && static_cast<int>(b->tier) < static_cast<int>(a->tier)) return {l.b, l.a};
  return {l.a, l.b};
}

std::string NetworkOf(const model::Cluster& c, const Endpoint& near, const Endpoint& far) {
  for (const Endpoint* e : {&far, &near}) {
    if (e->kind == Endpoint::Kind::kSwitchPort) {
      if (const model::Switch* sw = c.FindSwitch(e->device)) return sw->network;
    }
  }
  return "";
}

}  // namespace

CablingResult CheckCabling(const model::Cluster& c, const std::vector<model::Link>& design, const CablingInputs& in) {
  CablingResult out;
  Resolver resolve(c, in);
  std::unordered_map<std::string, Seen> seen;  // measured ports by their own end
  std::unordered_map<std::string, const NodeFacts*> facts_of;
  for (const NodeFacts& f : in.nodes) {
    if (!facts_of.emplace(f.node, &f).second) out.notes.push_back(fmt::format("{}: facts given twice; the first count", f.node));
  }
  std::unordered_map<std::string, std::string> unreached(in.unreached.begin(), in.unreached.end());

  // Records a measured port; a port listed twice with different peers is a conflict nobody can
  // judge (a cloned description, a changing fabric), never first-wins.
  auto record = [&](const std::string& key, Seen s, const std::string& where) {
    auto [it, fresh] = seen.emplace(key, std::move(s));
    if (fresh) return;
    const std::string had = it->second.far ? it->second.far->shown : "no peer";
    const std::string now = s.far ? s.far->shown : "no peer";
    if (had != now && !it->second.conflict) {
      it->second.conflict = true;
      it->second.conflict_with = fmt::format("{} at {} but {} at {}", had, it->second.source, now, where);
    }
    out.notes.push_back(fmt::format("{}: {} is listed twice{}", where, key,
                                    had == now ? "; the same peer both times" : ", with different peers"));
  };

  // The subnet's view, from the first source; the others are cross-checked against it.
  const IbSubnet* subnet = in.subnets.empty() ? nullptr : &in.subnets.front();
  std::unordered_set<std::string> ib_devices_seen;  // devices (node or switch) the subnet lists
  std::unordered_set<std::string> ib_networks_seen;  // networks of the switches it lists
  for (const IbSubnet& s : in.subnets) {
    for (const std::string& w : s.warnings) out.notes.push_back(w);
  }
  for (std::size_t i = 1; i < in.subnets.size(); ++i) {
    for (std::string& d : CrossCheckSubnets(in.subnets.front(), in.subnets[i])) out.notes.push_back(std::move(d));
  }
  if (subnet != nullptr) {
    for (const IbPortSeen& p : subnet->ports) {
      Far own = resolve.Ib(p.node, p.port, p.port_guid);
      if (!own.end) continue;
      ib_devices_seen.insert(own.end->device);
      if (own.end->kind == Endpoint::Kind::kSwitchPort) {
        if (const model::Switch* sw = c.FindSwitch(own.end->device)) ib_networks_seen.insert(sw->network);
      }
      Seen s;
      s.own = *own.end;
      s.ib = true;
      s.width = p.width;
      s.gbps = p.rate_gbps;
      s.could_be = p.could_be;
      s.source = fmt::format("{}:{}", subnet->source, p.line);
      if (p.peer) {
        s.far = resolve.Ib(*p.peer, p.peer_port, p.peer_port_guid);
      } else {
        s.state = p.state.empty() ? p.phys_state : p.phys_state.empty() ? p.state : p.state + "/" + p.phys_state;
      }
      const std::string where = s.source;
      record(Key(*own.end), std::move(s), where);
    }
  }
  // LLDP, from each node: its own NICs only (a management port's neighbour is not ours).
  for (const auto& [name, f] : facts_of) {
    if (!f->lldp) continue;
    const model::Node* n = c.FindNode(name);
    if (n == nullptr) continue;
    for (const std::string& w : f->lldp->warnings) out.notes.push_back(w);
    for (const LldpNeighbor& nb : f->lldp->neighbors) {
      std::string nic = resolve.NicOfNetdev(*n, nb.local_if);
      if (nic.empty()) continue;
      Seen s;
      s.own = NicEnd(name, nic);
      s.far = resolve.Lldp(nb);
      s.source = nb.where.empty() ? f->lldp->source : nb.where;
      if (auto sp = f->net_speed_mbps.find(nb.local_if); sp != f->net_speed_mbps.end()) {
        s.gbps = static_cast<double>(sp->second) / 1000.0;
      }
      const std::string where = s.source;
      const std::string key = Key(s.own);  // before s is moved into the call
      record(key, std::move(s), where);
    }
  }

  // Designed ends, for UNEXPECTED.
  std::unordered_set<std::string> designed_ends;
  designed_ends.reserve(design.size() * 2);
  for (const model::Link& l : design) {
    designed_ends.insert(Key(l.a));
    designed_ends.insert(Key(l.b));
  }
  // Measured cables a designed cable's verdict already speaks of.
  std::set<std::pair<std::string, std::string>> judged;

  // Design leaves of each (network, rail), for the rail rule and for naming a wrong leaf's rail.
  std::map<std::pair<std::string, int>, std::set<std::string>> rail_leaves;
  auto rail_of = [&](const Endpoint& near, std::string* network) -> std::optional<int> {
    if (near.kind != Endpoint::Kind::kNic) return std::nullopt;
    const model::Node* n = c.FindNode(near.device);
    const model::NicSpec* s = n == nullptr ? nullptr : NicOf(c, *n, near.nic);
    if (s == nullptr || !s->rail) return std::nullopt;
    const model::Network* net = c.FindNetwork(s->network);
    if (net == nullptr || net->topology != model::Topology::kRailOptimized) return std::nullopt;
    *network = net->name;
    return s->rail;
  };
  for (const model::Link& l : design) {
    auto [near, far] = Oriented(c, l);
    std::string net;
    if (std::optional<int> r = rail_of(near, &net); r && far.kind == Endpoint::Kind::kSwitchPort) {
      rail_leaves[{net, *r}].insert(far.device);
    }
  }
  std::vector<std::string> rail_net(design.size());  // the NIC's rail-optimized network, per cable

  out.cables.reserve(design.size());
  for (const model::Link& l : design) {
    auto [near, far] = Oriented(c, l);
    CableCheck k;
    k.near = Key(near);
    k.want = Key(far);
    k.where = l.where;
    if (k.where.file.empty()) k.where.file = c.source_file;  // the loader keeps the file once, on the model
    k.network = NetworkOf(c, near, far);
    k.want_gbps = Gbps(l.rate_bytes_per_s);
    std::string rnet;
    k.rail = rail_of(near, &rnet);
    rail_net[out.cables.size()] = rnet;
    if (near.kind == Endpoint::Kind::kNic) {
      if (auto it = facts_of.find(near.device); it != facts_of.end()) k.gpu = GpuOf(*it->second, near.nic);
    }
    const model::Network* net = c.FindNetwork(k.network);
    const bool ib = net != nullptr && net->kind == model::NetKind::kInfiniband;

    const Seen* m = nullptr;
    if (auto it = seen.find(k.near); it != seen.end() && it->second.ib == ib) m = &it->second;
    // The far side's own line: a node the subnet does not list (its HCA is down), a leaf's
    // uplink seen only from the spine.
    const Seen* from_far = nullptr;
    if (auto it = seen.find(k.want); it != seen.end() && it->second.ib == ib) from_far = &it->second;
    if (from_far != nullptr && from_far->far) judged.insert(PairKey(k.want, from_far->far->shown));
    // Seen only from the far end, and that end names this one: the cable is there, judged from there.
    Seen mirror;
    if (m == nullptr && from_far != nullptr && !from_far->conflict && from_far->far && from_far->far->end &&
        SameEnd(*from_far->far->end, near)) {
      mirror = *from_far;
      mirror.own = near;
      mirror.far = Far{far, Key(far), false};
      m = &mirror;
    }
    if (m != nullptr && m->far) judged.insert(PairKey(k.near, m->far->shown));

    if (m != nullptr && m->conflict) {
      k.state = CableState::kUnmeasured;
      k.source = m->source;
      k.detail = fmt::format("{} is listed twice with different peers ({}): find which device carries its name",
                             k.near, m->conflict_with);
      out.cables.push_back(std::move(k));
      continue;
    }
    if (m == nullptr && !ib) {
      // Ethernet: LLDP is read on nodes only.
      k.state = CableState::kUnmeasured;
      auto f = facts_of.find(near.device);
      if (near.kind != Endpoint::Kind::kNic) {
        k.detail = "switch-to-switch cables of an Ethernet fabric are not measured: gpuforge reads LLDP on nodes, "
                   "not on switches";
      } else if (auto u = unreached.find(near.device); u != unreached.end()) {
        k.detail = fmt::format("node not reached: {}", u->second);
      } else if (f == facts_of.end()) {
        k.detail = "node not measured";
      } else if (!f->second->lldp) {
        const Section* sec = f->second->FindSection("lldp");
        k.detail = sec == nullptr || sec->outcome == Outcome::kAbsent
                       ? "no lldpctl on the node: install and start lldpd (Debian: apt install lldpd)"
                       : fmt::format("lldpctl failed: {} (it reads lldpd's socket: run as root or a member of _lldpd)",
                                     sec->first_line.empty() ? "no output" : sec->first_line);
      } else {
        k.state = CableState::kMissing;
        k.detail = "no LLDP neighbour on this NIC: cable unplugged or dark, the interface down, or LLDP off on the "
                   "switch port";
        k.source = f->second->lldp->source;
      }
      out.cables.push_back(std::move(k));
      continue;
    }
    if (m == nullptr && ib) {
      if (subnet == nullptr) {
        k.state = CableState::kUnmeasured;
        k.detail = "no view of the InfiniBand subnet: give --subnet-from NODE (a node with infiniband-diags), "
                   "or --iblinkinfo FILE / --ibnetdiscover FILE";
      } else if (!ib_networks_seen.count(k.network)) {
        // The subnet tools see the subnet of the HCA port they run on; another IB network is
        // another subnet.
        k.state = CableState::kUnmeasured;
        k.detail = fmt::format("{} lists no switch of network {}: it is another subnet; run the subnet tools on "
                               "one of its nodes",
                               subnet->source, k.network);
      } else if (from_far != nullptr && from_far->far &&
                 (!from_far->far->end || !SameEnd(*from_far->far->end, near))) {
        k.state = CableState::kMissing;  // the designed port holds another cable; the NIC's own is nowhere
        k.got = from_far->far->shown;
        k.detail = fmt::format("{} is not on the subnet, and {} holds {}", k.near, k.want, from_far->far->shown);
        k.source = from_far->source;
      } else {
        k.state = CableState::kMissing;
        k.source = from_far != nullptr ? from_far->source : subnet->source;
        if (from_far != nullptr && !from_far->far) {
          k.detail = fmt::format("{} is {} and {} is not on the subnet: reseat or replace the cable, check the "
                                 "NIC's port with ibstat",
                                 k.want, from_far->state.empty() ? "down" : from_far->state, k.near);
        } else if (!ib_devices_seen.count(near.device)) {
          k.detail = fmt::format("{} is not on the subnet at all: check its HCAs (ibstat), the subnet manager, and "
                                 "the cable",
                                 near.device);
        } else {
          k.detail = fmt::format("{} is not listed on the subnet: check the port (ibstat) and the cable", k.near);
        }
      }
      out.cables.push_back(std::move(k));
      continue;
    }
    k.source = m->source;
    k.got_gbps = m->gbps;
    k.got_width = m->width;
    if (!m->far) {
      k.state = CableState::kMissing;
      k.detail = ib ? fmt::format("port {} with no peer: cable unplugged or faulty, or the far port disabled",
                                  m->state.empty() ? "down" : m->state)
                    : "no LLDP neighbour on this NIC";
    } else if (m->far->port_unknown) {
      k.state = CableState::kPortUnknown;
      k.got = m->far->shown;
      k.detail = "the designed switch, but its port name does not say which port: set switches[].port_pattern, or "
                 "have the switch send the interface name as LLDP port id";
    } else if (!m->far->end || !SameEnd(*m->far->end, far)) {
      k.state = CableState::kMiswired;
      k.got = m->far->shown;
      k.detail = fmt::format("move the cable at {} from {} to {}", k.near, k.got, k.want);
      if (k.rail && m->far->end && m->far->end->kind == Endpoint::Kind::kSwitchPort) {
        std::vector<int> other;
        for (const auto& [rk, leaves] : rail_leaves) {
          if (rk.first == rnet && rk.second != *k.rail && leaves.count(m->far->end->device)) other.push_back(rk.second);
        }
        if (!other.empty()) {
          k.detail += fmt::format(" (it is on a rail-{} leaf; this NIC is rail {})", fmt::join(other, "/"), *k.rail);
        }
      }
    } else {
      k.got = m->far->shown;
      k.state = CableState::kOk;
      if (ib) {
        IbLinkVerdict v = JudgeIbLink(m->width, m->gbps, *k.want_gbps);
        if (v != IbLinkVerdict::kOk) {
          k.state = CableState::kDegraded;
          k.detail = fmt::format("trained at {}{} Gb/s, designed {:g} Gb/s{}: reseat or replace the cable or transceiver",
                                 m->width ? fmt::format("{}X ", *m->width) : "", m->gbps ? fmt::format("{:g}", *m->gbps) : "?",
                                 *k.want_gbps, m->could_be.empty() ? "" : fmt::format(" (iblinkinfo: {})", m->could_be));
        } else if (!m->could_be.empty()) {
          k.detail = fmt::format("meets the design; iblinkinfo says it could run faster: {}", m->could_be);
        }
      } else if (m->gbps && *k.want_gbps > 0 && *m->gbps + 0.5 < *k.want_gbps) {
        k.state = CableState::kDegraded;
        k.detail = fmt::format("link at {:g} Gb/s, designed {:g} Gb/s: check the cable, the optic and the port's speed "
                               "setting",
                               *m->gbps, *k.want_gbps);
      }
    }
    out.cables.push_back(std::move(k));
  }

  // Swaps: two miswired cables, each on the other's designed far end (pairs only: a cycle of
  // three stays MISWIRED, each with its own move).
  std::unordered_map<std::string, std::size_t> by_want;  // far end -> the designed cable that belongs there
  for (std::size_t i = 0; i < out.cables.size(); ++i) by_want[out.cables[i].want] = i;
  for (std::size_t i = 0; i < out.cables.size(); ++i) {
    CableCheck& a = out.cables[i];
    if (a.state != CableState::kMiswired) continue;
    auto j = by_want.find(a.got);
    if (j == by_want.end() || j->second == i) continue;
    CableCheck& b = out.cables[j->second];
    if (b.state != CableState::kMiswired || b.got != a.want) continue;
    for (CableCheck* x : {&a, &b}) x->state = CableState::kSwapped;
    a.swap_with = b.near;
    b.swap_with = a.near;
    a.detail = b.detail = fmt::format("swap the cables in {} and {} ({} and {} are on each other's port)", a.want,
                                      b.want, a.near, b.near);
  }

  // UNEXPECTED: a measured cable no verdict above speaks of, between two inventory devices, or
  // in a port the design uses (whatever is at its other end). A cable from an undesigned port
  // to a device the inventory does not know (a storage server on the same fabric) is not ours.
  std::set<std::pair<std::string, std::string>> extra;
  const std::size_t designed_count = out.cables.size();
  for (const auto& [key, s] : seen) {
    if (!s.far || s.conflict) continue;
    if (!s.far->end && !designed_ends.count(key)) continue;
    std::pair<std::string, std::string> p = PairKey(key, s.far->shown);
    if (judged.count(p) || !extra.insert(p).second) continue;
    CableCheck k;
    k.state = CableState::kUnexpected;
    k.near = key;
    k.got = s.far->shown;
    if (s.far->end) {
      auto [n, f] = Oriented(c, model::Link{s.own, *s.far->end, 0, {}});
      k.near = Key(n);
      k.got = Key(f);
      k.network = NetworkOf(c, n, f);
    } else {
      k.network = NetworkOf(c, s.own, s.own);
    }
    k.source = s.source;
    k.got_gbps = s.gbps;
    k.got_width = s.width;
    k.detail = designed_ends.count(key) && !designed_ends.count(s.far->shown)
                   ? fmt::format("{} is a designed port, and it holds a cable the design does not have: remove it",
                                 key)
                   : "a cable the design does not have: add it to the inventory's links, or remove it";
    out.cables.push_back(std::move(k));
  }
  std::sort(out.cables.begin() + static_cast<std::ptrdiff_t>(designed_count), out.cables.end(),
            [](const CableCheck& a, const CableCheck& b) { return std::tie(a.near, a.got) < std::tie(b.near, b.got); });

  // The rail rule: NIC k of every node on a leaf of rail k.
  std::map<std::pair<std::string, int>, RailReport> rails;
  for (const auto& [key, leaves] : rail_leaves) {
    RailReport& r = rails[key];
    r.network = key.first;
    r.rail = key.second;
    r.leaves.assign(leaves.begin(), leaves.end());
  }
  for (std::size_t i = 0; i < designed_count; ++i) {
    const CableCheck& k = out.cables[i];
    if (!k.rail) continue;
    auto it = rails.find({rail_net[i], *k.rail});
    if (it == rails.end()) continue;
    auto sit = seen.find(k.near);
    if (sit == seen.end() || sit->second.conflict || !sit->second.far || !sit->second.far->end ||
        sit->second.far->end->kind != Endpoint::Kind::kSwitchPort) {
      continue;
    }
    ++it->second.checked;
    const std::string& leaf = sit->second.far->end->device;
    if (std::find(it->second.leaves.begin(), it->second.leaves.end(), leaf) == it->second.leaves.end()) {
      it->second.exceptions.emplace_back(k.near, leaf);
    }
  }
  for (auto& [key, r] : rails) out.rails.push_back(std::move(r));

  for (const CableCheck& k : out.cables) ++out.counts[k.state];
  return out;
}

}  // namespace gpuforge::facts
