#pragma once

// Copy bandwidth per GPU, through the CUDA driver API:
//   gpu.copy  device to device (HBM): metric "bandwidth" counts bytes read plus bytes written
//             (2 x size per copy, info counts=read+write), the convention of the PyTorch figure
//             in anchors.md; "copy_bandwidth" counts bytes copied (info counts=bytes_copied).
//   gpu.h2d   pinned host to device (PCIe), "bandwidth" in bytes copied.
//   gpu.d2h   device to pinned host (PCIe), "bandwidth" in bytes copied.
// GB/s are 10^9 bytes. Buffers hold a pattern written from the host (never zeros), the
// destination is poisoned first, and after timing the whole destination is read back and
// compared word by word: any difference is ERROR "gpu.wrong_data". Timing: `warmup` copies, then
// `repeats` rounds of `iters` copies between CUDA events on one stream; the value is the
// median round, the samples every round. Host buffers are allocated, and the copies issued,
// by a thread bound to the GPU's local CPUs (numa.h), as nvbandwidth does; info host_memory
// says where it was bound, or why not.

#include <memory>
#include <string>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"

namespace gpuforge::probe::internal {

std::unique_ptr<Probe> MakeGpuCopyProbe(CudaLoader cuda);
std::unique_ptr<Probe> MakeGpuH2dProbe(CudaLoader cuda);
std::unique_ptr<Probe> MakeGpuD2hProbe(CudaLoader cuda);
// The same with the PCI devices' local_cpulist read under `sysfs` instead of /sys (tests).
std::unique_ptr<Probe> MakeGpuH2dProbeAt(CudaLoader cuda, std::string sysfs);
std::unique_ptr<Probe> MakeGpuD2hProbeAt(CudaLoader cuda, std::string sysfs);

}  // namespace gpuforge::probe::internal
