#pragma once

// The Slurm daemons and commands each node of a Slurm cluster runs, derived once from the model:
// render (which nodes get a NodeName line and which files), plan (packages, services, handlers)
// and lint read this one answer, so a node never gets a slurmd that slurm.conf does not name.

#include <string_view>
#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

// Where gpuforge's health check lives on a slurmd node and what it runs and reads
// (software.scheduler.health_check): render writes the program naming these paths and plan
// pushes the agent, the inventory and the pass marks to them, so both stages read them here.
inline constexpr std::string_view kNodeAgentPath = "/usr/local/lib/gpuforge/gpuforge";
inline constexpr std::string_view kHealthCheckProgramPath = "/usr/local/lib/gpuforge/healthcheck";
inline constexpr std::string_view kHealthCheckInventoryPath = "/etc/gpuforge/cluster.yaml";
inline constexpr std::string_view kHealthCheckModelTablePath = "/etc/gpuforge/gpu-models.yaml";

struct SlurmRole {
  bool slurmctld = false;  // the node software.scheduler.controller names
  bool slurmd = false;     // has a NodeName line in slurm.conf (SlurmdNodes)
  bool client = false;     // users submit from it: every node with a Slurm role
  bool munge = false;      // auth/munge runs wherever any of the above does
  bool Any() const { return slurmctld || slurmd || client; }
};

// Nodes slurmd runs on, in inventory order: a compute node, any node with GPUs, or a node a
// partition names (the controller too, when it is one of these). Empty when the scheduler is
// not Slurm.
std::vector<const Node*> SlurmdNodes(const Cluster& c);

// What `n` runs. A login node (role login), a node of role controller, the scheduler's
// controller and every slurmd node are clients; a node with none of these (storage) has no
// Slurm role at all.
SlurmRole SlurmRoleOf(const Cluster& c, const Node& n);

}  // namespace gpuforge::model
