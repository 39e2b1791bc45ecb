#include "gpuforge/plan/desired.h"

#include <fmt/format.h>

#include <map>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/model/gpu_catalog.h"

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

bool HasRdmaNic(const model::Profile& p) {
  for (const auto& n : p.nics) {
    if (n.kind != model::NetKind::kEthernet) return true;
  }
  return false;
}

bool HasNvSwitch(const model::Profile& p) {
  for (const auto& g : p.gpus) {
    if (g.nvswitch) return true;
  }
  return false;
}

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
  bool rdma = HasRdmaNic(p);
  auto add = [&](ResourceKind k, std::string id, std::string summary, std::string reason) {
    out.push_back({k, std::move(id), std::move(summary), std::move(reason)});
  };
  auto ver = [](const std::string& v) { return v.empty() ? std::string("version not pinned") : v; };

  if (gpus) {
    std::string drv = sw.driver_branch.empty() ? "nvidia-driver" : "nvidia-driver-" + sw.driver_branch;
    add(ResourceKind::kPackage, drv, ver(sw.driver_version) + " (reboot needed when it changes)",
        "inventory software.driver");
    if (!sw.cuda_version.empty()) add(ResourceKind::kPackage, "cuda-toolkit", sw.cuda_version, "inventory software.cuda");
    add(ResourceKind::kPackage, "libnccl2", ver(sw.nccl_version), "inventory software.nccl");
    add(ResourceKind::kPackage, "datacenter-gpu-manager", "DCGM and its Prometheus exporter",
        "guides 000 and 004, Monitoring");
    if (HasNvSwitch(p)) {
      add(ResourceKind::kPackage, "nvidia-fabricmanager", "same version as the driver " + ver(sw.driver_version),
          "anchors.md: fabric manager must match the driver on NVSwitch systems");
    }
  }
  if (rdma) {
    add(ResourceKind::kPackage, sw.ofed_kind.empty() ? "rdma-core" : sw.ofed_kind, ver(sw.rdma_core_version) + ", perftest",
        "inventory software.rdma");
  }
  bool slurm = sw.scheduler.kind == model::SchedulerKind::kSlurm;
  bool k8s = sw.scheduler.kind == model::SchedulerKind::kKubernetes;
  bool controller = !sw.scheduler.controller.empty() && sw.scheduler.controller == n.name;
  if (slurm) add(ResourceKind::kPackage, controller ? "slurmctld" : "slurmd", "Slurm daemon", "inventory software.scheduler");
  if (k8s) add(ResourceKind::kPackage, "kubelet", "Kubernetes node agent", "inventory software.scheduler");

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
  if (gpus && rdma) add(ResourceKind::kModule, "nvidia-peermem", "loaded at boot (GPUDirect RDMA)", "anchors.md");
  if (gpus) {
    add(ResourceKind::kService, "nvidia-persistenced", "enabled, running", "anchors.md");
    if (HasNvSwitch(p)) add(ResourceKind::kService, "nvidia-fabricmanager", "enabled, running", "anchors.md");
    add(ResourceKind::kService, "nvidia-dcgm", "enabled, running", "guides 000 and 004, Monitoring");
  }
  if (slurm) add(ResourceKind::kService, controller ? "slurmctld" : "slurmd", "enabled, running", "inventory");
  if (k8s) add(ResourceKind::kService, "kubelet", "enabled, running", "inventory");
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
