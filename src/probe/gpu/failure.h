#pragma once

// How GPU probes report trouble: each GPU is measured on its own, a GPU that fails does not
// stop the others, and the result names every GPU that failed.

#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"

namespace gpuforge::probe::internal {

// Why one GPU could not be measured. `code` is stable ("gpu.cuda_error", "gpu.wrong_data",
// "gpu.nvml_error", "gpu.cublas_error", "probe.bad_timing"; src/validate/codes.cc lists them all); `reason` is for people and names the call.
struct Failure {
  std::string code;
  std::string reason;
};

// One result from what the GPUs gave: ok when nothing failed, else error with the first
// failure's code and every failure's reason, keeping the measurements that were taken.
ProbeResult Finish(std::string probe, std::vector<Measurement> measurements,
                   const std::vector<Failure>& failures);

}  // namespace gpuforge::probe::internal
