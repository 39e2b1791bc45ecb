#pragma once

// What `gpuforge cabling` measures (#31): the facts of every selected node (one SSH round
// trip: sysfs HCA GUIDs, LLDP neighbours, the PCI tree), and the subnet's view from one node
// with infiniband-diags (`iblinkinfo --line` and `ibnetdiscover`, as root: they open the umad
// device). Through remote::Connector only; the comparison is facts/cabling.h.

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/facts/cabling.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/target.h"

namespace gpuforge::facts {

struct MeasureOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(180)};
  remote::FanoutOptions fanout;
  bool gather_nodes = true;                    // false: the subnet view only
  std::optional<remote::Target> subnet_node;  // where the subnet tools run; nullopt: nowhere
};

struct Measured {
  CablingInputs inputs;
  // Why a source gave nothing: "iblinkinfo on gpu001: absent (install infiniband-diags)".
  std::vector<std::string> problems;
  std::size_t nodes_gathered = 0;
};

Measured MeasureFabric(remote::Connector& connector, std::span<const remote::Target> targets,
                       const model::Cluster& c, const MeasureOptions& o);

// The script run on the subnet node, and the reading of its output (public so tests pin them).
std::string SubnetScript();
// The views that parsed, in order iblinkinfo, ibnetdiscover; each tool that was absent, failed
// or did not parse is a line in `problems` naming the node and the tool.
std::vector<IbSubnet> ParseSubnetOutput(std::string_view node, std::string_view output,
                                        std::vector<std::string>* problems);

// The most output the subnet tools may print together: iblinkinfo --line of 2,048 nodes with
// 8 rails and their switches is ~7 MB.
inline constexpr std::size_t kMaxSubnetBytes = 128u << 20;

}  // namespace gpuforge::facts
