#pragma once

// The GPU probes, as the registry (probe/registry.cc) lists them. Each loads its NVIDIA library
// when it runs, never at construction, so listing probes on a machine without a GPU is free.
//
//   gpu.health   NVML: ECC, retired pages, row remapping, throttle reasons, power, temperature,
//                PCIe link, NVLink, persistence mode; Xid events from the kernel log.
//   gpu.copy     device-to-device copy bandwidth (HBM), per GPU.
//   gpu.h2d      pinned host-to-device copy bandwidth (PCIe), per GPU.
//   gpu.d2h      device-to-host copy bandwidth into pinned memory (PCIe), per GPU.
//   gpu.compute  fp32 FMA throughput of gpuforge's own kernel, per GPU.
//   gpu.gemm     bf16 GEMM throughput through cuBLASLt (when it loads), per GPU.
//
// None of them has run on a real GPU yet: they were written on machines without one, and the
// tests (tests/probe/gpu_*_test.cc) drive them through fake NVML, CUDA and cuBLASLt tables, the
// toolkit's stub libcuda and the real cuBLASLt library's symbols.

#include <memory>

#include "gpuforge/probe/probe.h"

namespace gpuforge::probe::internal {

std::unique_ptr<Probe> MakeGpuHealthProbe();
std::unique_ptr<Probe> MakeGpuCopyProbe();
std::unique_ptr<Probe> MakeGpuH2dProbe();
std::unique_ptr<Probe> MakeGpuD2hProbe();
std::unique_ptr<Probe> MakeGpuComputeProbe();
std::unique_ptr<Probe> MakeGpuGemmProbe();

}  // namespace gpuforge::probe::internal
