// Kernels gpuforge carries in its binary; cmake/GpuforgeKernels.cmake compiles this file with
// nvcc into a fatbin (sm_80, sm_90, newer SASS where nvcc has it, compute_90 PTX) and embeds it.
// extern "C" keeps the names the driver API looks them up by. Never run on a real GPU while
// written: only compiled.

#include "probe/gpu/kernels/fma_abi.h"

using gpuforge::probe::internal::kFmaChains;
using gpuforge::probe::internal::kFmaStartMask;

// FMA-bound fp32 throughput: kFmaChains independent FMA chains per thread keep the FMA pipes
// busy without touching memory until the one store at the end, which lets the host check
// every thread (see fma_abi.h). `a` and `b` come at run time so the compiler cannot fold them.
extern "C" __global__ void gpuforge_fma_fp32(float* out, float a, float b, int loops) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  float x[kFmaChains];
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) x[j] = static_cast<float>((t & kFmaStartMask) + j);
#pragma unroll 4
  for (int i = 0; i < loops; ++i) {
#pragma unroll
    for (int j = 0; j < kFmaChains; ++j) x[j] = fmaf(x[j], a, b);
  }
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kFmaChains; ++j) sum += x[j];
  out[t] = sum;
}

// nccl.allreduce's fill and verify kernels.
#include "probe/gpu/kernels/nccl_check.cu"
