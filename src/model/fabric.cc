#include "gpuforge/model/fabric.h"

#include <algorithm>
#include <map>
#include <set>

namespace gpuforge::model {

namespace {

int TierRank(SwitchTier t) {
  switch (t) {
    case SwitchTier::kLeaf: return 0;
    case SwitchTier::kSpine: return 1;
    case SwitchTier::kCore: return 2;
  }
  return 0;
}

void AddUnique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

const SwitchLoad* Fabric::Find(std::string_view name) const {
  for (const SwitchLoad& s : switches) {
    if (s.sw->name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> Fabric::SwitchesOf(const Cluster& c, std::string_view node,
                                            std::string_view network) const {
  std::vector<std::string> out;
  const Node* n = c.FindNode(node);
  if (n == nullptr) return out;
  const Profile& p = c.ProfileOf(*n);
  for (const NicAttachment& a : attachments) {
    if (a.node != node) continue;
    if (!network.empty()) {
      auto nic = std::find_if(p.nics.begin(), p.nics.end(), [&](const NicSpec& s) { return s.name == a.nic; });
      if (nic == p.nics.end() || nic->network != network) continue;
    }
    AddUnique(out, a.sw);
  }
  return out;
}

Fabric AnalyzeFabric(const Cluster& c) {
  Fabric f;
  std::map<std::string, std::size_t> index;
  for (const Switch& s : c.switches) {
    index[s.name] = f.switches.size();
    SwitchLoad load;
    load.sw = &s;
    f.switches.push_back(std::move(load));
  }
  std::set<std::pair<std::string, std::string>> attached;
  for (const Link& l : c.links) {
    const Endpoint* sw_end[2] = {nullptr, nullptr};
    int nsw = 0;
    for (const Endpoint* e : {&l.a, &l.b}) {
      if (e->kind == Endpoint::Kind::kSwitchPort && index.count(e->device)) sw_end[nsw++] = e;
    }
    if (nsw == 1) {
      // A node NIC cabled to a switch port: a downlink of that switch.
      const Endpoint& nic = l.a.kind == Endpoint::Kind::kNic ? l.a : l.b;
      if (nic.kind != Endpoint::Kind::kNic) continue;
      SwitchLoad& s = f.switches[index[sw_end[0]->device]];
      s.ports_used += 1;
      s.down_bytes_per_s += l.rate_bytes_per_s;
      AddUnique(s.nodes, nic.device);
      f.attachments.push_back({nic.device, nic.nic, sw_end[0]->device, sw_end[0]->port, l.rate_bytes_per_s});
      attached.insert({nic.device, nic.nic});
    } else if (nsw == 2) {
      SwitchLoad& a = f.switches[index[sw_end[0]->device]];
      SwitchLoad& b = f.switches[index[sw_end[1]->device]];
      a.ports_used += 1;
      b.ports_used += 1;
      int ra = TierRank(a.sw->tier), rb = TierRank(b.sw->tier);
      if (ra < rb) {
        a.up_bytes_per_s += l.rate_bytes_per_s;
        b.down_bytes_per_s += l.rate_bytes_per_s;
        AddUnique(a.upper_switches, b.sw->name);
        AddUnique(b.lower_switches, a.sw->name);
      } else if (rb < ra) {
        b.up_bytes_per_s += l.rate_bytes_per_s;
        a.down_bytes_per_s += l.rate_bytes_per_s;
        AddUnique(b.upper_switches, a.sw->name);
        AddUnique(a.lower_switches, b.sw->name);
      }
      // Links between switches of one tier (MLAG, torus) carry no up/down bandwidth.
    }
  }
  for (SwitchLoad& s : f.switches) {
    if (s.up_bytes_per_s > 0 && s.down_bytes_per_s > 0) {
      s.oversubscription = s.down_bytes_per_s / s.up_bytes_per_s;
    }
  }
  std::set<std::string> switched_networks;
  for (const Switch& s : c.switches) switched_networks.insert(s.network);
  for (const Node& n : c.nodes) {
    for (const NicSpec& nic : c.ProfileOf(n).nics) {
      if (nic.network.empty() || !switched_networks.count(nic.network)) continue;
      if (!attached.count({n.name, nic.name})) f.unattached_nics.push_back({n.name, nic.name});
    }
  }
  return f;
}

}  // namespace gpuforge::model
