#pragma once

// The GPU kernels this build carries: a fatbin that cmake/GpuforgeKernels.cmake compiles from
// src/probe/gpu/kernels/*.cu with nvcc and embeds, for cuModuleLoadData. Empty when nvcc was
// not found at build time; the probes that need kernels then SKIP "gpu.no_kernels".

#include <span>

namespace gpuforge::probe::internal {

std::span<const unsigned char> EmbeddedKernels();

}  // namespace gpuforge::probe::internal
