#pragma once

// Topology and NUMA drift: where a node's measured PCI tree and NUMA placement differ from the
// inventory or from what NCCL needs (GPU NUMA vs gpus.numa, rail locality of NICs, GPU-NIC
// distance for GPUDirect RDMA, degraded PCIe hops, a tree that contradicts the inventory).
// Private to facts; FindDrift() (drift.h) calls it per node. docs/facts.md lists the codes.

#include <vector>

#include "gpuforge/facts/drift.h"

namespace gpuforge::facts {

std::vector<Drift> TopologyDrift(const model::Profile& p, const NodeFacts& f);

}  // namespace gpuforge::facts
