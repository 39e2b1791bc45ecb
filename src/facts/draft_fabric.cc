// `init`'s InfiniBand fabric (#33): the switches and cables one subnet view lists, as inventory
// entries. The parsers are #31's (facts/fabric.h); this file decides what the draft may claim.
// A subnet tool's output is hostile like any node's: a name the inventory would refuse is
// replaced, a port listed twice with different peers is written for neither, and whatever is
// not written is a note naming the line it came from.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <utility>

#include "gpuforge/base/names.h"
#include "gpuforge/base/text.h"
#include "gpuforge/facts/draft.h"

namespace gpuforge::facts {
namespace {

// An InfiniBand port number is 8 bits, 0 (the management port) and 255 reserved: the loader's
// bound for a switch on an InfiniBand network (docs/inventory.md#switches).
constexpr int kMaxIbSwitchPorts = 254;

bool IsGuid(std::string_view g) {
  if (g.size() != 18 || g.substr(0, 2) != "0x") return false;
  return std::all_of(g.begin() + 2, g.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// A device's identity in the view: its GUID, else its description (a tool that printed no GUID).
std::string KeyOf(const IbNodeRef& r) { return !r.guid.empty() ? r.guid : "desc:" + r.desc; }

std::string Shown(const IbNodeRef& r, const std::string& port_guid = "") {
  const std::string& guid = r.guid.empty() ? port_guid : r.guid;
  std::string who = r.desc.empty() ? guid : text::Quote(r.desc, 60);
  if (!guid.empty() && !r.desc.empty()) who += " (" + guid + ")";
  if (who.empty()) who = r.lid ? fmt::format("LID {}", r.lid) : "a device with neither GUID nor name";
  return who;
}

struct SwitchSeen {
  IbNodeRef ref;
  int max_port = 0;
  std::set<int> cabled;
  double rate = 0;
  bool to_node = false;
  std::set<std::string> peers;  // keys of switches it is cabled to
  int line = 0;                 // first line it appears on
};

struct NicRef {
  std::string node, nic;
  int port = 1;
};

// Managed NVIDIA switches describe themselves as "MF0;HOSTNAME:MODEL/U1" (the default node
// description of MLNX-OS and Onyx: ibnetdiscover's output in tests/data/fabric shows it); the
// host name is the name the operator knows the switch by.
std::pair<std::string, std::string> NameAndModel(std::string_view desc) {
  if (desc.starts_with("MF0;")) {
    std::string_view rest = desc.substr(4);
    const std::size_t colon = rest.find(':');
    if (colon != std::string_view::npos) {
      std::string_view model = rest.substr(colon + 1);
      model = model.substr(0, model.find('/'));
      return {std::string(rest.substr(0, colon)), std::string(model)};
    }
  }
  return {std::string(text::Trim(desc)), ""};
}

// "leaf2" before "leaf10", "gpu001:mlx5_2" before "gpu001:mlx5_10": digit runs by value.
bool NaturalLess(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      while (x.size() > 1 && x[0] == '0') x.remove_prefix(1);
      while (y.size() > 1 && y[0] == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

void DraftSubnet(Draft& d, std::span<const Gathered> gathered, std::span<const IbSubnet> subnets) {
  if (subnets.empty()) return;
  const IbSubnet& view = subnets.front();
  DraftFabric fab;
  fab.source = view.source;
  for (const IbSubnet& s : subnets) fab.notes.insert(fab.notes.end(), s.warnings.begin(), s.warnings.end());
  for (std::size_t i = 1; i < subnets.size(); ++i) {
    for (std::string& x : CrossCheckSubnets(view, subnets[i])) fab.notes.push_back(std::move(x));
  }

  // The drafted NICs each HCA GUID belongs to, from the nodes' own sysfs (facts).
  std::map<std::string, DraftProfile*> profile_of;
  for (const Draft::Node& n : d.nodes) {
    for (DraftProfile& p : d.profiles) {
      if (p.name == n.profile) profile_of[n.name] = &p;
    }
  }
  auto drafted_nic = [&](const std::string& node, std::string_view nic) -> const DraftNic* {
    auto it = profile_of.find(node);
    if (it == profile_of.end()) return nullptr;
    for (const DraftNic& x : it->second->nics) {
      if (x.name == nic && x.kind == "infiniband") return &x;
    }
    return nullptr;
  };
  std::map<std::string, NicRef> by_guid;
  std::set<std::string> nodes_with_guids;
  for (const Gathered& g : gathered) {
    if (!g.facts.ok()) continue;
    for (const IbDevice& dev : g.facts->ib) {
      const DraftNic* nic = drafted_nic(g.node, dev.name);
      if (nic == nullptr) continue;
      // iblinkinfo prints an HCA's port GUID, ibnetdiscover its node GUID: both map.
      if (!dev.node_guid.empty()) {
        by_guid[dev.node_guid] = {g.node, dev.name, nic->port};
        nodes_with_guids.insert(g.node);
      }
      for (const IbPort& p : dev.ports) {
        if (!p.port_guid.empty() && p.port_guid != "0x0000000000000000") by_guid[p.port_guid] = {g.node, dev.name, nic->port};
      }
    }
  }
  auto resolve_ca = [&](const IbNodeRef& r, const std::string& port_guid) -> std::optional<NicRef> {
    if (auto it = by_guid.find(port_guid); !port_guid.empty() && it != by_guid.end()) return it->second;
    if (auto it = by_guid.find(r.guid); !r.guid.empty() && it != by_guid.end()) return it->second;
    // rdma-ndd's default description "%h %d" (rdma-core rdma-ndd/rdma-ndd.c), taken only where
    // the node's own GUIDs are not known: where they are, another HCA carries its name.
    const std::size_t sp = r.desc.find(' ');
    if (sp == std::string::npos) return std::nullopt;
    std::string host = r.desc.substr(0, sp);
    if (!profile_of.count(host) && host.find('.') != std::string::npos) host = host.substr(0, host.find('.'));
    const std::string dev(text::Trim(std::string_view(r.desc).substr(sp + 1)));
    if (!r.guid.empty() && nodes_with_guids.count(host)) return std::nullopt;
    const DraftNic* nic = drafted_nic(host, dev);
    if (nic == nullptr) return std::nullopt;
    return NicRef{host, dev, nic->port};
  };

  // Every switch the view lists, and what it is cabled to.
  std::map<std::string, SwitchSeen> switches;
  auto see_switch = [&](const IbNodeRef& r, int port, int line) -> SwitchSeen& {
    SwitchSeen& s = switches[KeyOf(r)];
    if (s.line == 0) {
      s.ref = r;
      s.line = line;
    }
    s.max_port = std::max(s.max_port, port);
    return s;
  };
  struct Raw {
    std::string a, b;  // "node:nic" or a switch key with its port, as "KEY#PORT"
    std::string where;
  };
  std::vector<Raw> raw;
  std::set<std::string> unowned_noted;
  for (const IbPortSeen& p : view.ports) {
    const std::string where = fmt::format("{}:{}", view.source, p.line);
    if (p.node.is_switch) {
      SwitchSeen& s = see_switch(p.node, p.port, p.line);
      if (p.peer && p.rate_gbps && (p.state.empty() || p.state == "Active")) s.rate = std::max(s.rate, *p.rate_gbps);
    }
    if (!p.peer) continue;
    if (p.peer->is_switch) see_switch(*p.peer, p.peer_port, p.line);
    const IbNodeRef* sw = p.node.is_switch ? &p.node : p.peer->is_switch ? &*p.peer : nullptr;
    if (sw == nullptr) {
      fab.notes.push_back(fmt::format("{}: {} port {} is cabled to {} port {}, host to host; an inventory link runs to a "
                                      "switch, so it is not written",
                                      where, Shown(p.node, p.port_guid), p.port, Shown(*p.peer, p.peer_port_guid), p.peer_port));
      continue;
    }
    const IbNodeRef& other = sw == &p.node ? *p.peer : p.node;
    const int sw_port = sw == &p.node ? p.port : p.peer_port;
    const int other_port = sw == &p.node ? p.peer_port : p.port;
    const std::string other_guid = sw == &p.node ? p.peer_port_guid : p.port_guid;
    const std::string sw_end = fmt::format("{}#{}", KeyOf(*sw), sw_port);
    switches[KeyOf(*sw)].cabled.insert(sw_port);
    if (other.is_switch) {
      switches[KeyOf(*sw)].peers.insert(KeyOf(other));
      switches[KeyOf(other)].peers.insert(KeyOf(*sw));
      raw.push_back({sw_end, fmt::format("{}#{}", KeyOf(other), other_port), where});
      continue;
    }
    switches[KeyOf(*sw)].to_node = true;
    std::optional<NicRef> nic = resolve_ca(other, other_guid);
    if (!nic) {
      if (unowned_noted.insert(KeyOf(other)).second) {
        fab.notes.push_back(fmt::format("{}: {} is on the subnet but is no InfiniBand NIC of a drafted node (a storage "
                                        "or management host?); its cables are not written",
                                        where, Shown(other, other_guid)));
      }
      continue;
    }
    if (nic->port != other_port) {
      fab.notes.push_back(fmt::format("{}: {}:{} is cabled on its port {}, where the draft uses port {}; not written",
                                      where, nic->node, nic->nic, other_port, nic->port));
      continue;
    }
    raw.push_back({nic->node + ":" + nic->nic, sw_end, where});
  }

  // Names: what the switch calls itself, where the inventory accepts it and no node or other
  // switch has it; else "ibsw-" and the GUID's last six digits.
  std::set<std::string> taken;
  for (const Draft::Node& n : d.nodes) taken.insert(n.name);
  std::map<std::string, std::string> name_of;  // key -> name
  std::map<std::string, std::string> tier_of;
  std::vector<const std::pair<const std::string, SwitchSeen>*> order;
  for (const auto& kv : switches) order.push_back(&kv);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->second.line < b->second.line; });
  std::map<std::string, int> name_count;
  for (const auto* kv : order) name_count[NameAndModel(kv->second.ref.desc).first]++;
  for (const auto* kv : order) {
    const SwitchSeen& s = kv->second;
    const std::string where = fmt::format("{}:{}", view.source, s.line);
    if (s.max_port < 1 || s.max_port > kMaxIbSwitchPorts) {
      fab.notes.push_back(fmt::format("{}: switch {} lists port {}, beyond an InfiniBand switch's {}; not written", where,
                                      Shown(s.ref), s.max_port, kMaxIbSwitchPorts));
      continue;
    }
    auto [name, model] = NameAndModel(s.ref.desc);
    const bool own = !name.empty() && name_count[name] == 1 && !names::CheckHostname(name) && !names::CheckName(name) &&
                     !taken.count(name);
    if (!own) {
      const std::string tail = IsGuid(s.ref.guid) ? s.ref.guid.substr(12) : fmt::format("{}", name_of.size() + 1);
      std::string fallback = "ibsw-" + tail;
      for (int i = 2; taken.count(fallback); ++i) fallback = fmt::format("ibsw-{}-{}", tail, i);
      name = fallback;
    }
    taken.insert(name);
    name_of[kv->first] = name;
    DraftSwitch out;
    out.name = name;
    out.guid = IsGuid(s.ref.guid) ? s.ref.guid : "";
    out.desc = s.ref.desc;
    out.model = !model.empty() && !names::CheckName(model) ? model : "";
    out.ports = s.max_port;
    out.cabled = static_cast<int>(s.cabled.size());
    out.port_rate_gbps = s.rate;
    fab.switches.push_back(std::move(out));
  }
  // Tiers from what each switch is cabled to: a node, a leaf, switches only.
  for (const auto& [key, s] : switches) {
    if (s.to_node) tier_of[key] = "leaf";
  }
  for (const auto& [key, s] : switches) {
    if (tier_of.count(key)) continue;
    bool to_leaf = false;
    for (const std::string& peer : s.peers) to_leaf |= tier_of.count(peer) && tier_of[peer] == "leaf";
    tier_of[key] = to_leaf ? "spine" : "core";
  }
  for (DraftSwitch& sw : fab.switches) {
    for (const auto& [key, name] : name_of) {
      if (name == sw.name) sw.tier = tier_of[key];
    }
  }

  // The fabric's rate: what most of its drafted NICs report.
  std::map<double, int> rates;
  for (const Raw& r : raw) {
    if (r.a.find('#') != std::string::npos) continue;
    const std::size_t colon = r.a.find(':');
    if (const DraftNic* nic = drafted_nic(r.a.substr(0, colon), r.a.substr(colon + 1))) rates[nic->rate_gbps]++;
  }
  for (const auto& [rate, n] : rates) {
    if (fab.rate_gbps == 0 || n > rates[fab.rate_gbps]) fab.rate_gbps = rate;
  }
  for (DraftSwitch& sw : fab.switches) {
    if (sw.port_rate_gbps == 0) sw.port_rate_gbps = fab.rate_gbps;
  }
  if (fab.rate_gbps == 0) {
    for (const DraftSwitch& sw : fab.switches) fab.rate_gbps = std::max(fab.rate_gbps, sw.port_rate_gbps);
  }
  std::erase_if(fab.switches, [&](const DraftSwitch& sw) {
    if (sw.port_rate_gbps > 0) return false;
    fab.notes.push_back(fmt::format("switch {}: no port rate is known (no active port, no drafted NIC); not written", sw.name));
    return true;
  });
  std::set<std::string> written;
  for (const DraftSwitch& sw : fab.switches) written.insert(sw.name);

  // The cables, each end once: a cable both ends list is one cable; an end two cables claim
  // (a cloned description, a fabric that changed between lines) is written for neither.
  auto end_text = [&](const std::string& e) -> std::string {
    const std::size_t hash = e.rfind('#');
    if (hash == std::string::npos) return e;
    auto it = name_of.find(e.substr(0, hash));
    if (it == name_of.end() || !written.count(it->second)) return "";
    return it->second + ":" + e.substr(hash + 1);
  };
  std::map<std::string, std::string> peer_of;  // end -> the other end, over every listing
  std::set<std::string> conflicted;
  for (const Raw& r : raw) {
    for (const auto& [x, y] : {std::pair{r.a, r.b}, std::pair{r.b, r.a}}) {
      auto [it, fresh] = peer_of.emplace(x, y);
      if (!fresh && it->second != y && conflicted.insert(x).second) {
        fab.notes.push_back(fmt::format("{}: {} is listed with two peers ({} and {}); no cable at it is written", r.where,
                                        end_text(x).empty() ? x : end_text(x), end_text(it->second), end_text(y)));
      }
    }
  }
  std::set<std::pair<std::string, std::string>> done;
  std::vector<DraftCable> node_cables, switch_cables;
  for (const Raw& r : raw) {
    if (conflicted.count(r.a) || conflicted.count(r.b)) continue;
    const std::string a = end_text(r.a), b = end_text(r.b);
    if (a.empty() || b.empty()) continue;
    if (!done.insert(std::minmax(a, b)).second) continue;
    if (r.a.find('#') == std::string::npos) {
      node_cables.push_back({a, b, r.where});
    } else {
      switch_cables.push_back({std::min(a, b), std::max(a, b), r.where});
    }
  }
  std::map<std::string, std::size_t> node_index;
  for (std::size_t i = 0; i < d.nodes.size(); ++i) node_index[d.nodes[i].name] = i;
  std::stable_sort(node_cables.begin(), node_cables.end(), [&](const DraftCable& x, const DraftCable& y) {
    const std::string nx = x.from.substr(0, x.from.find(':')), ny = y.from.substr(0, y.from.find(':'));
    if (nx != ny) return node_index[nx] < node_index[ny];
    return NaturalLess(x.from, y.from);
  });
  std::sort(switch_cables.begin(), switch_cables.end(),
            [](const DraftCable& x, const DraftCable& y) { return NaturalLess(x.from, y.from); });
  fab.cables = std::move(node_cables);
  fab.cables.insert(fab.cables.end(), switch_cables.begin(), switch_cables.end());

  // The NICs cabled are on the fabric's network, in every profile whose nodes have them there.
  for (const DraftCable& c : fab.cables) {
    const std::size_t colon = c.from.find(':');
    auto it = profile_of.find(c.from.substr(0, colon));
    if (it == profile_of.end()) continue;
    for (DraftNic& nic : it->second->nics) {
      if (nic.name == c.from.substr(colon + 1)) nic.network = fab.network;
    }
  }
  static const std::map<std::string, int> kTierOrder{{"leaf", 0}, {"spine", 1}, {"core", 2}};
  std::stable_sort(fab.switches.begin(), fab.switches.end(), [](const DraftSwitch& x, const DraftSwitch& y) {
    if (x.tier != y.tier) return kTierOrder.at(x.tier) < kTierOrder.at(y.tier);
    return NaturalLess(x.name, y.name);
  });
  d.fabric = std::move(fab);
}

}  // namespace gpuforge::facts
