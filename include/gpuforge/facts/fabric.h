#pragma once

// The fabric as the tools on a node report it (#31): the subnet's view of InfiniBand from
// `iblinkinfo` and `ibnetdiscover` (run on one node with infiniband-diags), and each node's
// LLDP neighbours from `lldpctl`. Pure parsers over text; what they are compared against is in
// model/cabling.h, the comparison in facts/cabling.h. docs/cabling.md names each format's
// source.
//
// Every parser treats its input as hostile: a line it cannot read is an error naming
// "SOURCE:LINE" (truncated or garbled output never reads as a smaller, healthy fabric), and a
// name with control characters (terminal escapes) is kept escaped and warned about, so it can
// never match a designed name nor reach a terminal raw.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/result.h"

namespace gpuforge::facts {

// A device on the subnet.
struct IbNodeRef {
  std::string guid;  // node GUID, "0x" and 16 lower-case hex digits; "" when the tool did not print it
  std::string desc;  // node description: "gpu001 mlx5_0" (a CA: host name, space, device), or a switch's
  bool is_switch = false;
  int lid = 0;  // 0 when not printed
};

// One port line, as a subnet tool printed it from the port's own side. A cable between two
// listed devices appears twice (once from each end) where the tool prints both.
struct IbPortSeen {
  IbNodeRef node;
  int port = 0;
  std::string port_guid;   // a CA port's GUID where printed; ""
  std::string state;       // "Active", "Down", "Init", "Armed"; "" when not printed
  std::string phys_state;  // "LinkUp", "Polling", "Disabled"; ""
  std::optional<int> width;         // lanes: 1, 2, 4, 8, 12
  std::optional<double> lane_gbps;  // per-lane signalling as iblinkinfo prints it: 10.0, 53.125
  std::string speed;                // "SDR" ... "XDR", printed or derived from lane_gbps; ""
  // The link's rate in the units sysfs and the inventory use: width x the generation's lane
  // figure (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200);
  // 4X NDR = 400, 2X NDR = 200, 4X QDR = 40.
  std::optional<double> rate_gbps;
  std::string could_be;  // iblinkinfo's "( Could be 4X 53.125 Gbps )" text inside the parens; ""
  std::optional<IbNodeRef> peer;  // nullopt: no peer (a Down/Polling port)
  int peer_port = 0;
  std::string peer_port_guid;  // the peer port's GUID where printed, or found by its LID in the same output; ""
  int line = 0;  // 1-based line of this port in the source
};

struct IbSubnet {
  std::string source;             // "iblinkinfo on gpu001", or the file it was read from
  std::vector<IbPortSeen> ports;  // in output order
  // "SOURCE:LINE: what" for lines read with doubt (escaped names, a duplicate GUID).
  std::vector<std::string> warnings;
};

// `iblinkinfo` (default, per-device blocks) and `iblinkinfo --line` (one line per port), told
// apart by their content. Peers given by LID only are resolved to their GUID from the same
// output where it lists that LID.
Result<IbSubnet> ParseIblinkinfo(std::string_view text, std::string_view source);

// `ibnetdiscover` (with or without the "# Topology file" header, with or without -g).
Result<IbSubnet> ParseIbnetdiscover(std::string_view text, std::string_view source);

// Where two views of one subnet disagree, cable by cable: "A:LINE: ... but B:LINE: ...". Ports
// with no peer in both are not compared; a cable only one of them lists is a difference.
std::vector<std::string> CrossCheckSubnets(const IbSubnet& a, const IbSubnet& b);

// One LLDP neighbour of one local interface.
struct LldpNeighbor {
  std::string local_if;         // the node's interface: "ens1f0np0"
  std::string chassis_name;     // system name as sent ("leaf1" or "tor-1.example.net"); ""
  std::string chassis_id;       // as sent
  std::string chassis_id_type;  // lldpd's word: "mac", "local", "ifname", "ip"; ""
  std::string port_id;          // as sent: "swp12", "Ethernet48", "et-0/0/1:3", a MAC
  std::string port_id_type;     // "ifname", "mac", "local", "ifalias"; ""
  std::string port_descr;       // port description; ""
  std::string where;            // "SOURCE:LINE" (or "SOURCE: interface NAME" where no line is known)
};

struct LldpSeen {
  std::string source;
  std::vector<LldpNeighbor> neighbors;  // in output order; an interface with two neighbours gives two
  std::vector<std::string> warnings;    // "SOURCE:LINE: what"
};

// `lldpctl -f json0` (every list a list, always) and `lldpctl -f json` (an object where there
// is one interface or one neighbour, a list where several: lldpd issue #236), told apart by
// shape.
Result<LldpSeen> ParseLldpctlJson(std::string_view text, std::string_view source);

// `lldpctl -f keyvalue` (lldp.IF.chassis.name=..., as in the fixture from a Juniper ToR).
Result<LldpSeen> ParseLldpctlKeyvalue(std::string_view text, std::string_view source);

}  // namespace gpuforge::facts
