#pragma once

// Each family of generated files adds its jobs (and its deliberate skips) for the selected
// nodes. One file per family: nccl.cc, os.cc, slurm.cc, kubernetes.cc, monitoring.cc.

#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/model/driver_stack.h"
#include "gpuforge/render/measured.h"
#include "gpuforge/render/render.h"

namespace gpuforge::render {

// The nodes a render covers, in inventory order.
std::vector<const model::Node*> SelectedNodes(const model::Cluster& c, const Options& o);

// rhel, rocky, almalinux: dnf and yum.repos.d; anything else is apt's.
using model::IsRhelFamily;

// `measured`: the nodes' measured PCI trees (measured.h); none, no topology file.
// The value NCCL should see for an inventory NCCL variable, wherever it is written (nccl.conf,
// a job script's export, a Volcano env): NCCL_IB_HCA becomes an exact match ('=' prefix;
// NCCL src/transport/net_ib.cc ncclIbInit), everything else as written. The environment wins
// over nccl.conf, so a job that exported the raw value would undo the fix (#13 part 4).
std::string NcclEnvValue(std::string_view key, std::string_view value);

void AddNcclJobs(const model::Cluster& c, const Options& o, Plan* plan,
                 const MeasuredPci* measured = nullptr);
// NCCL_TOPO_FILE for one GPU node, from its tree in `measured`; a Skip with the reason when
// there is no measured tree or it contradicts the inventory. True when the file is rendered.
bool AddNcclTopologyJob(const model::Cluster& c, const MeasuredPci* measured, const model::Node& node,
                        const model::Profile& p, const std::vector<const model::NicSpec*>& rdma,
                        Plan* plan);
void AddOsJobs(const model::Cluster& c, const Options& o, Plan* plan);
// `gpus`: the nodes' measured GPUs (measured.h); a node without them gets gres.conf File=
// lines assumed from the inventory, marked as such.
void AddSlurmJobs(const model::Cluster& c, const Options& o, Plan* plan, const MeasuredGpus* gpus = nullptr);
// slurm_accounting.cc: slurm.conf's accounting values ({"accounting": false} without
// software.scheduler.accounting), given the GRES types of the cluster's GPUs; and
// slurmdbd.conf (plus the MariaDB settings for a local database) on the slurmdbd node.
nlohmann::json SlurmAccountingContext(const model::Cluster& c, const std::vector<std::string>& gres_types);
void AddSlurmAccountingJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddKubernetesJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddMonitoringJobs(const model::Cluster& c, const Options& o, Plan* plan);
void AddRoceJobs(const model::Cluster& c, const Options& o, Plan* plan);  // roce.cc (#13)

}  // namespace gpuforge::render
