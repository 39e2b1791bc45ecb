#pragma once

// The Slurm daemons and commands each node of a Slurm cluster runs, derived once from the model:
// render (which nodes get a NodeName line and which files), plan (packages, services, handlers)
// and lint read this one answer, so a node never gets a slurmd that slurm.conf does not name.

#include <vector>

#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

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
