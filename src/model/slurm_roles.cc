#include "gpuforge/model/slurm_roles.h"

#include <algorithm>
#include <set>
#include <string>

namespace gpuforge::model {

namespace {

bool InPartition(const Scheduler& s, const std::string& name) {
  return std::any_of(s.partitions.begin(), s.partitions.end(), [&](const Partition& p) {
    return std::find(p.nodes.begin(), p.nodes.end(), name) != p.nodes.end();
  });
}

// slurmd refuses to start on a node slurm.conf has no NodeName line for (its lookup,
// _find_node_record in Slurm's src/common/node_conf.c, finds no record), so these are exactly
// the nodes that get the line.
bool SlurmdNode(const Cluster& c, const Node& n) {
  return n.role == NodeRole::kCompute || c.ProfileOf(n).gpu_count() > 0 || InPartition(c.software.scheduler, n.name);
}

}  // namespace

std::vector<const Node*> SlurmdNodes(const Cluster& c) {
  std::vector<const Node*> out;
  if (c.software.scheduler.kind != SchedulerKind::kSlurm) return out;
  std::set<std::string> in_partition;
  for (const Partition& p : c.software.scheduler.partitions) in_partition.insert(p.nodes.begin(), p.nodes.end());
  for (const Node& n : c.nodes) {
    if (n.role == NodeRole::kCompute || c.ProfileOf(n).gpu_count() > 0 || in_partition.count(n.name)) out.push_back(&n);
  }
  return out;
}

SlurmRole SlurmRoleOf(const Cluster& c, const Node& n) {
  SlurmRole r;
  const Scheduler& s = c.software.scheduler;
  if (s.kind != SchedulerKind::kSlurm) return r;
  r.slurmctld = !s.controller.empty() && s.controller == n.name;
  r.slurmd = SlurmdNode(c, n);
  r.client = r.slurmctld || r.slurmd || n.role == NodeRole::kLogin || n.role == NodeRole::kController;
  // slurmdbd authenticates slurmctld's and sacctmgr's requests with munge as well.
  r.slurmdbd = s.accounting && s.accounting->host == n.name;
  r.database = r.slurmdbd && s.accounting->LocalDatabase();
  r.client = r.client || r.slurmdbd;
  r.munge = r.client;
  return r;
}

}  // namespace gpuforge::model
