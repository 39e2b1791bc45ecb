#include "gpuforge/plan/node_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpuforge/model/driver_stack.h"
#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/model/slurm_roles.h"
#include "gpuforge/render/monitoring.h"

namespace gpuforge::plan {
namespace {

bool RdmaNics(const model::Profile& p) {
  return std::any_of(p.nics.begin(), p.nics.end(), [](const model::NicSpec& x) { return x.kind != model::NetKind::kEthernet; });
}

bool NvSwitch(const model::Profile& p) {
  return std::any_of(p.gpus.begin(), p.gpus.end(), [](const model::GpuSpec& g) { return g.nvswitch; });
}

// Fabric Manager's and NSCQ's package names, which NVIDIA changed at R580 (#28 item 12: Rocky
// was planned Ubuntu's name). NVIDIA's gpu-driver-container, commit 78fa4ac ("add driver
// 580.65.06"), {ubuntu22.04,rhel9}/install.sh fabricmanager_install and nscq_install: from branch
// 580 both families name them without the branch (nvidia-fabricmanager, libnvidia-nscq, pinned
// to the driver version); before it Debian adds -BRANCH to both, and RHEL calls Fabric Manager
// nvidia-fabric-manager and NSCQ libnvidia-nscq-BRANCH.
int BranchNumber(std::string_view branch) {
  int n = 0;
  for (char ch : branch) {
    if (ch < '0' || ch > '9' || n > 100000) return 0;
    n = n * 10 + (ch - '0');
  }
  return n;
}

std::string FabricManagerPackage(const std::string& branch, bool deb) {
  if (BranchNumber(branch) >= 580) return "nvidia-fabricmanager";
  return deb ? "nvidia-fabricmanager-" + branch : "nvidia-fabric-manager";
}

std::string NscqPackage(const std::string& branch) {
  return BranchNumber(branch) >= 580 ? "libnvidia-nscq" : "libnvidia-nscq-" + branch;
}

// NVLink 5 (Blackwell HGX and NVL systems): Fabric Manager starts the NVLink subnet manager
// (nvlsm) beside itself, which needs the package and infiniband-diags (gpu-driver-container
// rhel9/install.sh nvlink5_pkgs_install; rhel9/nvidia-driver starts both through
// nvidia-fabricmanager-start.sh). Hopper's NVSwitch (H100, H200) needs neither.
bool NvLink5(const model::Profile& p) {
  return std::any_of(p.gpus.begin(), p.gpus.end(),
                     [](const model::GpuSpec& g) { return g.nvswitch && g.generation == "blackwell"; });
}

// "13.0" -> "13-0" (cuda-toolkit-13-0); "13" -> "13-0".
std::string CudaDashed(std::string_view v) {
  std::string major(v.substr(0, v.find('.'))), minor = "0";
  if (std::size_t dot = v.find('.'); dot != std::string_view::npos) {
    std::string_view rest = v.substr(dot + 1);
    minor = std::string(rest.substr(0, rest.find('.')));
  }
  return major + "-" + minor;
}

std::string Trim(std::string_view s) {
  std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// sysctl -n prints vectors with tabs; the inventory writes them with spaces.
std::string NormalSpaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : Trim(s)) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

bool Contains(std::span<const std::string> v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

const char* ToString(OsFamily f) { return f == OsFamily::kRhel ? "rhel" : "debian"; }

OsFamily FamilyOf(const model::Software& sw) {
  return model::IsRhelFamily(sw.os_distro) ? OsFamily::kRhel : OsFamily::kDebian;
}

const char* ToString(Part p) {
  switch (p) {
    case Part::kFiles: return "files";
    case Part::kPackages: return "packages";
    case Part::kModules: return "modules";
    case Part::kSysctl: return "sysctl";
    case Part::kServices: return "services";
    case Part::kAgent: return "agent";
  }
  return "?";
}

Parts AllParts() { return {Part::kFiles, Part::kPackages, Part::kModules, Part::kSysctl, Part::kServices, Part::kAgent}; }

Result<Parts> ParseParts(std::string_view list) {
  Parts out;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    std::size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view word = list.substr(pos, comma - pos);
    bool found = false;
    for (Part p : AllParts()) {
      if (word == ToString(p)) {
        out.insert(p);
        found = true;
      }
    }
    if (!found) {
      return Error{fmt::format("'{}' is not a part gpuforge manages; use files, packages, modules, sysctl, services, agent",
                               word)};
    }
    pos = comma + 1;
  }
  return out;
}

std::vector<DesiredPackage> DesiredPackages(const model::Cluster& c, const model::Node& n, OsFamily family) {
  std::vector<DesiredPackage> out;
  const model::Profile& p = c.ProfileOf(n);
  const model::Software& sw = c.software;
  const bool deb = family == OsFamily::kDebian;
  auto add = [&](std::string name, std::string version, Impact impact, std::string note, std::string reason) {
    out.push_back({std::move(name), std::move(version), impact, std::move(note), std::move(reason)});
  };
  const std::string branch = model::DriverBranchOf(sw);
  if (model::HasNvidiaGpus(p)) {
    {
      // The CUDA repository's per-branch meta package keeps the driver on its branch.
      const std::string reason = sw.driver_branch.empty() && sw.driver_version.empty()
                                     ? fmt::format("default production branch {} (software.driver not set)", branch)
                                     : "software.driver";
      // The open kernel modules come as nvidia-open-BRANCH; cuda-drivers-BRANCH pulls the
      // proprietary ones (NVIDIA driver installation guide, "Open GPU kernel modules").
      add((model::OpenKernelModules(sw) ? "nvidia-open-" : "cuda-drivers-") + branch, sw.driver_version, Impact::kReboot,
          "reboot to load the new driver (drain first)", reason);
      if (NvSwitch(p)) {
        add(FabricManagerPackage(branch, deb), sw.driver_version, Impact::kReboot,
            "must match the driver exactly; restarts with it", "software.driver (NVSwitch systems)");
      }
      if (NvLink5(p)) {
        add("nvlsm", "", Impact::kReboot, "Fabric Manager starts it on NVLink 5 systems",
            "NVLink 5 (Blackwell NVSwitch): NVIDIA gpu-driver-container nvlink5_pkgs_install");
        add("infiniband-diags", "", Impact::kLive, "none", "NVLink 5: nvlsm's tools");
      }
    }
    if (!sw.cuda_version.empty()) {
      add("cuda-toolkit-" + CudaDashed(sw.cuda_version), "", Impact::kLive, "next job", "software.cuda");
    }
    if (!sw.nccl_version.empty()) {
      add(deb ? "libnccl2" : "libnccl", sw.nccl_version, Impact::kLive, "next job", "software.nccl");
      add(deb ? "libnccl-dev" : "libnccl-devel", sw.nccl_version, Impact::kLive, "next job", "software.nccl");
    }
    if (!sw.cuda_version.empty()) {
      add("datacenter-gpu-manager-4-cuda" + sw.cuda_version.substr(0, sw.cuda_version.find('.')), "", Impact::kRestart,
          "restarts nvidia-dcgm", "guides 000 and 004, Monitoring");
      // DCGM reads NVSwitch health and counters through NSCQ, a library per driver branch
      // that must match the driver exactly (DCGM user guide, "Getting Started": HGX systems
      // with NVSwitch need libnvidia-nscq-<branch>); without it the switch fields are blank.
      if (NvSwitch(p)) {
        add(NscqPackage(branch), sw.driver_version, Impact::kRestart, "restarts nvidia-dcgm",
            "software.driver (NVSwitch monitoring with DCGM)");
      }
      // The exporter as a host service (render/monitoring.cc), pinned: its releases differ
      // in the fields they accept, and the counters file is checked against this one's.
      if (model::HostDcgmExporter(c, p)) {
        add(std::string(render::kDcgmExporterPackage), std::string(render::kDcgmExporterPackageVersion), Impact::kReload,
            "restarts the exporter (a gap in GPU metrics only)", "issue #14, Monitoring: pin the exporter version");
      }
    }
  }
  // MLNX_OFED / DOCA OFED: their kernel modules carry the peer-memory API nvidia-peermem
  // loads against (and replace the distribution's RDMA stack), so they are planned too.
  if (RdmaNics(p) && sw.ofed_kind == "doca-ofed") {
    add("doca-ofed", sw.rdma_core_version, Impact::kReboot, "reboot to load the new RDMA modules (drain first)",
        "software.rdma (DOCA OFED)");
  }
  if (RdmaNics(p) && sw.ofed_kind == "mlnx-ofed") {
    add("mlnx-ofed-kernel-dkms", sw.rdma_core_version, Impact::kReboot, "reboot to load the new RDMA modules (drain first)",
        "software.rdma (MLNX_OFED)");
    add("mlnx-ofed-kernel-utils", sw.rdma_core_version, Impact::kLive, "next job", "software.rdma (MLNX_OFED)");
  }
  if (RdmaNics(p) && (sw.ofed_kind.empty() || sw.ofed_kind == "rdma-core")) {
    add("rdma-core", sw.rdma_core_version, Impact::kLive, "next job", "software.rdma");
    add(deb ? "ibverbs-utils" : "libibverbs-utils", "", Impact::kLive, "next job", "software.rdma");
    add("perftest", "", Impact::kLive, "next job", "software.rdma");
  }
  const model::Scheduler& s = sw.scheduler;
  // Slurm by role (model/slurm_roles.h): munge wherever Slurm authenticates, slurmctld on the
  // controller, slurmd only where slurm.conf has a NodeName line, the commands on every node
  // with a role.
  const model::SlurmRole slurm = model::SlurmRoleOf(c, n);
  if (slurm.munge) add("munge", "", Impact::kRestart, "restarts munge", "software.scheduler (auth/munge)");
  if (slurm.slurmctld) add(deb ? "slurmctld" : "slurm-slurmctld", "", Impact::kRestart, "restarts slurmctld", "software.scheduler");
  if (slurm.slurmd) add(deb ? "slurmd" : "slurm-slurmd", "", Impact::kRestart, "restarts slurmd (drain first)", "software.scheduler");
  // AutoDetect=nvml needs slurmd's gpu/nvml plugin, a package of its own on Debian and Ubuntu
  // (model::kSlurmNvmlPluginPackage); lint slurm.autodetect_without_nvml says where it comes from.
  if (slurm.slurmd && s.gres_autodetect_nvml && deb && model::HasNvidiaGpus(p)) {
    add(std::string(model::kSlurmNvmlPluginPackage), "", Impact::kRestart, "restarts slurmd (drain first)",
        "software.scheduler.gres_autodetect: nvml (gpu_nvml.so; Debian contrib, Ubuntu multiverse)");
  }
  if (slurm.client) add(deb ? "slurm-client" : "slurm", "", Impact::kLive, "next command", "software.scheduler");
  // Accounting: slurmdbd on its node, and the MariaDB server there when the database is local
  // (storage_host localhost); a remote database is the site's.
  if (slurm.slurmdbd) {
    add(deb ? "slurmdbd" : "slurm-slurmdbd", "", Impact::kReload, "restarts slurmdbd", "software.scheduler.accounting");
  }
  if (slurm.database) {
    add("mariadb-server", "", Impact::kReload, "restarts mariadb", "software.scheduler.accounting (storage_host: localhost)");
  }
  if (s.kind == model::SchedulerKind::kKubernetes) {
    add("kubelet", "", Impact::kRestart, "restarts kubelet (drain first)", "software.scheduler");
  }
  for (const model::ExtraPackage& p : sw.packages) {
    // A package gpuforge derives too (the exporter, a pinned DCGM): the operator's pin wins,
    // in the derived package's place, so it is installed once and in its order.
    auto same = std::find_if(out.begin(), out.end(), [&](const DesiredPackage& d) { return d.name == p.name; });
    if (same != out.end()) {
      if (!p.version.empty()) same->version = p.version;
      same->reason += " (version from software.packages)";
      continue;
    }
    add(p.name, p.version, Impact::kLive, p.service.empty() ? "next use" : "restarts " + p.service, "software.packages");
  }
  return out;
}

DesiredNode DesiredNodeState(const model::Cluster& c, const model::Node& n, std::vector<DesiredFile> files,
                             const Parts& parts, const AgentBinary* agent, const ControllerFiles* local) {
  DesiredNode d;
  const model::Profile& p = c.ProfileOf(n);
  d.family = FamilyOf(c.software);
  const bool gpus = model::HasNvidiaGpus(p);
  auto insert = [&d](DesiredFile f) {
    auto at = std::lower_bound(d.files.begin(), d.files.end(), f.path,
                               [](const DesiredFile& x, const std::string& p) { return x.path < p; });
    d.files.insert(at, std::move(f));
  };
  auto shared = [](std::string_view path, unsigned mode, std::shared_ptr<const Blob> blob) {
    DesiredFile f;
    f.path = std::string(path);
    f.mode = mode;
    f.blob = std::move(blob);
    return f;
  };
  if (parts.count(Part::kFiles)) {
    d.files = std::move(files);
    const model::SlurmRole slurm = model::SlurmRoleOf(c, n);
    if (!slurm.slurmd) {
      for (DesiredFile& f : d.files) f.impact = ImpactWithoutSlurmd(f.path);
    }
    if (slurm.slurmctld && c.software.scheduler.accounting) {
      for (DesiredFile& f : d.files) {
        if (const ImpactRule* r = ImpactOnAccountingController(f.path)) f.impact = r;
      }
    }
    if (local != nullptr && local->munge_key && slurm.munge) {
      DesiredFile key = shared(kMungeKeyPath, kMungeKeyMode, local->munge_key);
      key.owner = std::string(kMungeKeyOwner);
      key.secret = true;
      insert(std::move(key));
    }
    // slurmdbd.conf's Include (render/slurm_accounting.cc): StoragePass from the operator's file.
    if (local != nullptr && local->slurmdbd_pass && slurm.slurmdbd) {
      DesiredFile pass = shared(model::kSlurmdbdPassPath, model::kSlurmdbdMode, local->slurmdbd_pass);
      pass.owner = std::string(model::kSlurmdbdOwner);
      pass.secret = true;
      insert(std::move(pass));
    }
    // What the rendered health check program reads (render/slurm.cc): the inventory it was
    // rendered from and the pass marks of the GPU models, at the paths the program names.
    if (local != nullptr && slurm.slurmd && c.software.scheduler.health_check) {
      if (local->inventory) insert(shared(kNodeInventoryPath, 0644, local->inventory));
      if (local->model_table) insert(shared(kNodeModelTablePath, 0644, local->model_table));
    }
  } else {
    d.manage_removals = false;
  }
  if (parts.count(Part::kAgent) && agent != nullptr && agent->blob) {
    insert(shared(kAgentPath, 0755, agent->blob));
    d.agent_arch = agent->arch;
  }
  for (const DesiredFile& f : d.files) {
    if (f.path.starts_with("/etc/apt/sources.list.d/gpuforge-") || f.path.starts_with("/etc/yum.repos.d/gpuforge-")) {
      d.repository_files.push_back(f.path);
    }
  }
  if (parts.count(Part::kPackages)) d.packages = DesiredPackages(c, n, d.family);
  // The same conditions render uses for modules-load.d, sysctl.d and the systemd preset.
  if (parts.count(Part::kModules) && gpus && RdmaNics(p) && model::ChooseGpuDirect(c.software).mode == model::GpuDirect::kPeermem) {
    d.modules.push_back("nvidia-peermem");
  }
  if (parts.count(Part::kSysctl) && gpus) d.sysctls.push_back({"kernel.numa_balancing", "0"});
  if (parts.count(Part::kServices)) {
    if (gpus) {
      d.services.push_back("nvidia-persistenced");
      if (NvSwitch(p)) d.services.push_back("nvidia-fabricmanager");
      if (!c.software.cuda_version.empty()) d.services.push_back("nvidia-dcgm");
      // After the host engine it connects to (-r, templates/dcgm-exporter.conf.mustache).
      if (model::HostDcgmExporter(c, p)) d.services.push_back(std::string(render::kDcgmExporterService));
    }
    const model::Scheduler& s = c.software.scheduler;
    // munge first: slurmctld and slurmd fail to start without its socket.
    const model::SlurmRole slurm = model::SlurmRoleOf(c, n);
    if (slurm.munge) d.services.push_back("munge");
    // The database before slurmdbd, slurmdbd before slurmctld: slurmctld registers the cluster
    // with slurmdbd when it starts.
    if (slurm.database) d.services.push_back("mariadb");
    if (slurm.slurmdbd) d.services.push_back("slurmdbd");
    if (slurm.slurmctld) d.services.push_back("slurmctld");
    if (slurm.slurmd) d.services.push_back("slurmd");
    if (s.kind == model::SchedulerKind::kKubernetes) d.services.push_back("kubelet");
    for (const model::ExtraPackage& p : c.software.packages) {
      if (!p.service.empty() && std::find(d.services.begin(), d.services.end(), p.service) == d.services.end()) {
        d.services.push_back(p.service);
      }
    }
  }
  return d;
}

bool VersionMatches(std::string_view installed, std::string_view pin) {
  if (pin.empty()) return !installed.empty();
  if (installed == pin) return true;
  // An epoch the pin does not state is not part of the comparison.
  if (pin.find(':') == std::string_view::npos) {
    if (std::size_t colon = installed.find(':'); colon != std::string_view::npos) installed.remove_prefix(colon + 1);
  }
  if (installed == pin) return true;
  return installed.size() > pin.size() && installed.starts_with(pin) &&
         std::string_view("-+~").find(installed[pin.size()]) != std::string_view::npos;
}

std::string InstallSpec(OsFamily f, const DesiredPackage& p) {
  if (p.version.empty()) return p.name;
  if (f == OsFamily::kRhel) return p.name + "-" + p.version;
  // apt matches a version glob; a pin that already names the Debian revision is exact.
  return p.name + "=" + p.version + (p.version.find('-') == std::string::npos ? "-*" : "");
}

std::optional<OsFamily> ReportedFamily(const ActualNode& a) {
  auto has = [&](std::string_view word) {
    if (a.os_id == word) return true;
    std::size_t pos = 0;
    while (pos < a.os_like.size()) {
      std::size_t sp = a.os_like.find(' ', pos);
      if (sp == std::string::npos) sp = a.os_like.size();
      if (std::string_view(a.os_like).substr(pos, sp - pos) == word) return true;
      pos = sp + 1;
    }
    return false;
  };
  if (has("debian") || has("ubuntu")) return OsFamily::kDebian;
  for (std::string_view w : {"rhel", "rocky", "almalinux", "centos", "fedora"}) {
    if (has(w)) return OsFamily::kRhel;
  }
  return std::nullopt;
}

Result<NodePlan> PlanNodeState(std::string_view node, const DesiredNode& d, const ActualNode& a) {
  if (a.packages.size() != d.packages.size() || a.modules.size() != d.modules.size() ||
      a.sysctls.size() != d.sysctls.size() || a.services.size() != d.services.size() ||
      a.managed.size() != a.managed_files.size()) {
    return Error{fmt::format("node {}: the node's state does not answer the desired state item for item", node)};
  }
  if (!d.packages.empty()) {
    std::optional<OsFamily> f = ReportedFamily(a);
    if (!f) {
      return Error{fmt::format("node {}: OS '{}' (like '{}') is neither Debian- nor RHEL-like; gpuforge cannot manage "
                               "its packages (use --only to leave packages out)",
                               node, a.os_id, a.os_like)};
    }
    if (*f != d.family) {
      return Error{fmt::format("node {}: the inventory says a {} family OS (software.os.distro) but the node runs '{}'",
                               node, ToString(d.family), a.os_id)};
    }
  }
  Result<NodePlan> files = PlanNode(node, d.files, a.files);
  if (!files.ok()) return files.error();
  NodePlan plan = std::move(*files);
  plan.managed = a.managed;
  if (d.manage_removals) plan.pending = a.pending;  // file handlers belong to the files part
  if (d.manage_removals) plan.leftovers = a.leftovers;
  for (FileChange& f : plan.files) {
    if (f.path != kAgentPath || d.agent_arch.empty() || a.arch == d.agent_arch) continue;
    f.action = Action::kNone;
    f.note = fmt::format("not pushed: the node is {}, this build {}", a.arch, d.agent_arch);
  }

  if (d.manage_removals) {
    for (std::size_t i = 0; i < a.managed.size(); ++i) {
      const std::string& path = a.managed[i];
      bool desired = std::any_of(d.files.begin(), d.files.end(), [&](const DesiredFile& f) { return f.path == path; });
      if (desired || a.managed_files[i].kind != ActualFile::Kind::kRegular) continue;  // gone already, or not ours
      if (path == kAgentPath && d.agent_arch.empty()) continue;  // the agent is not managed in this run
      const ImpactRule& rule = ImpactFor(path);
      FileChange c;
      c.path = path;
      c.action = Action::kRemove;
      c.mode_from = a.managed_files[i].mode;
      c.owner_from = a.managed_files[i].owner;
      c.secret = IsSecretPath(path);
      c.impact = rule.impact;
      c.handler = std::string(rule.handler);
      c.note = std::string(rule.note);
      plan.files.push_back(std::move(c));
    }
  }

  for (std::size_t i = 0; i < d.packages.size(); ++i) {
    const DesiredPackage& p = d.packages[i];
    const std::string& have = a.packages[i];
    ItemChange c{ItemChange::Kind::kPackage, p.name, Action::kNone, have,
                 p.version.empty() ? "any version" : p.version, InstallSpec(d.family, p), p.impact, p.note};
    if (have.empty()) {
      c.action = Action::kCreate;
    } else if (!VersionMatches(have, p.version)) {
      c.action = Action::kChange;
    }
    plan.items.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < d.modules.size(); ++i) {
    ItemChange c{ItemChange::Kind::kModule, d.modules[i], a.modules[i] ? Action::kNone : Action::kCreate,
                 a.modules[i] ? "loaded" : "", "loaded", d.modules[i], Impact::kLive, "modprobe now; modules-load.d at boot"};
    plan.items.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < d.sysctls.size(); ++i) {
    const DesiredSysctl& s = d.sysctls[i];
    const std::optional<std::string>& have = a.sysctls[i];
    ItemChange c{ItemChange::Kind::kSysctl, s.key, Action::kNone, have ? NormalSpaces(*have) : "(no such key)", s.value,
                 s.value, Impact::kLive, "sysctl -w now; sysctl.d at boot"};
    if (!have || NormalSpaces(*have) != NormalSpaces(s.value)) c.action = Action::kChange;
    plan.items.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < d.services.size(); ++i) {
    const ServiceState& st = a.services[i];
    const bool enabled = st.enabled == "enabled" || st.enabled == "enabled-runtime" || st.enabled == "static" ||
                         st.enabled == "alias" || st.enabled == "indirect" || st.enabled == "generated";
    const bool active = st.active == "active" || st.active == "reloading";
    std::string want = std::string(enabled ? "" : "enable") + (enabled || active ? "" : " ") + (active ? "" : "start");
    ItemChange c{ItemChange::Kind::kService, d.services[i], Action::kNone,
                 st.enabled == "not-found" ? "" : st.enabled + ", " + st.active, "enabled, active", want, Impact::kLive,
                 ""};
    if (st.enabled == "not-found") {
      c.action = Action::kCreate;
      c.want = "enable start";
      c.note = "its package installs the unit";
    } else if (st.enabled == "masked") {
      return Error{fmt::format("node {}: service {} is masked; gpuforge does not unmask what someone masked on purpose",
                               node, d.services[i])};
    } else if (!enabled || !active) {
      c.action = Action::kChange;
    }
    plan.items.push_back(std::move(c));
  }
  return plan;
}

std::vector<std::string> NextManifest(const DesiredNode& d, std::span<const std::string> old_manifest,
                                      std::span<const std::string> written, std::span<const std::string> removed,
                                      bool succeeded) {
  std::set<std::string> out;
  if (succeeded && d.manage_removals) {
    for (const DesiredFile& f : d.files) out.insert(f.path);
  } else {
    for (const std::string& p : old_manifest) {
      if (!Contains(removed, p)) out.insert(p);
    }
    for (const std::string& p : written) out.insert(p);
    if (succeeded) {
      for (const DesiredFile& f : d.files) out.insert(f.path);
    }
  }
  return {out.begin(), out.end()};
}

}  // namespace gpuforge::plan
