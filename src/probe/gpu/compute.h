#pragma once

// gpu.compute: fp32 FMA throughput per GPU, with gpuforge's own kernel (kernels/fma.cu): every
// thread runs independent FMA chains in registers, the grid fills every SM, and each thread's
// result is checked on the host (ERROR "gpu.wrong_data" on any difference). Metric "fp32_tflops"
// (TFLOP/s, 10^12, an FMA counted as 2 operations): `warmup` launches, then `repeats` rounds of
// `iters` launches between CUDA events; the value is the median round. Needs compute
// capability 8.0 or newer (SKIP "gpu.unsupported") and a build with kernels (SKIP
// "gpu.no_kernels").
//
// Its own reference, apart from gpu.gemm's: the kernel's ceiling is the GPU's FMA peak, SMs x
// fp32 lanes per SM x 2 x peak SM clock (CU_DEVICE_ATTRIBUTE_CLOCK_RATE), about 67 TFLOP/s on
// an H200 (132 x 128 x 2 x 1980 MHz). The measurement's info carries peak_tflops and how it
// was reached, and a second metric "fp32_peak_fraction" (measured / peak, per GPU) is what
// validate holds against gpu.compute.min_peak_fraction. No peak (an unknown compute
// capability, no clock) means no fraction, never a guessed one.

#include <memory>
#include <span>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cuda_api.h"

namespace gpuforge::probe::internal {

#if GPUFORGE_HAVE_CUDA
// fp32 FMA lanes per SM for a compute capability; 0 when this table does not know it.
int Fp32LanesPerSm(int cc_major, int cc_minor);
// The GPU's FMA peak in TFLOP/s, 0 when a figure it needs is unknown.
double FmaPeakTflops(const CudaGpu& gpu);
#endif

// `kernels`: the fatbin holding gpuforge_fma_fp32 (EmbeddedKernels() in the real probe).
std::unique_ptr<Probe> MakeGpuComputeProbe(CudaLoader cuda, std::span<const unsigned char> kernels);

}  // namespace gpuforge::probe::internal
