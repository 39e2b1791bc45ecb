// software.*: driver, CUDA and NCCL versions.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <charconv>
#include <optional>
#include <set>
#include <string>

#include "gpuforge/model/driver_stack.h"
#include "gpuforge/model/gpu_catalog.h"
#include "lint/rules.h"

namespace gpuforge::lint {

namespace {

// Driver branches the guides say not to run, with their reason.
struct BadBranch {
  std::string_view branch;
  std::string_view why;
};
constexpr std::array kBadBranches = {
    BadBranch{"535", "guide 000 reports bugs with H100/RCCL on it and recommends the 560 series"},
};

// Oldest driver branch each CUDA major version runs on (minor version compatibility).
// Source: NVIDIA CUDA Toolkit release notes, "CUDA Driver" section, table "CUDA Toolkit and
// Minimum Required Driver Version for CUDA Minor Version Compatibility" (Linux: 11.x >= 450,
// 12.x >= 525, 13.x >= 580).
struct CudaDriverFloor {
  int cuda_major;
  int min_driver;
};
constexpr std::array kCudaDriverFloors = {
    CudaDriverFloor{11, 450},
    CudaDriverFloor{12, 525},
    CudaDriverFloor{13, 580},
};

// The leading integer of "560.35.03" or "12.4"; nullopt when it does not start with digits.
std::optional<int> LeadingInt(std::string_view s) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr == s.data()) return std::nullopt;
  return v;
}

// The branch the driver belongs to: as stated, else the first field of the version.
std::string DriverBranch(const model::Software& s) {
  if (!s.driver_branch.empty()) return s.driver_branch;
  return s.driver_version.substr(0, s.driver_version.find('.'));
}

std::string DriverText(const model::Software& s) {
  if (s.driver_version.empty()) return fmt::format("branch {}", s.driver_branch);
  return s.driver_version;
}

void DriverBranchRule(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Software& s = c.software;
  std::string branch = DriverBranch(s);
  if (branch.empty()) return;
  for (const BadBranch& bad : kBadBranches) {
    if (branch != bad.branch) continue;
    ctx.Report(fmt::format("NVIDIA driver {} is on branch {}, which the guides say not to use: {}",
                           DriverText(s), branch, bad.why),
               {}, s.where);
  }
}

void Versions(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  if (GpuNodes(c).empty()) return;
  const model::Software& s = c.software;
  std::vector<std::string> missing;
  if (s.driver_branch.empty() && s.driver_version.empty()) missing.push_back("driver_version");
  if (s.cuda_version.empty()) missing.push_back("cuda_version");
  if (s.nccl_version.empty()) missing.push_back("nccl_version");
  if (!missing.empty()) {
    ctx.Report(fmt::format("software does not state {}; version checks cannot judge what is "
                           "not written down",
                           fmt::join(missing, ", ")),
               {}, s.where);
  }
  if (!s.driver_branch.empty() && !s.driver_version.empty() &&
      s.driver_version != s.driver_branch && !s.driver_version.starts_with(s.driver_branch + ".")) {
    ctx.Report(fmt::format("driver_version {} is not on driver_branch {}", s.driver_version,
                           s.driver_branch),
               {}, s.where);
  }
  std::optional<int> cuda = LeadingInt(s.cuda_version);
  std::optional<int> driver = LeadingInt(DriverBranch(s));
  if (!cuda || !driver) return;
  for (const CudaDriverFloor& floor : kCudaDriverFloors) {
    if (floor.cuda_major != *cuda || *driver >= floor.min_driver) continue;
    ctx.Report(Severity::kError,
               fmt::format("CUDA {} needs NVIDIA driver {} or newer, but the driver is {}",
                           s.cuda_version, floor.min_driver, DriverText(s)),
               {}, s.where);
  }
}

