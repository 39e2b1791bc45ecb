#pragma once

// How GPU probes report trouble: each GPU is measured on its own, a GPU that fails does not
// stop the others, and the result names every GPU that failed.

#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"

namespace gpuforge::probe::internal {

// Why one GPU could not be measured. `code` is stable ("cuda_error", "wrong_data",
// "nvml_error", "cublas_error", "bad_timing"); `reason` is for people and names the call.
struct Failure {
  std::string code;
  std::string reason;
};

// One result from what the GPUs gave: ok when nothing failed, else error with the first
// failure's code and every failure's reason, keeping the measurements that were taken.
ProbeResult Finish(std::string probe, std::vector<Measurement> measurements,
                   const std::vector<Failure>& failures);

}  // namespace gpuforge::probe::internal
