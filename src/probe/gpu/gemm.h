#pragma once

// gpu.gemm: bf16 matrix multiply throughput per GPU through cuBLASLt, the measurement behind
// the "bf16 8192^3 matmul" figure in anchors.md: D = A x B with M = N = K = `dim`, A and B
// bf16 (column-major, no transpose), fp32 accumulation, bf16 output, the first algorithm
// cuBLASLt's heuristic offers with a 32 MiB workspace. Inputs are small signed values
// (+-0.5, +-1, +-2, never zero) so every dot product is exact in fp32; after timing, a 32 x 32
// sample of D is compared with the host's product (ERROR "gpu.wrong_data" beyond bf16 rounding).
// Metric "bf16_tflops" (TFLOP/s, 2 M N K per multiply), median of timed rounds.
// SKIP "gpu.no_cublaslt" when the library does not load, "gpu.unsupported" below compute 8.0.

#include <memory>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/cublaslt_api.h"
#include "probe/gpu/cuda_api.h"

namespace gpuforge::probe::internal {

std::unique_ptr<Probe> MakeGpuGemmProbe(CudaLoader cuda, CublasLtLoader cublaslt);

}  // namespace gpuforge::probe::internal
