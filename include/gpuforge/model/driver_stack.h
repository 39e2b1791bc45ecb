#pragma once

// The NVIDIA driver stack a node gets, decided once for render, plan and lint: the driver
// branch, whether its kernel modules are the open ones, the kernel they load into, and how
// GPUDirect RDMA reaches GPU memory (#14 OS).

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "gpuforge/model/cluster.h"

namespace gpuforge::model {

// The driver branch planned when the inventory names none: R580, NVIDIA's current Long Term
// Support Branch for data center GPUs (H100, H200, B200), supported to August 2028 and the
// first with CUDA 13 (docs.nvidia.com/datacenter/tesla/drivers/, "Supported Drivers and CUDA
// Toolkit Versions" and "Driver Lifecycle"). Feature branches such as 560 get fixes for a few
// months only and are out of support; production and LTS branches get them for years.
inline constexpr std::string_view kDefaultDriverBranch = "580";

// Whether a GPU entry is NVIDIA's (or a model the catalogue does not know, which gpuforge
// treats as NVIDIA's), with at least one GPU.
bool IsNvidiaGpu(const GpuSpec& g);

// Whether the profile has such GPUs: the nodes that get the driver, DCGM and their files.
bool HasNvidiaGpus(const Profile& p);

// dcgm-exporter as a host service (the CUDA repository's datacenter-gpu-manager-exporter
// package, its nvidia-dcgm-exporter unit and gpuforge's drop-in): on NVIDIA GPU nodes where
// DCGM is planned (software.cuda set: the DCGM package is per CUDA major), unless the scheduler
// is Kubernetes, where the GPU Operator's DaemonSet runs the exporter on the same port (9400).
// software.monitoring.dcgm_exporter overrides that default: host, or external (the site runs it).
bool HostDcgmExporter(const Cluster& c, const Profile& p);

// rhel, rocky, almalinux (software.os.distro): dnf, yum.repos.d, RHEL's kernel and package
// names; anything else (debian, ubuntu, none given) is apt's. The one answer render, plan and
// lint use.
bool IsRhelFamily(std::string_view distro);

// software.driver.branch, else the first field of software.driver.version, else kDefaultDriverBranch.
std::string DriverBranchOf(const Software& sw);

// software.driver.kernel_modules, else open from branch 560 on (NVIDIA's installers default to
// the open modules there; Blackwell has no other), proprietary before.
bool OpenKernelModules(const Software& sw);

// software.os.kernel ("6.8"), else the distribution release's own kernel (ubuntu 24.04: 6.8,
// debian 12: 6.1, rhel 9: 5.14, ...); nullopt when neither is known.
std::optional<std::pair<int, int>> KernelOf(const Software& sw);

enum class GpuDirect { kDmaBuf, kPeermem };
const char* ToString(GpuDirect g);  // "dma-buf", "peermem"

struct GpuDirectChoice {
  GpuDirect mode = GpuDirect::kDmaBuf;
  bool stated = false;  // software.rdma.gpudirect says so
  // Why, for file headers and plan notes: "DMA-BUF (open kernel modules 580, kernel 6.8)".
  std::string why;
  // Why DMA-BUF cannot work here ("" when it can): proprietary modules, branch < 515, kernel < 5.12.
  std::string dmabuf_blocker;
};

// software.rdma.gpudirect, else DMA-BUF where it works (open kernel modules of branch 515 or
// later on Linux 5.12 or later: NCCL registers GPU memory with ibv_reg_dmabuf_mr, no extra
// module), else nvidia-peermem.
GpuDirectChoice ChooseGpuDirect(const Software& sw);

// Whether software.rdma.kind names a stack with the peer-memory API nvidia-peermem needs
// (MLNX_OFED or DOCA OFED; upstream rdma-core kernels do not export it).
bool HasPeerMemoryApi(const Software& sw);

}  // namespace gpuforge::model
