// RoCE host configuration, per node with RoCE ports (issue #13, part 3): MTU, address and
// per-port policy routing, DSCP trust + PFC + ECN, the ARP and reverse-path sysctls that make
// several ports on one subnet answer for themselves, and the notes with the switch contract.
//
// Form: a oneshot script run by a systemd unit, not systemd-networkd or NetworkManager files.
// The QoS half (trust DSCP, PFC, ECN) has no representation in networkd, NetworkManager or
// netplan at all, so a script is needed anyway; keeping the link half in the same script gives
// each port one owner and works the same on every OS family (netplan on Ubuntu, NetworkManager
// on RHEL, ifupdown on Debian), which is also why the notes tell people to leave these ports
// unmanaged there. The sysctls go to /etc/sysctl.d like the other OS settings (os.cc).

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "gpuforge/model/roce.h"
#include "render/families.h"
#include "render/quote.h"

namespace gpuforge::render {

namespace {

// "0,0,0,1,0,0,0,0" (mlnx_qos --pfc) and "0:off 1:off 2:off 3:on ..." (dcb pfc prio-pfc).
std::string PfcList(int prio) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += fmt::format("{}{}", i ? "," : "", i == prio ? 1 : 0);
  return out;
}
std::string PfcMap(int prio) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += fmt::format("{}{}:{}", i ? " " : "", i, i == prio ? "on" : "off");
  return out;
}

// sysctl.d(5): a key whose interface name holds a dot is written with '/' separators.
std::string ConfKey(const std::string& netdev, const std::string& knob) {
  if (netdev.find('.') != std::string::npos) return fmt::format("net/ipv4/conf/{}/{}", netdev, knob);
  return fmt::format("net.ipv4.conf.{}.{}", netdev, knob);
}

std::string Tools(bool rhel, const std::string& ofed) {
  std::string family = rhel ? "RHEL family (rhel, rocky, almalinux)" : "Debian family (debian, ubuntu)";
  std::string dcb = rhel ? "dcb from the iproute package (RHEL 9 and later)" : "dcb from iproute2 (5.11 and later: Debian 12, Ubuntu 22.04 and later)";
  bool mlnx = ofed == "mlnx-ofed" || ofed == "doca-ofed";
  return fmt::format("{}: {}; mlnx_qos from the mlnx-tools package of MLNX_OFED / DOCA-OFED{}. The script uses "
                     "mlnx_qos when present, else dcb.",
                     family, dcb, mlnx ? " (software.rdma says " + ofed + ", so it is expected here)" : " (not installed with rdma-core)");
}

// The systemd device unit of a network interface, as `systemd-escape --path
// /sys/subsystem/net/devices/NETDEV --suffix device` names it (systemd.unit(5), "String
// Escaping for Inclusion in Unit Names": '/' becomes '-', and every byte but ASCII letters,
// digits, '_' and a '.' not leading becomes \xNN).
std::string DeviceUnit(const std::string& netdev) {
  std::string out = "sys-subsystem-net-devices-";
  for (std::size_t i = 0; i < netdev.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(netdev[i]);
    if (std::isalnum(c) || c == '_' || (c == '.' && i > 0)) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out + ".device";
}

}  // namespace

