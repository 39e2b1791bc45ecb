#pragma once

// `gpuforge cabling` (#31): every designed cable judged against the fabric as measured. The
// designed list is the inventory's links (or a file inventory/link_import.h read); the
// measured fabric is the subnet's view (iblinkinfo / ibnetdiscover, facts/fabric.h) for
// InfiniBand and each node's LLDP neighbours (facts) for Ethernet and RoCE. Pure: no I/O, so
// it is tested on plain data at any size. Verdicts, their codes and actions: docs/cabling.md;
// the codes are rows of validate's catalogue (validate/codes.h).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuforge/facts/fabric.h"
#include "gpuforge/facts/facts.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::facts {

enum class CableState {
  kOk,           // the far end is the designed one, at the designed rate or better
  kDegraded,     // the designed far end, below the designed width or rate
  kMissing,      // no peer where a cable was designed
  kMiswired,     // a peer, but not the designed switch or port
  kSwapped,      // miswired with another designed cable, each on the other's far end
  kUnexpected,   // a measured cable no designed link has
  kPortUnknown,  // the designed switch, but its port could not be read (a MAC as LLDP port id)
  kUnmeasured,   // nothing measured this cable (no subnet view, node not reached, no LLDP on switches)
};
const char* ToString(CableState s);  // "OK", "DEGRADED", "MISSING", ...
// The code in validate's catalogue: "cabling.degraded", ...; "" for kOk.
const char* CodeOf(CableState s);
// MISSING, MISWIRED, SWAPPED: what makes `gpuforge cabling` exit 1.
bool IsMiswire(CableState s);

struct CableCheck {
  CableState state = CableState::kUnmeasured;
  std::string network;
  std::string near;  // the end it is looked at from: "gpu001:mlx5_3", or a leaf's port "leaf1:33"
  std::string want;  // the designed far end, "leaf1:4"; "" for UNEXPECTED
  std::string got;   // the measured far end, "leaf2:4" or as the tool named it; "" when none
  std::string detail;  // why, and the first thing to do, in one line
  std::string source;  // where it was measured: "iblinkinfo on gpu001:118", "lldpctl on gpu001"
  std::optional<int> rail;
  std::string gpu;     // the GPU this NIC serves, from the node's PCI tree: "GPU 3"; ""
  std::optional<double> want_gbps;
  std::optional<double> got_gbps;
  std::optional<int> got_width;
  std::string swap_with;  // SWAPPED: the other cable's near end
  SourcePos where;        // the design line
};

struct RailReport {
  std::string network;
  int rail = 0;
  std::vector<std::string> leaves;  // the designed leaves of this rail
  // NICs of this rail measured on another leaf: {near end, the leaf it is on}.
  std::vector<std::pair<std::string, std::string>> exceptions;
  int checked = 0;  // NICs of this rail whose leaf was measured
};

struct CablingInputs {
  // Views of the InfiniBand subnet. The first is judged; the others are cross-checked with it.
  std::vector<IbSubnet> subnets;
  // Facts of the nodes that were reached (sysfs GUIDs map CAs to nodes; LLDP; PCI tree).
  std::vector<NodeFacts> nodes;
  // Nodes not reached, with why: their cables are UNMEASURED with that reason.
  std::vector<std::pair<std::string, std::string>> unreached;
};

struct CablingResult {
  std::vector<CableCheck> cables;  // designed links in design order, then UNEXPECTED ones
  std::vector<RailReport> rails;   // rail-optimized networks only, by network and rail
  std::vector<std::string> notes;  // parser warnings, cross-check differences, inputs not used
  std::map<CableState, std::size_t> counts;
  bool Miswired() const;
};

CablingResult CheckCabling(const model::Cluster& c, const std::vector<model::Link>& design,
                           const CablingInputs& in);

}  // namespace gpuforge::facts
