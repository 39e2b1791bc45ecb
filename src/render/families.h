#pragma once

// Each family of generated files adds its jobs (and its deliberate skips) for the selected
// nodes. One file per family: nccl.cc, os.cc, slurm.cc, kubernetes.cc, monitoring.cc.

#include <vector>

#include "gpuforge/render/render.h"

namespace gpuforge::render {

// The nodes a render covers, in inventory order.
std::vector<const model::Node*> SelectedNodes(const model::Cluster& c, const Options& o);

// rhel, rocky, almalinux: dnf and yum.repos.d; anything else is apt's.
bool IsRhelFamily(std::string_view distro);

void AddNcclJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddOsJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddSlurmJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddKubernetesJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddMonitoringJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddRoceJobs(const model::Cluster& c, const Options& o, Plan* plan);  // roce.cc (#13)

}  // namespace gpuforge::render
