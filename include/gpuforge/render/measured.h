#pragma once

// Render with what the nodes measured (facts, `--facts DIR`). Two files depend on the node
// itself, never on the inventory alone:
// - the NCCL topology file (software.nccl.topo_file), written only from a node's measured PCI
//   tree (facts' pci-tree section);
// - gres.conf's File= lines, one device file per GPU in PCI bus order from the minor numbers
//   the node's driver reports (nvidia-smi -q -x), since minor order need not be bus order.
// Render(c, o) without them renders no topology file and File= lines assumed from the
// inventory, each saying so.

#include <map>
#include <string>
#include <vector>

#include "gpuforge/model/measured_gpu.h"
#include "gpuforge/model/pci_tree.h"
#include "gpuforge/render/render.h"

namespace gpuforge::render {

// Node name -> its measured PCI tree.
using MeasuredPci = std::map<std::string, model::PciTree>;
// Node name -> its GPUs in PCI bus order, each with its /dev/nvidia minor.
using MeasuredGpus = std::map<std::string, std::vector<model::MeasuredGpu>>;

struct Measured {
  MeasuredPci pci;
  MeasuredGpus gpus;
};

Plan CollectJobs(const model::Cluster& c, const Options& o, const Measured& measured);
Result<Output> Render(const model::Cluster& c, const Options& o, const Measured& measured);

}  // namespace gpuforge::render
