#pragma once

// Render with what the nodes measured. The NCCL topology file (software.nccl.topo_file) is
// written only from a node's measured PCI tree (facts' pci-tree section), never from the
// inventory alone; these overloads carry those trees to the NCCL family. Render(c, o) without
// them renders no topology file.

#include <map>
#include <string>

#include "gpuforge/model/pci_tree.h"
#include "gpuforge/render/render.h"

namespace gpuforge::render {

// Node name -> its measured PCI tree.
using MeasuredPci = std::map<std::string, model::PciTree>;

Plan CollectJobs(const model::Cluster& c, const Options& o, const MeasuredPci& measured);
Result<Output> Render(const model::Cluster& c, const Options& o, const MeasuredPci& measured);

}  // namespace gpuforge::render