void AddRoceJobs(const model::Cluster& c, const Options& o, Plan* plan) {
  const bool rhel = IsRhelFamily(c.software.os_distro);
  for (const model::Node* n : SelectedNodes(c, o)) {
    std::vector<model::RocePort> ports = model::RocePorts(c, *n);
    if (ports.empty()) continue;
    nlohmann::json script_ports = nlohmann::json::array(), sysctls = nlohmann::json::array(), notes = nlohmann::json::array();
    std::map<std::string, std::vector<std::string>> by_subnet;  // subnet -> netdevs
    std::set<std::string> networks_seen;
    nlohmann::json contract = nlohmann::json::array();
    for (const model::RocePort& port : ports) {
      const model::NicSpec& nic = *port.nic;
      if (nic.netdev.empty()) {
        plan->skipped.push_back({n->name, "/usr/local/sbin/gpuforge-roce-setup",
                                 fmt::format("RoCE NIC {} has no 'netdev' in profile '{}'; its MTU, address and QoS are "
                                             "set on the interface, so that port is left alone",
                                             nic.name, c.ProfileOf(*n).name)});
        continue;
      }
      const model::RoceSettings& s = port.settings;
      nlohmann::json p = {{"netdev", ShellQuote(nic.netdev)},
                          {"nic", nic.name},
                          {"netdev_plain", nic.netdev},
                          {"mtu", std::to_string(s.mtu)},
                          {"dscp", std::to_string(s.dscp)},
                          {"prio", std::to_string(s.pfc_priority)},
                          {"pfc_list", PfcList(s.pfc_priority)},
                          {"pfc_map", ShellQuote(PfcMap(s.pfc_priority))},
                          {"ecn", s.ecn ? "1" : "0"},
                          {"ecn_on", s.ecn},
                          {"has_address", port.address.has_value()},
                          {"network", port.network ? port.network->name : std::string("(none)")}};
      if (port.address) {
        p["address"] = ShellQuote(port.address->ToString());
        p["address_plain"] = port.address->ToString();
        p["source"] = ShellQuote(port.address->Address());
        p["subnet"] = ShellQuote(port.address->Subnet());
        p["table"] = std::to_string(port.table);
        p["pref"] = std::to_string(port.rule_pref);
        by_subnet[port.address->Subnet()].push_back(nic.netdev);
      } else {
        p["address_plain"] = "no address in the inventory (nodes[].port_addresses)";
      }
      script_ports.push_back(p);
      // Linux ip-sysctl.rst: arp_ignore 1 answers only for addresses of the receiving interface,
      // arp_announce 2 always sources ARP from the outgoing interface's own address, rp_filter 2
      // (loose) is its advice for multi-homed hosts; the kernel takes the larger of conf/all and
      // conf/IF for all three, so per-port values hold whatever conf/all says.
      for (auto [knob, value] : {std::pair{"arp_ignore", "1"}, std::pair{"arp_announce", "2"}, std::pair{"rp_filter", "2"}}) {
        sysctls.push_back({{"key", ConfKey(nic.netdev, knob)}, {"value", value}});
      }
      std::string net = port.network ? port.network->name : "";
      if (networks_seen.insert(net).second) {
        contract.push_back({{"network", net.empty() ? std::string("(RoCE ports on no network)") : net},
                            {"mtu", std::to_string(s.mtu)},
                            {"dscp", std::to_string(s.dscp)},
                            {"prio", std::to_string(s.pfc_priority)},
                            {"tc", std::to_string(model::TrafficClassOf(s.dscp))},
                            {"ecn", s.ecn},
                            {"gid", s.gid_index ? fmt::format("pinned to {} (networks.{}.roce.gid_index)", *s.gid_index, net)
                                                : std::string("left to NCCL (the RoCE v2 GID of the port's IPv4 address)")}});
      }
    }
    if (script_ports.empty()) continue;
    for (const auto& [subnet, devs] : by_subnet) {
      if (devs.size() < 2) continue;
      std::string list;
      for (const std::string& d : devs) list += (list.empty() ? "" : ", ") + d;
      notes.push_back({{"text", fmt::format("{} share {}: each answers ARP only for its own address "
                                            "(arp_ignore 1, arp_announce 2) and sends from its address through its own "
                                            "routing table, so traffic for one port does not leave through another.",
                                            list, subnet)}});
    }
    nlohmann::json ctx = {{"ports", script_ports}};
    plan->jobs.push_back({n->name, "/usr/local/sbin/gpuforge-roce-setup", "roce-setup.sh.mustache", ctx, CommentStyle::kHash,
                          "0755"});
    nlohmann::json devices = nlohmann::json::array();
    for (const nlohmann::json& p : script_ports) devices.push_back({{"unit", DeviceUnit(p["netdev_plain"].get<std::string>())}});
    // Type=oneshot may restart from systemd 244 (NEWS, v244); RHEL 8 ships 239.
    const bool old_systemd = rhel && c.software.os_version.starts_with("8");
    plan->jobs.push_back({n->name, "/etc/systemd/system/gpuforge-roce.service", "roce.service.mustache",
                          {{"devices", devices}, {"restart", !old_systemd}}, CommentStyle::kHash, "0644"});
    plan->jobs.push_back({n->name, "/etc/sysctl.d/91-gpuforge-roce.conf", "roce-sysctl.conf.mustache",
                          {{"sysctls", sysctls}}, CommentStyle::kHash, "0644"});
    plan->jobs.push_back({n->name, "/etc/gpuforge/roce-notes.txt", "roce-notes.txt.mustache",
                          {{"ports", script_ports},
                           {"contract", contract},
                           {"notes", notes},
                           {"tools", Tools(rhel, c.software.ofed_kind)},
                           {"nm", rhel}},
                          CommentStyle::kHash, "0644"});
  }
}

}  // namespace gpuforge::render
