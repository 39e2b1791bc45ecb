#pragma once

// How the measured fabric's names map onto the inventory's switches and ports (#31): a subnet
// tool prints a switch's node description ("MF0;leaf1:MQM9700/U1") and GUID, LLDP a system
// name ("leaf1.pod2.example.net") and a port name ("swp12", "Ethernet44", a MAC). The rules
// are in docs/cabling.md#names.

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gpuforge/base/result.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

// A port_pattern is literal text around one placeholder: {port} (1-based), {port0} (0-based),
// either with a multiplier: {port*2}, {port0*4} (SONiC names 4-lane ports Ethernet0,
// Ethernet4, ...). "swp{port}", "Ethernet{port0*4}", "Eth1/{port}".
Status CheckPortPattern(std::string_view pattern);

// The port number `name` stands for under `pattern`; "" reads the last run of digits in the
// name ("swp12" -> 12, "Eth1/12" -> 12). nullopt when the name does not fit, or names no port
// from 1 to `ports`.
std::optional<int> PortFromName(std::string_view name, std::string_view pattern, int ports);

// Which inventory switch a measured name is. Tried in order, case-insensitively: the whole
// name, then its first DNS label ("leaf1.example.net"), then each word of it split at
// whitespace and ";:/,\"" ("MF0;leaf1:MQM9700/U1"); each against the switches' names and
// aliases. A name that two switches answer to matches neither.
class SwitchNames {
 public:
  explicit SwitchNames(const Cluster& c);
  const Switch* Find(std::string_view measured) const;

 private:
  const Switch* Exact(std::string_view lower) const;
  std::unordered_map<std::string, const Switch*> by_name_;  // lower case; nullptr: ambiguous
};

}  // namespace gpuforge::model
