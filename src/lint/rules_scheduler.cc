// k8s.* and slurm.*: the scheduler settings that decide whether jobs land well.

#include <fmt/format.h>

#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

void TopologyManager(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kKubernetes) return;
  if (!s.topology_manager_policy.empty() && s.topology_manager_policy != "none") return;
  ctx.Report(fmt::format("Kubernetes kubelet topology manager policy is {}; pods then land on "
                         "arbitrary NUMA nodes (up to 30% slower); set best-effort, restricted "
                         "or single-numa-node",
                         s.topology_manager_policy.empty() ? std::string("unset")
                                                           : "'" + s.topology_manager_policy + "'"),
             {}, s.where);
}

void NoVolcano(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kKubernetes || s.volcano) return;
  ctx.Report(
      "Kubernetes without the Volcano scheduler: the default scheduler does not gang-"
      "schedule training pods or understand GPU affinity",
      {}, s.where);
}

void NoController(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kSlurm) return;
  if (s.controller.empty()) {
    ctx.Report("Slurm scheduler with no controller node", {}, s.where);
  } else if (c.FindNode(s.controller) == nullptr) {
    ctx.Report(fmt::format("Slurm controller '{}' is not a node in the inventory", s.controller),
               {s.controller}, s.where);
  }
}

}  // namespace

void AddSchedulerRules(std::vector<Rule>& rules) {
  rules.push_back({"k8s.topology_manager",
                   Severity::kError,
                   "Kubernetes kubelet topology manager policy unset or none",
                   "004_910c09f65559b553.txt, The Node Configuration (\"The topology manager "
                   "policy is non-negotiable\")",
                   {},
                   &TopologyManager});
  rules.push_back({"k8s.no_volcano",
                   Severity::kWarning,
                   "Kubernetes without Volcano",
                   "004_910c09f65559b553.txt, The Software Stack: Pick Your Poison (Kubernetes "
                   "+ Volcano scheduler); 000_bf90931f775ecd9c.txt, Orchestration: Kubernetes + "
                   "Slurm (\"with Volcano or Kueue\")",
                   {},
                   &NoVolcano});
  rules.push_back({"slurm.no_controller",
                   Severity::kError,
                   "Slurm with no controller, or a controller that is not an inventory node",
                   "000_bf90931f775ecd9c.txt, Orchestration: Kubernetes + Slurm",
                   {},
                   &NoController});
}

}  // namespace gpuforge::lint
