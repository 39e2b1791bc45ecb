#include "gpuforge/plan/desired.h"

#include <fmt/format.h>

#include <map>
#include <string_view>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/model/driver_stack.h"
#include "gpuforge/model/nccl_defaults.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/render/monitoring.h"

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

constexpr std::string_view kFileOwner = "root:root";

std::string NcclEnvSummary(const model::Cluster& c) {
  std::vector<std::string> parts;
  // As nccl.conf will hold them: NCCL_IB_HCA==mlx5_0:1, not the inventory's bare list (#28 item 26).
  for (const auto& [k, v] : c.software.nccl_env) parts.push_back(k + "=" + model::NcclEnvAsWritten(k, v));
  if (!c.software.nccl_topo_file.empty()) parts.push_back("NCCL_TOPO_FILE=" + c.software.nccl_topo_file);
  if (parts.empty()) return "NCCL defaults (no variables in the inventory)";
  return fmt::format("{}", fmt::join(parts, " "));
}

// "kernel.numa_balancing = 0; ..." from a file's lines that are not comments.
std::string SettingLines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    if (!line.empty() && line.front() != '#') lines.emplace_back(line);
    pos = nl + 1;
  }
  return fmt::format("{}", fmt::join(lines, "; "));
}

struct FilePurpose {
  std::string summary, reason;
};

// What the files with a known purpose hold, in one line, and the source gpuforge follows.
FilePurpose PurposeOf(const model::Cluster& c, const DesiredFile& f) {
  const model::Software& sw = c.software;
  const std::string& p = f.path;
  if (p.starts_with("/etc/apt/sources.list.d/gpuforge-") || p.starts_with("/etc/yum.repos.d/gpuforge-")) {
    for (const model::Repository& r : sw.repositories) {
      if (p.find("gpuforge-" + r.name + ".") != std::string::npos) return {"package repository " + r.url, "inventory software.repositories"};
    }
    return {"package repository", "inventory software.repositories"};
  }
  if (p == "/etc/nccl.conf") return {NcclEnvSummary(c), "guide 004, NCCL env from 18 months of trial"};
  if (!sw.nccl_topo_file.empty() && p == sw.nccl_topo_file) return {"NCCL topology file", "guide 004, NCCL Topology File"};
  if (p == "/etc/security/limits.d/90-gpuforge.conf") {
    const bool memlock = f.Content().find("memlock") != std::string_view::npos;
    return {memlock ? "memlock unlimited, nofile 1048576" : "nofile 1048576 (memlock only on GPU nodes)",
            "anchors.md, GPU node OS settings"};
  }
  if (p == "/etc/modules-load.d/90-gpuforge.conf") {
    return {"GPUDirect RDMA: " + model::ChooseGpuDirect(sw).why, "issue #14, GPUDirect: peermem or DMA-BUF"};
  }
  if (p == "/etc/systemd/system/nvidia-persistenced.service.d/gpuforge.conf") {
    return {"nvidia-persistenced with --persistence-mode, enableable ([Install])", "issue #14, the distributions' unit is static"};
  }
  if (p == render::kDcgmCountersPath) {
    return {"dcgm-exporter counters: the fields the alert rules read", "issue #14, Monitoring"};
  }
  if (p == render::kDcgmExporterDropIn) {
    return {fmt::format("dcgm-exporter {}: gpuforge's counters, nvidia-dcgm's host engine{}",
                        render::kDcgmExporterPackageVersion,
                        sw.scheduler.kind == model::SchedulerKind::kSlurm ? ", Slurm job labels" : ""),
            "issue #14, Monitoring"};
  }
  if (p == "/etc/sysctl.d/90-gpuforge.conf") return {SettingLines(f.Content()), "anchors.md, GPU node OS settings"};
  if (p == "/usr/local/sbin/gpuforge-roce-setup") {  // render/roce.cc (#13)
    return {"RoCE ports: MTU, address, policy routing, DSCP trust, PFC, ECN", "issue #13; run by gpuforge-roce.service"};
  }
  if (p == "/etc/sysctl.d/91-gpuforge-roce.conf") return {SettingLines(f.Content()), "issue #13, ARP and rp_filter for RoCE ports"};
  if (p == kMungeKeyPath) {
    // Never a word of the key: its size only (DesiredFile::secret).
    return {fmt::format("munge key, {} bytes (secret: never shown)", f.Content().size()),
            fmt::format("{}, else inventory software.scheduler.munge_key (auth/munge)", kMungeKeyEnv)};
  }
  if (p == model::kSlurmdbdPassPath) {
    return {fmt::format("slurmdbd's StoragePass, {} bytes (secret: never shown)", f.Content().size()),
            "inventory software.scheduler.accounting.storage_pass_file"};
  }
  if (p == model::kSlurmdbdConfPath) {
    const auto& a = sw.scheduler.accounting;
    return {a ? fmt::format("slurmdbd, database {} on {}:{}", a->database, a->storage_host, a->storage_port) : "slurmdbd",
            "inventory software.scheduler.accounting"};
  }
  if (p == kHealthCheckPath) {
    return {fmt::format("slurmd's HealthCheckProgram: validate --local --health --drain-failed every {} s",
                        sw.scheduler.health_check ? sw.scheduler.health_check->interval_s : 0),
            "inventory software.scheduler.health_check"};
  }
  if (p == kNodeInventoryPath) return {"this inventory, for the health check", "inventory software.scheduler.health_check"};
  if (p == kNodeModelTablePath) {
    return {"validate's GPU model pass marks, for the health check", "inventory software.scheduler.health_check"};
  }
  if (p == "/etc/slurm/slurm.conf") {
    return {fmt::format("cluster {}, controller {}", c.name, sw.scheduler.controller), "inventory software.scheduler"};
  }
  if (p.starts_with("/etc/slurm/")) return {"", "inventory software.scheduler"};
  if (p.find("kubelet") != std::string::npos) {
    return {fmt::format("topologyManagerPolicy {}",
                        sw.scheduler.topology_manager_policy.empty() ? "(unset)" : sw.scheduler.topology_manager_policy),
            "guide 004, The Node Configuration"};
  }
  return {};
}

}  // namespace

