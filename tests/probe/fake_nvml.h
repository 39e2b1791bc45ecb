#pragma once

// A fake NVML for the probes' tests: function pointers (an NvmlApi) that answer from the
// recorded state of each fake GPU in *g_nvml. gpu.health's tests and burn-in's sampler's share
// it. No GPU or NVML is needed; none was used to write it.

#include <set>
#include <string>
#include <vector>

#include "probe/gpu/nvml_api.h"

namespace gpuforge::probe::internal {

struct FakeNvmlGpu {
  std::string bus_id = "00000000:1B:00.0";
  std::string name = "NVIDIA H200";
  std::string uuid = "GPU-00000000-0000-0000-0000-000000000000";
  unsigned long long ecc_uncorrected_volatile = 0, ecc_uncorrected_aggregate = 0;
  unsigned long long ecc_corrected_volatile = 3;
  unsigned long long sram_corrected = 12, dram_corrected = 40;
  unsigned corrected_rows = 1, uncorrected_rows = 0, remap_pending = 0, remap_failure = 0;
  unsigned long long clock_reasons = nvml::kReasonGpuIdle;
  unsigned power_mw = 87123, limit_mw = 700000, temperature = 34;
  unsigned gen = 5, gen_max = 5, width = 16, width_max = 16;
  std::vector<int> nvlinks = std::vector<int>(18, 1);  // 1 up, 0 down
  // Burn-in's sampler (probe/gpu/sampler.h): clocks, the PCIe replay counter and the NVLink
  // error counters (every link's replay, recovery, CRC flit and CRC data count, summed).
  unsigned sm_clock = 1980, mem_clock = 3201;
  unsigned pcie_replay = 0;
  unsigned long long nvlink_errors_per_counter = 0;
  // NVML_FI_DEV_MEMORY_TEMP through nvmlDeviceGetFieldValues: the field's own return (a GDDR
  // board answers NOT_SUPPORTED here while the call succeeds), its value and its valueType.
  nvml::Return hbm_temp_rc = nvml::kSuccess;
  int hbm_temp_type = nvml::kValueUnsignedInt;
  double hbm_temp = 47;
  int persistence = 1;
  // Calls that answer NVML_ERROR_NOT_SUPPORTED, and one call that fails with `fail_rc`.
  std::set<std::string> not_supported = {"nvmlDeviceGetRetiredPagesPendingStatus"};
  std::string fail_call;
  nvml::Return fail_rc = nvml::kGpuIsLost;
};

struct FakeNvml {
  std::vector<FakeNvmlGpu> gpus;
  nvml::Return init_rc = nvml::kSuccess;
  int inits = 0, shutdowns = 0;
};

// The state the fake answers from; a test points it at its own and clears it after.
extern FakeNvml* g_nvml;

// An NvmlApi whose every function answers from *g_nvml.
NvmlApi FakeApi();

}  // namespace gpuforge::probe::internal
