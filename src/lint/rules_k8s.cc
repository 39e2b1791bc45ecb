// k8s.* rules about what the kubelet and the device plugins do with the rendered training pod
// (issue #14): the rules of rules_scheduler.cc are about the guides' choices, these about
// settings the kubelet or NCCL would turn into a pod that never starts or runs on TCP.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "gpuforge/model/gpu_numa.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

// The training pod (render/kubernetes.cc) takes every GPU of its node, so under
// single-numa-node it needs all of them on one NUMA node. The topology manager admits a pod
// only with a single-NUMA hint from every provider (Kubernetes
// pkg/kubelet/cm/topologymanager/policy_single_numa_node.go, canAdmitPodResult /
// filterSingleNumaHints), and the device manager offers one only when that many GPUs sit on
// one node: otherwise the pod fails with TopologyAffinityError, on every node, every time.
void SingleNumaGpus(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kKubernetes || s.topology_manager_policy != "single-numa-node") return;
  for (const ProfileUse& use : GpuProfiles(c)) {
    const model::Profile& p = *use.profile;
    std::optional<model::GpuNumaSpread> numa = model::GpuNumaOf(p);
    if (!numa) continue;  // no NUMA placement in the inventory: nothing to hold it to
    int pod = p.gpu_count();
    if (pod <= numa->most) continue;
    ctx.Report(fmt::format("topology_manager_policy single-numa-node with training pods of {} GPUs on {}: profile '{}' "
                           "has at most {} GPUs on one NUMA node ({}), so the kubelet rejects every such pod "
                           "(TopologyAffinityError); use restricted or best-effort, or pods of at most {} GPUs; render "
                           "does not write the Volcano Job",
                           pod, NodeList(use.nodes), p.name, numa->most, numa->spread, numa->most),
               {p.name}, s.where);
  }
}

// The RDMA device plugin's resource is how a pod gets /dev/infiniband; without it NCCL in the
// pod finds no IB device and runs over TCP sockets. render refuses the Job; this says so
// before render.
void RdmaResource(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Scheduler& s = c.software.scheduler;
  if (s.kind != model::SchedulerKind::kKubernetes || !s.volcano || !HasRdmaComputeFabric(c)) return;
  std::vector<const model::Node*> nodes = GpuNodes(c);
  if (nodes.empty() || nodes.front()->vars.count("k8s_rdma_resource") > 0) return;
  ctx.Report("Kubernetes on an InfiniBand/RoCE fabric with no defaults.vars.k8s_rdma_resource: the training pods "
             "get no RDMA device and NCCL falls back to TCP sockets; name the resource the RDMA device plugin "
             "registers (rdma/ib, rdma/rdma_shared_device_a, nvidia.com/hostdev). render does not write the Volcano Job "
             "without it",
             {}, s.where);
}

}  // namespace

void AddK8sRules(std::vector<Rule>& rules) {
  rules.push_back({"k8s.single_numa_gpus",
                   Severity::kError,
                   "kubelet topology manager single-numa-node with training pods whose GPUs span NUMA nodes",
                   "Kubernetes pkg/kubelet/cm/topologymanager/policy_single_numa_node.go (canAdmitPodResult); "
                   "004_910c09f65559b553.txt, The Node Configuration",
                   {},
                   &SingleNumaGpus});
  rules.push_back({"k8s.rdma_resource",
                   Severity::kError,
                   "Kubernetes with Volcano on InfiniBand/RoCE without the RDMA device plugin's resource",
                   "000_bf90931f775ecd9c.txt, Networking tiers for GPU clusters (\"Use RDMA\"); issue #14",
                   {},
                   &RdmaResource});
}

}  // namespace gpuforge::lint
