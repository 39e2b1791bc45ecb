#pragma once

// The RoCE ports of a node, resolved once from the model: which NICs carry RoCE, on which
// interface, with which address and which network settings, and the routing table each gets.
// Render (the host files and nccl.conf), lint and plan read this one derivation, so they
// cannot disagree about a port.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

// An IPv4 interface address with its prefix length: "198.18.8.1/24".
struct Ipv4Prefix {
  std::uint32_t address = 0;  // host byte order
  int length = 32;
  std::string Address() const;  // "198.18.8.1"
  std::string Subnet() const;   // "198.18.8.0/24"
  std::string ToString() const;  // "198.18.8.1/24"
};
// Dotted quad, '/', 1..32; nothing else (no leading zeros, no spaces). nullopt otherwise.
std::optional<Ipv4Prefix> ParseIpv4Prefix(std::string_view s);

struct RocePort {
  const NicSpec* nic = nullptr;
  const Network* network = nullptr;  // nullptr: a RoCE NIC on no network that has an address
  RoceSettings settings;             // the network's roce block, else the defaults
  std::optional<Ipv4Prefix> address;  // nodes[].port_addresses
  int table = 0;      // policy routing table of this port (ip rule / ip route ... table N)
  int rule_pref = 0;  // priority of its "from ADDRESS" rule
};

// Policy routing tables and rule priorities gpuforge owns: table kRoceTableBase + i and rule
// kRoceRulePrefBase + i for the i-th RoCE port of a node (below the main table's 32766).
inline constexpr int kRoceTableBase = 100;
inline constexpr int kRoceRulePrefBase = 1000;

// The node's RoCE ports in NIC order: NICs of kind roce on a network of kind roce, or with a
// port address. Spare ports (no network, no address) are left alone.
std::vector<RocePort> RocePorts(const Cluster& c, const Node& n);

// NCCL_IB_TC for a DSCP: the IP traffic-class byte holds DSCP in its upper six bits and ECN in
// the lower two, so TC = DSCP << 2 (DSCP 26 -> 104).
inline int TrafficClassOf(int dscp) { return dscp << 2; }

}  // namespace gpuforge::model
