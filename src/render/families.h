#pragma once

// Each family of generated files adds its jobs (and its deliberate skips) for the selected
// nodes. One file per family: nccl.cc, os.cc, slurm.cc, kubernetes.cc, monitoring.cc.

#include <vector>

#include "gpuforge/render/measured.h"
#include "gpuforge/render/render.h"

namespace gpuforge::render {

// The nodes a render covers, in inventory order.
std::vector<const model::Node*> SelectedNodes(const model::Cluster& c, const Options& o);

// rhel, rocky, almalinux: dnf and yum.repos.d; anything else is apt's.
bool IsRhelFamily(std::string_view distro);

// `measured`: the nodes' measured PCI trees (measured.h); none, no topology file.
void AddNcclJobs(const model::Cluster& c, const Options& o, Plan* plan,
                 const MeasuredPci* measured = nullptr);
// NCCL_TOPO_FILE for one GPU node, from its tree in `measured`; a Skip with the reason when
// there is no measured tree or it contradicts the inventory. True when the file is rendered.
bool AddNcclTopologyJob(const model::Cluster& c, const MeasuredPci* measured, const model::Node& node,
                        const model::Profile& p, const std::vector<const model::NicSpec*>& rdma,
                        Plan* plan);
void AddOsJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddSlurmJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddKubernetesJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddMonitoringJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddRoceJobs(const model::Cluster& c, const Options& o, Plan* plan);  // roce.cc (#13)

}  // namespace gpuforge::render
