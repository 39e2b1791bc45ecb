#include "gpuforge/model/driver_stack.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::model {
namespace {

std::optional<int> LeadingInt(std::string_view s) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr == s.data()) return std::nullopt;
  return v;
}

std::optional<std::pair<int, int>> MajorMinor(std::string_view s) {
  std::optional<int> major = LeadingInt(s);
  if (!major) return std::nullopt;
  std::size_t dot = s.find('.');
  std::optional<int> minor = dot == std::string_view::npos ? 0 : LeadingInt(s.substr(dot + 1));
  if (!minor) return std::nullopt;
  return std::pair{*major, *minor};
}

struct ReleaseKernel {
  std::string_view distro, version, kernel;
};
// The kernel each release ships (its GA kernel; HWE kernels are newer still).
constexpr std::array kReleaseKernels = {
    ReleaseKernel{"ubuntu", "20.04", "5.4"},   ReleaseKernel{"ubuntu", "22.04", "5.15"},
    ReleaseKernel{"ubuntu", "24.04", "6.8"},   ReleaseKernel{"debian", "11", "5.10"},
    ReleaseKernel{"debian", "12", "6.1"},      ReleaseKernel{"debian", "13", "6.12"},
    ReleaseKernel{"rhel", "8", "4.18"},        ReleaseKernel{"rhel", "9", "5.14"},
    ReleaseKernel{"rhel", "10", "6.12"},
};

}  // namespace

bool IsNvidiaGpu(const GpuSpec& g) {
  if (g.count <= 0) return false;
  const GpuModelInfo* info = FindGpuModel(g.model);
  return info == nullptr || info->vendor == "nvidia";
}

bool HasNvidiaGpus(const Profile& p) { return std::any_of(p.gpus.begin(), p.gpus.end(), IsNvidiaGpu); }

bool HostDcgmExporter(const Cluster& c, const Profile& p) {
  if (!HasNvidiaGpus(p) || c.software.cuda_version.empty()) return false;
  if (!c.software.dcgm_exporter.empty()) return c.software.dcgm_exporter == "host";
  return c.software.scheduler.kind != SchedulerKind::kKubernetes;
}

std::string DriverBranchOf(const Software& sw) {
  if (!sw.driver_branch.empty()) return sw.driver_branch;
  if (!sw.driver_version.empty()) return sw.driver_version.substr(0, sw.driver_version.find('.'));
  return std::string(kDefaultDriverBranch);
}

bool OpenKernelModules(const Software& sw) {
  if (!sw.driver_kernel_modules.empty()) return sw.driver_kernel_modules == "open";
  return LeadingInt(DriverBranchOf(sw)).value_or(0) >= 560;
}

bool IsRhelFamily(std::string_view distro) { return distro == "rhel" || distro == "rocky" || distro == "almalinux"; }

std::optional<std::pair<int, int>> KernelOf(const Software& sw) {
  if (!sw.os_kernel.empty()) return MajorMinor(sw.os_kernel);
  // Rocky and AlmaLinux ship RHEL's kernel; a point release ("9.4") has its major's kernel.
  std::string_view distro = sw.os_distro;
  if (IsRhelFamily(distro)) distro = "rhel";
  const std::string_view version = distro == "ubuntu" ? std::string_view(sw.os_version)
                                                      : std::string_view(sw.os_version).substr(0, sw.os_version.find('.'));
  for (const ReleaseKernel& r : kReleaseKernels) {
    if (r.distro == distro && r.version == version) return MajorMinor(r.kernel);
  }
  return std::nullopt;
}

const char* ToString(GpuDirect g) { return g == GpuDirect::kDmaBuf ? "dma-buf" : "peermem"; }

bool HasPeerMemoryApi(const Software& sw) { return sw.ofed_kind == "mlnx-ofed" || sw.ofed_kind == "doca-ofed"; }

GpuDirectChoice ChooseGpuDirect(const Software& sw) {
  GpuDirectChoice c;
  const std::string branch = DriverBranchOf(sw);
  const bool open = OpenKernelModules(sw);
  const std::optional<std::pair<int, int>> kernel = KernelOf(sw);
  const std::string kernel_text = kernel ? fmt::format("kernel {}.{}", kernel->first, kernel->second) : "kernel unknown";
  if (!open) {
    c.dmabuf_blocker = fmt::format("the proprietary kernel modules of branch {} do not export GPU memory as DMA-BUF", branch);
  } else if (LeadingInt(branch).value_or(0) < 515) {
    c.dmabuf_blocker = fmt::format("driver branch {} is older than 515, the first whose open modules export DMA-BUF", branch);
  } else if (!kernel) {
    c.dmabuf_blocker = "the kernel is not known (set software.os.kernel); DMA-BUF needs Linux 5.12 or later";
  } else if (*kernel < std::pair{5, 12}) {
    c.dmabuf_blocker = fmt::format("{} is older than 5.12, the first with RDMA DMA-BUF support", kernel_text);
  }
  c.stated = !sw.gpudirect.empty();
  if (c.stated) {
    c.mode = sw.gpudirect == "peermem" ? GpuDirect::kPeermem : GpuDirect::kDmaBuf;
  } else {
    c.mode = c.dmabuf_blocker.empty() ? GpuDirect::kDmaBuf : GpuDirect::kPeermem;
  }
  const std::string source = c.stated ? "software.rdma.gpudirect" : "default";
  if (c.mode == GpuDirect::kDmaBuf) {
    c.why = fmt::format("DMA-BUF ({}: {} kernel modules {}, {}); no nvidia-peermem", source, open ? "open" : "proprietary",
                        branch, kernel_text);
  } else {
    c.why = fmt::format("nvidia-peermem ({}{}), with the {} peer-memory API", source,
                        c.stated || c.dmabuf_blocker.empty() ? "" : ": " + c.dmabuf_blocker,
                        sw.ofed_kind.empty() ? "OFED" : sw.ofed_kind);
  }
  return c;
}

}  // namespace gpuforge::model
