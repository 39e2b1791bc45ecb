#pragma once

// gpu.compute: fp32 FMA throughput per GPU, with gpuforge's own kernel (kernels/fma.cu): every
// thread runs independent FMA chains in registers, the grid fills every SM, and each thread's
// result is checked on the host (ERROR "wrong_data" on any difference). Metric "fp32_tflops"
// (TFLOP/s, 10^12, an FMA counted as 2 operations): `warmup` launches, then `repeats` rounds of
// `iters` launches between CUDA events; the value is the median round. Needs compute
// capability 8.0 or newer (SKIP "unsupported_gpu") and a build with kernels (SKIP
// "no_kernels").

#include <memory>
#include <span>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"

namespace gpuforge::probe::internal {

// `kernels`: the fatbin holding gpuforge_fma_fp32 (EmbeddedKernels() in the real probe).
std::unique_ptr<Probe> MakeGpuComputeProbe(CudaLoader cuda, std::span<const unsigned char> kernels);

}  // namespace gpuforge::probe::internal
