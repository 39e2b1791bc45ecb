#include "probe/gpu/sampler.h"

#include <string>

namespace gpuforge::probe::internal {
namespace {

// The answers that mean no later call will work either.
bool Gone(nvml::Return rc) { return rc == nvml::kGpuIsLost || rc == nvml::kDriverNotLoaded; }

// Collects the first "gone" answer; every other failure leaves its field absent.
struct Reader {
  const NvmlApi& api;
  std::string lost;

  // Runs a call when it exists; true on success.
  template <class F, class... A>
  bool Call(F* fn, const char* name, A... args) {
    if (fn == nullptr || !lost.empty()) return false;
    const nvml::Return rc = fn(args...);
    if (Gone(rc)) lost = NvmlCallError(api, name, rc);
    return rc == nvml::kSuccess;
  }
};

}  // namespace

gpuforge::Result<GpuSample> ReadGpuSample(const NvmlApi& api, nvml::Device d) {
  Reader r{api, ""};
  GpuSample s;
  unsigned u = 0;
  unsigned long long ull = 0;
  if (r.Call(api.nvmlDeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", d, &u)) s.power_w = u / 1000.0;
  if (r.Call(api.nvmlDeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", d, &u)) {
    s.power_limit_w = u / 1000.0;
  }
  if (r.Call(api.nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo", d, nvml::kClockSm, &u)) s.sm_clock_mhz = u;
  if (r.Call(api.nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo", d, nvml::kClockMem, &u)) s.mem_clock_mhz = u;
  if (r.Call(api.nvmlDeviceGetTemperature, "nvmlDeviceGetTemperature", d, nvml::kTemperatureGpu, &u)) {
    s.gpu_temp_c = u;
  }
  // HBM temperature is NVML's field NVML_FI_DEV_MEMORY_TEMP, read through
  // nvmlDeviceGetFieldValues; not read yet (docs/burnin.md).
  if (r.Call(api.nvmlDeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration", d, &u)) {
    s.pcie_gen = static_cast<int>(u);
  }
  if (r.Call(api.nvmlDeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth", d, &u)) {
    s.pcie_width = static_cast<int>(u);
  }
  if (r.Call(api.nvmlDeviceGetCurrentClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons", d, &ull)) {
    s.reasons = ull;
  }
  if (r.Call(api.nvmlDeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors", d, nvml::kUncorrected, nvml::kVolatile,
             &ull)) {
    s.counters.ecc_uncorrectable = static_cast<double>(ull);
  }
  if (r.Call(api.nvmlDeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors", d, nvml::kCorrected, nvml::kVolatile,
             &ull)) {
    s.counters.ecc_correctable = static_cast<double>(ull);
  }
  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  if (r.Call(api.nvmlDeviceGetRemappedRows, "nvmlDeviceGetRemappedRows", d, &corrected, &uncorrected, &pending,
             &failure)) {
    s.counters.remap_pending = pending;
    s.counters.remap_failed = failure;  // NVML's "a remap failed" flag: 0 or 1
  }
  if (r.Call(api.nvmlDeviceGetPcieReplayCounter, "nvmlDeviceGetPcieReplayCounter", d, &u)) {
    s.counters.pcie_replay = u;
  }
  // Every link's replay, recovery and CRC counts, summed; links that do not exist answer
  // NOT_SUPPORTED (or INVALID_ARGUMENT) and add nothing.
  double nvlink = 0;
  bool any = false;
  for (unsigned link = 0; link < nvml::kNvLinkMaxLinks && r.lost.empty(); ++link) {
    for (int counter = nvml::kNvLinkErrorDlReplay; counter <= nvml::kNvLinkErrorDlCrcData; ++counter) {
      if (r.Call(api.nvmlDeviceGetNvLinkErrorCounter, "nvmlDeviceGetNvLinkErrorCounter", d, link, counter, &ull)) {
        nvlink += static_cast<double>(ull);
        any = true;
      }
    }
  }
  if (any) s.counters.nvlink_errors = nvlink;
  if (!r.lost.empty()) return Error{r.lost};
  return s;
}

PcieMax ReadPcieMax(const NvmlApi& api, nvml::Device d) {
  Reader r{api, ""};
  PcieMax m;
  unsigned u = 0;
  if (r.Call(api.nvmlDeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration", d, &u)) {
    m.gen = static_cast<int>(u);
  }
  if (r.Call(api.nvmlDeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth", d, &u)) m.width = static_cast<int>(u);
  return m;
}

}  // namespace gpuforge::probe::internal
