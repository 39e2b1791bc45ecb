// OS and driver settings production GPU images push (anchors.md, "GPU node OS settings"):
// limits, sysctl, kernel modules, service presets, and kernel command-line notes.

#include <fmt/format.h>

#include <algorithm>

#include "gpuforge/model/driver_stack.h"
#include "gpuforge/model/gpu_catalog.h"
#include "gpuforge/render/monitoring.h"
#include "render/families.h"

namespace gpuforge::render {

namespace {

// software.repositories, as the node's package manager reads them. The family comes from
// software.os.distro; without one, Debian's (the README's platform).
void AddRepositoryJobs(const model::Cluster& c, const model::Node& n, Plan* plan) {
  const bool rhel = IsRhelFamily(c.software.os_distro);
  for (const model::Repository& r : c.software.repositories) {
    nlohmann::json comps = nlohmann::json::array();
    for (const std::string& comp : r.components) comps.push_back({{"name", comp}});
    if (rhel) {
      plan->jobs.push_back({n.name, fmt::format("/etc/yum.repos.d/gpuforge-{}.repo", r.name), "yum.repo.mustache",
                            {{"name", r.name}, {"url", r.url}, {"gpgcheck", r.trusted ? 0 : 1}, {"gpgkey", r.signed_by}},
                            CommentStyle::kHash, "0644"});
    } else {
      std::string options = r.trusted ? "trusted=yes" : (r.signed_by.empty() ? "" : "signed-by=" + r.signed_by);
      plan->jobs.push_back({n.name, fmt::format("/etc/apt/sources.list.d/gpuforge-{}.list", r.name),
                            "apt-source.list.mustache",
                            {{"name", r.name}, {"url", r.url}, {"suite", r.suite}, {"components", comps}, {"options", options}},
                            CommentStyle::kHash, "0644"});
    }
  }
}

}  // namespace

void AddOsJobs(const model::Cluster& c, const Options& o, Plan* plan) {
  for (const model::Node* n : SelectedNodes(c, o)) {
    const model::Profile& p = c.ProfileOf(*n);
    bool gpus = model::HasNvidiaGpus(p);
    bool rdma = std::any_of(p.nics.begin(), p.nics.end(), [](const model::NicSpec& x) { return x.kind != model::NetKind::kEthernet; });
    bool nvswitch = std::any_of(p.gpus.begin(), p.gpus.end(), [](const model::GpuSpec& g) { return g.nvswitch; });
    // memlock unlimited only where RDMA and NCCL pin memory: nodes with GPUs, for everyone or
    // for software.os.memlock_group (#14). Other nodes (controller, login) keep the
    // distribution's limit; nofile is raised everywhere.
    plan->jobs.push_back({n->name, "/etc/security/limits.d/90-gpuforge.conf", "limits.conf.mustache",
                          {{"memlock", gpus},
                           {"domain", c.software.memlock_group.empty() ? std::string("*") : "@" + c.software.memlock_group}}, CommentStyle::kHash, "0644"});
    AddRepositoryJobs(c, *n, plan);
    if (!gpus) continue;
    plan->jobs.push_back({n->name, "/etc/sysctl.d/90-gpuforge.conf", "sysctl.conf.mustache", nlohmann::json::object(),
                          CommentStyle::kHash, "0644"});
    if (rdma) {
      // The file says which GPUDirect path the node takes; only peermem loads a module.
      const model::GpuDirectChoice gd = model::ChooseGpuDirect(c.software);
      nlohmann::json modules = nlohmann::json::array();
      if (gd.mode == model::GpuDirect::kPeermem) modules.push_back({{"name", "nvidia-peermem"}});
      plan->jobs.push_back({n->name, "/etc/modules-load.d/90-gpuforge.conf", "modules-load.conf.mustache",
                            {{"modules", modules}, {"gpudirect", gd.why}, {"dmabuf", gd.mode == model::GpuDirect::kDmaBuf}},
                            CommentStyle::kHash, "0644"});
    }
    nlohmann::json units = nlohmann::json::array({{{"unit", "nvidia-persistenced.service"}}});
    if (nvswitch) units.push_back({{"unit", "nvidia-fabricmanager.service"}});
    units.push_back({{"unit", "nvidia-dcgm.service"}});
    if (model::HostDcgmExporter(c, p)) units.push_back({{"unit", std::string(kDcgmExporterService) + ".service"}});
    plan->jobs.push_back({n->name, "/etc/systemd/system-preset/50-gpuforge.preset", "systemd.preset.mustache",
                          {{"units", units}}, CommentStyle::kHash, "0644"});
    // A preset only acts on units with an [Install] section; the distributions' persistenced
    // unit has none (static) and runs the daemon with --no-persistence-mode. The drop-in gives
    // it both; systemctl reads [Install] from drop-ins since systemd 236 (systemd/systemd
    // PR #7158, src/shared/install.c).
    plan->jobs.push_back({n->name, "/etc/systemd/system/nvidia-persistenced.service.d/gpuforge.conf", "nvidia-persistenced.conf.mustache",
                          nlohmann::json::object(), CommentStyle::kHash, "0644"});
    std::string vendor = p.cpu.model.find("EPYC") != std::string::npos ? "amd" : "intel";
    plan->jobs.push_back({n->name, "/etc/gpuforge/kernel-cmdline.recommended", "kernel-cmdline.mustache",
                          {{"amd", vendor == "amd"}, {"intel", vendor == "intel"}, {"rdma", rdma}}, CommentStyle::kHash, "0644"});
  }
}

}  // namespace gpuforge::render
