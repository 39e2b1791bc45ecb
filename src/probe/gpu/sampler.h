#pragma once

// Burn-in's 1 Hz read of one GPU through NVML (#30 part 3): what one sample holds
// (probe/gpu_series.h GpuSample). A call NVML does not support on this GPU, or that an old
// driver lacks, leaves its field absent (the judge then says "not sampled", never passes). A call
// that says the GPU is lost or the driver is gone ends the read with an error naming the call:
// the GPU's series ends there, with that reason.

#include <optional>

#include "gpuforge/base/result.h"
#include "gpuforge/probe/gpu_series.h"
#include "probe/gpu/nvml_api.h"

namespace gpuforge::probe::internal {

gpuforge::Result<GpuSample> ReadGpuSample(const NvmlApi& api, nvml::Device d);

// What the GPU's PCIe link trains to, read once per run.
struct PcieMax {
  std::optional<int> gen;
  std::optional<int> width;
};
PcieMax ReadPcieMax(const NvmlApi& api, nvml::Device d);

}  // namespace gpuforge::probe::internal
