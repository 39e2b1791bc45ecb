#include "gpuforge/plan/desired.h"

#include <fmt/format.h>

#include <map>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/model/roce.h"
#include "gpuforge/plan/node_plan.h"

namespace gpuforge::plan {

const char* ToString(ResourceKind k) {
  switch (k) {
    case ResourceKind::kPackage: return "package";
    case ResourceKind::kFile: return "file";
    case ResourceKind::kModule: return "module";
    case ResourceKind::kSysctl: return "sysctl";
    case ResourceKind::kService: return "service";
    case ResourceKind::kScheduler: return "scheduler";
  }
  return "?";
}

namespace {

bool IsNvidia(const model::Profile& p) {
  for (const auto& g : p.gpus) {
    const model::GpuModelInfo* info = model::FindGpuModel(g.model);
    if (info == nullptr || info->vendor == "nvidia") return true;
  }
  return false;
}

std::string NcclEnvSummary(const model::Cluster& c) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : c.software.nccl_env) parts.push_back(k + "=" + v);
  if (!c.software.nccl_topo_file.empty()) parts.push_back("NCCL_TOPO_FILE=" + c.software.nccl_topo_file);
  if (parts.empty()) return "NCCL defaults (no variables in the inventory)";
  return fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace

std::vector<Resource> DesiredState(const model::Cluster& c, const model::Node& n) {
  std::vector<Resource> out;
  const model::Profile& p = c.ProfileOf(n);
  const model::Software& sw = c.software;
  bool gpus = p.gpu_count() > 0 && IsNvidia(p);
  auto add = [&](ResourceKind k, std::string id, std::string summary, std::string reason) {
    out.push_back({k, std::move(id), std::move(summary), std::move(reason)});
  };

  // Packages, modules, sysctl values and services: the same lists the online plan compares.
  const DesiredNode node_state = DesiredNodeState(c, n, {}, AllParts());
  for (const DesiredPackage& pkg : node_state.packages) {
    std::string summary = pkg.version.empty() ? std::string("version not pinned") : pkg.version;
    if (pkg.impact == Impact::kReboot) summary += " (" + pkg.note + ")";
    add(ResourceKind::kPackage, pkg.name, summary, "inventory " + pkg.reason);
  }
  bool slurm = sw.scheduler.kind == model::SchedulerKind::kSlurm;
  bool k8s = sw.scheduler.kind == model::SchedulerKind::kKubernetes;
  for (const model::Repository& r : sw.repositories) {
    add(ResourceKind::kFile,
        FamilyOf(sw) == OsFamily::kRhel ? "/etc/yum.repos.d/gpuforge-" + r.name + ".repo"
                                        : "/etc/apt/sources.list.d/gpuforge-" + r.name + ".list",
        "package repository " + r.url, "inventory software.repositories");
  }

  if (gpus) {
    add(ResourceKind::kFile, "/etc/nccl.conf", NcclEnvSummary(c), "guide 004, NCCL env from 18 months of trial");
    if (!sw.nccl_topo_file.empty()) {
      bool complete = true;
      for (const auto& g : p.gpus) complete = complete && !g.pci_bus_ids.empty() && !g.numa_nodes.empty();
      add(ResourceKind::kFile, sw.nccl_topo_file,
          complete ? fmt::format("NCCL topology: {} GPUs, {} NICs by NUMA node", p.gpu_count(), p.nics.size())
                   : "skipped: the profile lacks GPU bus ids or NUMA nodes (a wrong file is worse than none)",
          "guide 004, NCCL Topology File");
    }
  }
  add(ResourceKind::kFile, "/etc/security/limits.d/90-gpuforge.conf", "memlock unlimited, nofile 1048576",
      "anchors.md, GPU node OS settings");
  if (std::size_t ports = model::RocePorts(c, n).size(); ports > 0) {  // render/roce.cc (#13)
    add(ResourceKind::kFile, "/usr/local/sbin/gpuforge-roce-setup",
        fmt::format("{} RoCE ports: MTU, address, policy routing, DSCP trust, PFC, ECN", ports),
        "issue #13; run by gpuforge-roce.service, sysctls in /etc/sysctl.d/91-gpuforge-roce.conf");
  }
  if (gpus) {
    add(ResourceKind::kFile, "/etc/sysctl.d/90-gpuforge.conf", "kernel.numa_balancing = 0",
        "anchors.md, GPU node OS settings");
  }
  if (slurm) {
    add(ResourceKind::kFile, "/etc/slurm/slurm.conf", fmt::format("cluster {}, controller {}", c.name, sw.scheduler.controller),
        "inventory software.scheduler");
    if (gpus) {
      const model::GpuModelInfo* info = p.gpus.empty() ? nullptr : model::FindGpuModel(p.gpus[0].model);
      std::string type = info ? std::string(info->slurm_type) : "gpu";
      add(ResourceKind::kFile, "/etc/slurm/gres.conf",
          sw.scheduler.gres_autodetect_nvml ? "AutoDetect=nvml"
                                            : fmt::format("Name=gpu Type={} File=/dev/nvidia[0-{}]", type, p.gpu_count() - 1),
          "anchors.md, Provisioning conventions");
    }
  }
  if (k8s && gpus) {
    add(ResourceKind::kFile, "/var/lib/kubelet/config.yaml",
        fmt::format("topologyManagerPolicy {}", sw.scheduler.topology_manager_policy.empty() ? "(unset)" : sw.scheduler.topology_manager_policy),
        "guide 004, The Node Configuration");
  }
  for (const std::string& m : node_state.modules) {
    add(ResourceKind::kModule, m, "loaded now and at boot (GPUDirect RDMA)", "anchors.md");
  }
  for (const DesiredSysctl& k : node_state.sysctls) {
    add(ResourceKind::kSysctl, k.key, k.value + " now and at boot", "anchors.md, GPU node OS settings");
  }
  for (const std::string& u : node_state.services) add(ResourceKind::kService, u, "enabled, running", "inventory");
  return out;
}

std::vector<NodeClass> FoldDesiredState(const model::Cluster& c) {
  std::vector<NodeClass> classes;
  std::vector<std::vector<std::string>> members;
  for (const model::Node& n : c.nodes) {
    std::vector<Resource> r = DesiredState(c, n);
    std::size_t i = 0;
    for (; i < classes.size(); ++i) {
      if (classes[i].profile == n.profile && classes[i].resources == r) break;
    }
    if (i == classes.size()) {
      classes.push_back({"", 0, n.profile, std::move(r)});
      members.emplace_back();
    }
    members[i].push_back(n.name);
  }
  for (std::size_t i = 0; i < classes.size(); ++i) {
    classes[i].nodes = hostlist::Fold(members[i]);
    classes[i].count = members[i].size();
  }
  return classes;
}

}  // namespace gpuforge::plan
