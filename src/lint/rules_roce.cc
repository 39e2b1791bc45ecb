// roce.*: whether the inventory describes RoCE ports that render/roce.cc can configure, and
// whether NCCL's view of them (NCCL_IB_TC, NCCL_IB_GID_INDEX) matches the network's QoS.

#include <fmt/format.h>

#include <map>
#include <set>

#include "gpuforge/model/roce.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

// Linux include/uapi/linux/if.h: IFNAMSIZ 16, so an interface name holds at most 15 bytes.
constexpr std::size_t kMaxIfName = 15;
// ConnectX congestion notification packets leave with DSCP 48 on priority 6 by default
// (mlx5 roce_np cnp_dscp / cnp_802p_prio).
constexpr int kCnpDscp = 48;
constexpr int kCnpPriority = 6;

// One finding per (profile, NIC), naming its GPU nodes, so a 1000-node cluster gets one line.
void Ports(const model::Cluster& c, RuleContext& ctx) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> no_netdev, long_name, no_address;
  std::map<std::pair<std::string, std::string>, SourcePos> where;
  for (const model::Node* n : GpuNodes(c)) {
    const std::string& profile = c.ProfileOf(*n).name;
    for (const model::RocePort& p : model::RocePorts(c, *n)) {
      auto key = std::pair{profile, p.nic->name};
      where.emplace(key, p.nic->where);
      if (p.nic->netdev.empty()) {
        no_netdev[key].push_back(n->name);
      } else if (p.nic->netdev.size() > kMaxIfName) {
        long_name[key].push_back(n->name);
      } else if (!p.address) {
        no_address[key].push_back(n->name);
      }
    }
  }
  for (const auto& [key, nodes] : no_netdev) {
    ctx.Report(fmt::format("RoCE NIC {} of profile '{}' has no 'netdev' ({}): its MTU, address and QoS cannot be set, "
                           "so gpuforge leaves the port alone",
                           key.second, key.first, NodeList(nodes)),
               nodes, where[key]);
  }
  for (const auto& [key, nodes] : long_name) {
    ctx.Report(fmt::format("RoCE NIC {} of profile '{}' has netdev longer than {} characters; Linux interface names "
                           "are at most {} (IFNAMSIZ), so no such interface can exist",
                           key.second, key.first, kMaxIfName, kMaxIfName),
               nodes, where[key]);
  }
  for (const auto& [key, nodes] : no_address) {
    ctx.Report(Severity::kWarning,
               fmt::format("RoCE NIC {} of profile '{}' has no address on {} (nodes[].port_addresses): RoCE v2 runs "
                           "over IP, and without an IPv4 address the port has no IPv4 GID for NCCL to pick",
                           key.second, key.first, NodeList(nodes)),
               nodes, where[key]);
  }
}

// The RoCE settings in use on GPU nodes, one entry per distinct network.
std::map<std::string, model::RoceSettings> SettingsInUse(const model::Cluster& c) {
  std::map<std::string, model::RoceSettings> out;
  for (const model::Node* n : GpuNodes(c)) {
    for (const model::RocePort& p : model::RocePorts(c, *n)) out.emplace(p.network ? p.network->name : "", p.settings);
  }
  return out;
}

