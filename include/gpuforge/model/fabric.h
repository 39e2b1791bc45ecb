#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

// What the switch and link inventory implies: computed, never declared, so lint and render
// (topology.conf) agree on one picture of the fabric.

struct SwitchLoad {
  const Switch* sw = nullptr;
  int ports_used = 0;
  double down_bytes_per_s = 0;  // links to nodes and to switches of a lower tier
  double up_bytes_per_s = 0;    // links to switches of a higher tier
  std::optional<double> oversubscription;  // down / up; absent with no uplinks or no downlinks
  std::vector<std::string> nodes;           // nodes with a NIC cabled here, in link order, unique
  std::vector<std::string> lower_switches;  // unique, in link order
  std::vector<std::string> upper_switches;  // unique, in link order
};

struct NicAttachment {
  std::string node;
  std::string nic;
  std::string sw;
  int port = 0;
  double rate_bytes_per_s = 0;
};

struct Fabric {
  std::vector<SwitchLoad> switches;  // same order as Cluster::switches
  std::vector<NicAttachment> attachments;
  // NICs on a network that has switches but no link from that NIC: {node, nic}.
  std::vector<std::pair<std::string, std::string>> unattached_nics;

  const SwitchLoad* Find(std::string_view switch_name) const;
  // The switches a node's NICs are cabled to, restricted to one network ("" = any).
  std::vector<std::string> SwitchesOf(const Cluster& c, std::string_view node,
                                      std::string_view network = "") const;
};

Fabric AnalyzeFabric(const Cluster& c);

}  // namespace gpuforge::model
