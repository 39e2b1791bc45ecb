#pragma once

// Copy bandwidth per GPU, through the CUDA driver API:
//   gpu.copy  device to device (HBM): metric "bandwidth" counts bytes read plus bytes written
//             (2 x size per copy, info counts=read+write), the convention of the PyTorch figure
//             in anchors.md; "copy_bandwidth" counts bytes copied (info counts=bytes_copied).
//   gpu.h2d   pinned host to device (PCIe), "bandwidth" in bytes copied.
//   gpu.d2h   device to pinned host (PCIe), "bandwidth" in bytes copied.
// GB/s are 10^9 bytes. Buffers hold a pattern written from the host (never zeros), the
// destination is poisoned first, and after timing the whole destination is read back and
// compared word by word: any difference is ERROR "wrong_data". Timing: `warmup` copies, then
// `repeats` rounds of `iters` copies between CUDA events on one stream; the value is the
// median round, the samples every round. Host buffers are not bound to the GPU's NUMA node.

#include <memory>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"

namespace gpuforge::probe::internal {

std::unique_ptr<Probe> MakeGpuCopyProbe(CudaLoader cuda);
std::unique_ptr<Probe> MakeGpuH2dProbe(CudaLoader cuda);
std::unique_ptr<Probe> MakeGpuD2hProbe(CudaLoader cuda);

}  // namespace gpuforge::probe::internal