void Nccl(const model::Cluster& c, RuleContext& ctx) {
  std::map<std::string, model::RoceSettings> used = SettingsInUse(c);
  if (used.empty()) return;
  const SourcePos& where = c.software.nccl_where;
  if (std::optional<std::string> tc = NcclEnv(c.software, "NCCL_IB_TC")) {
    for (const auto& [net, s] : used) {
      std::string want = std::to_string(model::TrafficClassOf(s.dscp));
      if (*tc != want) {
        ctx.Report(fmt::format("NCCL_IB_TC={} but network {} marks RoCE with DSCP {}, which is traffic class {} "
                               "(DSCP << 2); the switches would put NCCL's traffic in another class than the PFC "
                               "priority",
                               *tc, net.empty() ? "(none)" : net, s.dscp, want),
                   {}, where);
      }
    }
  }
  if (std::optional<std::string> gid = NcclEnv(c.software, "NCCL_IB_GID_INDEX")) {
    for (const auto& [net, s] : used) {
      if (s.gid_index && std::to_string(*s.gid_index) == *gid) continue;
      ctx.Report(Severity::kWarning,
                 fmt::format("NCCL_IB_GID_INDEX={} is fixed in software.nccl.env{}; NCCL 2.21 and later pick the RoCE "
                             "v2 GID of the port's IPv4 address themselves, while a fixed index exists only once the "
                             "netdev has an IPv4 address and moves when IPv6 addresses appear. Remove it, or pin it "
                             "deliberately with networks.{}.roce.gid_index",
                             *gid,
                             s.gid_index ? fmt::format(", but network {} pins {}", net, *s.gid_index) : std::string(),
                             net.empty() ? "NAME" : net),
                 {}, where);
      break;
    }
  }
}

void Qos(const model::Cluster& c, RuleContext& ctx) {
  for (const model::Network& net : c.networks) {
    if (!net.roce) continue;
    const model::RoceSettings& s = *net.roce;
    if (s.pfc_priority == kCnpPriority) {
      ctx.Report(fmt::format("network {} puts PFC on priority {}, the priority ConnectX NICs send congestion "
                             "notifications (CNPs) on; pausing it stalls the very packets that slow senders down",
                             net.name, s.pfc_priority),
                 {}, s.where);
    }
    if (s.dscp == kCnpDscp) {
      ctx.Report(fmt::format("network {} marks RoCE data with DSCP {}, the DSCP ConnectX NICs give congestion "
                             "notifications; switches cannot then queue CNPs apart from data",
                             net.name, s.dscp),
                 {}, s.where);
    }
    if (!s.ecn) {
      ctx.Report(Severity::kInfo,
                 fmt::format("network {} turns ECN off: DCQCN cannot slow senders, so congestion shows up as PFC "
                             "pauses that spread to other ports (head-of-line blocking)",
                             net.name),
                 {}, s.where);
    }
  }
}

void PortsRule(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) { Ports(c, ctx); }
void NcclRule(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) { Nccl(c, ctx); }
void QosRule(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) { Qos(c, ctx); }

}  // namespace

void AddRoceRules(std::vector<Rule>& rules) {
  rules.push_back({"roce.ports",
                   Severity::kError,
                   "RoCE ports of GPU nodes have a netdev of at most 15 characters (error) and an address "
                   "(warning)",
                   "004_910c09f65559b553.txt, The Networking Architecture That Actually Works (\"400 Gbps RoCE v2 with proper PFC configuration\"); issue #13; Linux include/uapi/linux/if.h (IFNAMSIZ)",
                   {},
                   &PortsRule});
  rules.push_back({"roce.nccl",
                   Severity::kError,
                   "NCCL_IB_TC equals the RoCE networks' DSCP << 2 (error); NCCL_IB_GID_INDEX fixed without "
                   "networks.NAME.roce.gid_index (warning)",
                   "004_910c09f65559b553.txt, The Networking Architecture That Actually Works (\"400 Gbps RoCE v2 with proper PFC configuration\"); NCCL env docs (NCCL_IB_TC, NCCL_IB_GID_INDEX); NCCL src/transport/net_ib.cc ncclIbGetGidIndex",
                   {},
                   &NcclRule});
  rules.push_back({"roce.qos",
                   Severity::kWarning,
                   "networks.NAME.roce keeps PFC off priority 6 and data off DSCP 48 (ConnectX CNP defaults); ECN "
                   "off (info)",
                   "004_910c09f65559b553.txt, The Networking Architecture That Actually Works (\"400 Gbps RoCE v2 with proper PFC configuration\"); NVIDIA ConnectX DCQCN defaults (roce_np cnp_dscp 48, cnp_802p_prio 6)",
                   {},
                   &QosRule});
}

}  // namespace gpuforge::lint
