// k8s.* and slurm.*: the scheduler settings that decide whether jobs land well.

#include <fmt/format.h>

#include "gpuforge/model/driver_stack.h"
#include "gpuforge/model/slurm_roles.h"
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

// gres.conf AutoDetect=nvml needs slurmd's gpu/nvml plugin. Debian 12's slurm-wlm 22.05.8
// ships gpu_generic.so and no gpu_nvml.so (/usr/lib/x86_64-linux-gnu/slurm-wlm/), and Debian has
// no package with it: that slurmd logs "We were configured with nvml functionality, but that lib
// wasn't found", reports 0 GPUs, and slurmctld drains the node "gres/gpu count reported lower
// than configured (0 < 8)" (RenderSlurmDaemonsNvml, the real daemons).
void AutodetectWithoutNvml(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kSlurm || !s.gres_autodetect_nvml) return;
  const std::string& d = c.software.os_distro;
  const bool rhel = model::IsRhelFamily(d);
  const std::string_view off =
      "; gres_autodetect: off needs no plugin (gres.conf File= lines from the nodes' measured minors, render --facts)";
  if (rhel) {
    ctx.Report(fmt::format("gres_autodetect: nvml on {}: no RHEL or EPEL package gpuforge knows carries slurmd's "
                           "gpu_nvml.so, so the nodes' Slurm must be built with NVML (slurm.spec --with nvml), or "
                           "every GPU node registers 0 GPUs and is drained \"gres/gpu count reported lower than "
                           "configured\"{}",
                           d, off),
               {}, s.where);
    return;
  }
  ctx.Report(fmt::format("gres_autodetect: nvml: slurmd's gpu_nvml.so comes in {}, which the plan installs on the GPU "
                         "nodes; it is in Debian's contrib component (Ubuntu's multiverse), so the nodes' apt sources "
                         "must carry that component or the package step fails, and without the plugin every GPU node "
                         "registers 0 GPUs and is drained \"gres/gpu count reported lower than configured\"{}",
                         model::kSlurmNvmlPluginPackage, off),
             {}, s.where);
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
  rules.push_back({"slurm.autodetect_without_nvml",
                   Severity::kWarning,
                   "gres.conf AutoDetect=nvml: slurmd's gpu/nvml plugin is a package of its own outside the main "
                   "archive component (Debian contrib, Ubuntu multiverse) or absent (RHEL)",
                   "000_bf90931f775ecd9c.txt, Orchestration: Kubernetes + Slurm (Slurm as the batch "
                   "scheduler); gres.conf(5) AutoDetect (needs the gpu/nvml plugin); Debian 12 slurm-wlm "
                   "22.05.8-4+deb12u3 has no gpu_nvml.so, src:slurm-wlm-contrib builds slurm-wlm-nvml-plugin "
                   "(contrib); the real slurmd without it (RenderSlurmDaemonsNvml)",
                   {},
                   &AutodetectWithoutNvml});
}

}  // namespace gpuforge::lint