// #28 item 3: each GPU generation needs a driver and a CUDA toolkit that know it (the catalogue's
// min_driver and min_cuda). A B200 on driver 550 and CUDA 12.4 passed lint and plan installed
// nvidia-open-550. An older branch is an error; the same branch older than the first release
// NVIDIA lists the GPU in only warns, since that release is an upper bound on the true first.
void GpuMinimums(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  const model::Software& s = c.software;
  const std::string branch = model::DriverBranchOf(s);
  std::set<std::string> seen;
  for (const model::Node* n : GpuNodes(c)) {
    const model::Profile& p = c.ProfileOf(*n);
    for (const model::GpuSpec& g : p.gpus) {
      const model::GpuModelInfo* m = model::FindGpuModel(g.model);
      if (m == nullptr || m->vendor != "nvidia" || !seen.insert(std::string(m->name)).second) continue;
      if (!m->min_driver.empty()) {
        const std::string_view min_branch = m->min_driver.substr(0, m->min_driver.find('.'));
        std::optional<int> vs_branch = model::CompareVersions(branch, min_branch);
        const std::string stated = s.driver_version.empty() && s.driver_branch.empty()
                                       ? fmt::format("branch {} (gpuforge's default)", branch)
                                       : DriverText(s);
        if (vs_branch && *vs_branch < 0) {
          ctx.Report(Severity::kError,
                     fmt::format("{} needs NVIDIA driver {} or newer (branch {} or later), but the driver is {}; plan "
                                 "would install a driver that does not know the GPU",
                                 m->name, m->min_driver, min_branch, stated),
                     {p.name}, s.where);
        } else if (vs_branch && *vs_branch == 0 && !s.driver_version.empty()) {
          if (std::optional<int> v = model::CompareVersions(s.driver_version, m->min_driver); v && *v < 0) {
            ctx.Report(Severity::kWarning,
                       fmt::format("{}: NVIDIA lists it from driver {}, and the driver is {}, older on the same branch",
                                   m->name, m->min_driver, s.driver_version),
                       {p.name}, s.where);
          }
        }
      }
      if (!m->min_cuda.empty() && !s.cuda_version.empty()) {
        if (std::optional<int> v = model::CompareVersions(s.cuda_version, m->min_cuda); v && *v < 0) {
          ctx.Report(Severity::kError,
                     fmt::format("{} needs CUDA {} or newer (the first toolkit with its compute capability), but "
                                 "software.cuda is {}",
                                 m->name, m->min_cuda, s.cuda_version),
                     {p.name}, s.where);
        }
      }
    }
  }
}

// #14 GPUDirect: the path model::ChooseGpuDirect takes must exist on the node.
void GpuDirectRule(const model::Cluster& c, const model::Fabric&, RuleContext& ctx) {
  if (GpuNodes(c).empty() || !HasRdmaComputeFabric(c)) return;
  const model::Software& s = c.software;
  const model::GpuDirectChoice gd = model::ChooseGpuDirect(s);
  const SourcePos& at = s.rdma_where.line > 0 ? s.rdma_where : s.where;
  // Only a stated stack is known to lack the peer-memory API; an unstated one may be an image's.
  if (gd.mode == model::GpuDirect::kPeermem && !s.ofed_kind.empty() && !model::HasPeerMemoryApi(s)) {
    ctx.Report(fmt::format("GPUDirect RDMA would use nvidia-peermem{}, which needs the peer-memory API of MLNX_OFED or "
                           "DOCA OFED, but software.rdma.kind is {}: set it to doca-ofed, or use DMA-BUF (open kernel "
                           "modules of branch 515 or later on Linux 5.12 or later)",
                           gd.stated ? "" : " (" + gd.dmabuf_blocker + ")", s.ofed_kind),
               {}, at);
  }
  if (gd.stated && gd.mode == model::GpuDirect::kDmaBuf && !gd.dmabuf_blocker.empty()) {
    ctx.Report(fmt::format("software.rdma.gpudirect is dma-buf, but {}", gd.dmabuf_blocker), {}, at);
  }
}

}  // namespace

void AddSoftwareRules(std::vector<Rule>& rules) {
  rules.push_back({"software.driver_branch",
                   Severity::kError,
                   "NVIDIA driver on a branch the guides say not to use (535)",
                   "000_bf90931f775ecd9c.txt, Software Stack: What Actually Works (\"Don't use "
                   "535 - had bugs with H100/RCCL\")",
                   {},
                   &DriverBranchRule});
  rules.push_back({"software.versions",
                   Severity::kWarning,
                   "driver, CUDA and NCCL versions stated and consistent; a driver too old for "
                   "the CUDA major version is an error",
                   "000_bf90931f775ecd9c.txt, Software Stack: What Actually Works; NVIDIA CUDA "
                   "Toolkit release notes (minimum driver per CUDA major version)",
                   {},
                   &Versions});
  rules.push_back({"software.gpu_minimums",
                   Severity::kError,
                   "a driver branch or CUDA toolkit older than the GPU generation needs (B200: driver 570.133.20 and "
                   "CUDA 12.8); the same branch older than the first release listing the GPU warns",
                   "000_bf90931f775ecd9c.txt, Software Stack: What Actually Works (driver and CUDA per cluster); "
                   "NVIDIA open-gpu-kernel-modules README (Compatible GPUs), CUDA compatibility guides, GPU "
                   "Operator platform support; include/gpuforge/model/gpu_catalog.h",
                   {},
                   &GpuMinimums});
  rules.push_back({"software.gpudirect",
                   Severity::kError,
                   "GPUDirect RDMA path that cannot work: nvidia-peermem without MLNX_OFED/DOCA OFED, or DMA-BUF "
                   "without open kernel modules (515+) on Linux 5.12+",
                   "000_bf90931f775ecd9c.txt, Software Stack: What Actually Works (driver and OFED; the guide "
                   "does not cover GPUDirect); NVIDIA GPUDirect RDMA documentation, \"Using nvidia-peermem\" and "
                   "\"Using DMA-BUF\"; issue #14",
                   {},
                   &GpuDirectRule});
}

}  // namespace gpuforge::lint
