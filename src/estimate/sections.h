#pragma once

// The sections of an estimate, one builder each. A builder sees the cluster and the sections
// built before it, so a later figure reuses an earlier one (energy reads power.cluster_w)
// instead of computing it again, and an earlier figure's `missing` carries through.

#include "gpuforge/estimate/estimate.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::estimate::internal {

Section PowerSection(const model::Cluster& c, const Estimates& so_far);
Section EnergySection(const model::Cluster& c, const Estimates& so_far);
Section CoolingSection(const model::Cluster& c, const Estimates& so_far);
Section AllreduceSection(const model::Cluster& c, const Estimates& so_far);
Section StorageSection(const model::Cluster& c, const Estimates& so_far);
Section CheckpointSection(const model::Cluster& c, const Estimates& so_far);
Section CostSection(const model::Cluster& c, const Estimates& so_far);

}  // namespace gpuforge::estimate::internal