std::vector<Resource> DesiredState(const model::Cluster& c, const model::Node& /*n*/, const DesiredNode& d,
                                   bool with_agent) {
  std::vector<Resource> out;
  auto add = [&](ResourceKind k, std::string id, std::string summary, std::string reason) {
    out.push_back({k, std::move(id), std::move(summary), std::move(reason), 0, ""});
  };
  for (const DesiredPackage& pkg : d.packages) {
    std::string summary = pkg.version.empty() ? std::string("version not pinned") : pkg.version;
    if (pkg.impact == Impact::kReboot) summary += " (" + pkg.note + ")";
    add(ResourceKind::kPackage, pkg.name, summary, "inventory " + pkg.reason);
  }
  // Every file apply writes, in its order; what it holds comes from the purpose table, and a
  // file the table does not know still shows (its size), so nothing rendered is left out.
  // Mode and owner are the ones apply uploads with (DesiredFile::owner).
  auto add_file = [&](std::string path, std::string summary, std::string reason, unsigned mode, std::string owner) {
    summary += fmt::format(" ({:04o} {})", mode, owner);
    out.push_back({ResourceKind::kFile, std::move(path), std::move(summary), std::move(reason), mode, std::move(owner)});
  };
  for (const DesiredFile& f : d.files) {
    const FilePurpose p = PurposeOf(c, f);
    std::string summary = p.summary.empty() ? fmt::format("{} bytes", f.Content().size()) : p.summary;
    add_file(f.path, std::move(summary), p.reason.empty() ? "render" : p.reason, f.mode, f.owner);
  }
  if (with_agent && d.agent_arch.empty()) {
    add_file(std::string(kAgentPath), "the gpuforge agent (this build, stripped)", "validate runs its probes with it", 0755,
             std::string(kFileOwner));
  }
  for (const std::string& m : d.modules) {
    add(ResourceKind::kModule, m, "loaded now and at boot (GPUDirect RDMA)", "anchors.md");
  }
  for (const DesiredSysctl& k : d.sysctls) {
    add(ResourceKind::kSysctl, k.key, k.value + " now and at boot", "anchors.md, GPU node OS settings");
  }
  for (const std::string& u : d.services) add(ResourceKind::kService, u, "enabled, running", "inventory");
  return out;
}

std::vector<NodeClass> FoldDesiredState(const model::Cluster& c, const std::map<std::string, DesiredNode>& nodes,
                                        bool with_agent) {
  std::vector<NodeClass> classes;
  std::vector<std::vector<std::string>> members;
  for (const model::Node& n : c.nodes) {
    auto it = nodes.find(n.name);
    if (it == nodes.end()) continue;
    std::vector<Resource> r = DesiredState(c, n, it->second, with_agent);
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
