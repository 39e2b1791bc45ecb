#include "probe/fake_nvml.h"

#include <cstdint>
#include <cstring>

namespace gpuforge::probe::internal {

FakeNvml* g_nvml = nullptr;

namespace {

nvml::Device Handle(unsigned i) {
  return reinterpret_cast<nvml::Device>(static_cast<std::uintptr_t>(i + 1));
}
FakeNvmlGpu& Gpu(nvml::Device d) {
  return g_nvml->gpus.at(reinterpret_cast<std::uintptr_t>(d) - 1);
}
// The answer a device call gets before its value: success, not supported or the fault.
nvml::Return Answer(nvml::Device d, const std::string& call) {
  const FakeNvmlGpu& g = Gpu(d);
  if (g.fail_call == call) return g.fail_rc;
  return g.not_supported.contains(call) ? nvml::kNotSupported : nvml::kSuccess;
}
void Copy(const std::string& s, char* buf, unsigned len) { std::strncpy(buf, s.c_str(), len); }

nvml::Return Init() {
  ++g_nvml->inits;
  return g_nvml->init_rc;
}
nvml::Return Shutdown() {
  ++g_nvml->shutdowns;
  return nvml::kSuccess;
}
const char* ErrorString(nvml::Return rc) {
  switch (rc) {
    case nvml::kGpuIsLost:
      return "GPU is lost";
    case nvml::kDriverNotLoaded:
      return "Driver Not Loaded";
    case 18:
      return "RM has detected an NVML/RM version mismatch.";
    default:
      return "Unknown Error";
  }
}
nvml::Return DriverVersion(char* buf, unsigned len) {
  Copy("570.86.15", buf, len);
  return nvml::kSuccess;
}
nvml::Return Count(unsigned* n) {
  *n = static_cast<unsigned>(g_nvml->gpus.size());
  return nvml::kSuccess;
}
nvml::Return HandleByIndex(unsigned i, nvml::Device* d) {
  if (i >= g_nvml->gpus.size()) return nvml::kInvalidArgument;
  *d = Handle(i);
  return nvml::kSuccess;
}
nvml::Return Name(nvml::Device d, char* buf, unsigned len) {
  Copy(Gpu(d).name, buf, len);
  return nvml::kSuccess;
}
nvml::Return Uuid(nvml::Device d, char* buf, unsigned len) {
  Copy(Gpu(d).uuid, buf, len);
  return nvml::kSuccess;
}
nvml::Return Pci(nvml::Device d, nvml::PciInfo* pci) {
  std::memset(pci, 0, sizeof *pci);
  Copy(Gpu(d).bus_id, pci->busId, sizeof pci->busId);
  return nvml::kSuccess;
}
nvml::Return TotalEcc(nvml::Device d, int type, int counter, unsigned long long* n) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetTotalEccErrors"); rc != nvml::kSuccess) return rc;
  const FakeNvmlGpu& g = Gpu(d);
  if (type == nvml::kUncorrected) {
    *n = counter == nvml::kVolatile ? g.ecc_uncorrected_volatile : g.ecc_uncorrected_aggregate;
  } else {
    *n = g.ecc_corrected_volatile;
  }
  return nvml::kSuccess;
}
nvml::Return MemoryErrors(nvml::Device d, int type, int counter, int location,
                          unsigned long long* n) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetMemoryErrorCounter"); rc != nvml::kSuccess) {
    return rc;
  }
  if (type != nvml::kCorrected || counter != nvml::kAggregate) return nvml::kInvalidArgument;
  if (location == nvml::kLocationSram)
    *n = Gpu(d).sram_corrected;
  else if (location == nvml::kLocationDram)
    *n = Gpu(d).dram_corrected;
  else
    return nvml::kInvalidArgument;
  return nvml::kSuccess;
}
nvml::Return RetiredPending(nvml::Device d, int* pending) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetRetiredPagesPendingStatus"); rc != nvml::kSuccess) {
    return rc;
  }
  *pending = 0;
  return nvml::kSuccess;
}
nvml::Return Remapped(nvml::Device d, unsigned* corr, unsigned* unc, unsigned* pending,
                      unsigned* failure) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetRemappedRows"); rc != nvml::kSuccess) return rc;
  const FakeNvmlGpu& g = Gpu(d);
  *corr = g.corrected_rows;
  *unc = g.uncorrected_rows;
  *pending = g.remap_pending;
  *failure = g.remap_failure;
  return nvml::kSuccess;
}
nvml::Return ClockReasons(nvml::Device d, unsigned long long* bits) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetCurrentClocksEventReasons"); rc != nvml::kSuccess) {
    return rc;
  }
  *bits = Gpu(d).clock_reasons;
  return nvml::kSuccess;
}
#define GPUFORGE_FAKE_UNSIGNED(Fn, call, field)                             \
  nvml::Return Fn(nvml::Device d, unsigned* v) {                            \
    if (nvml::Return rc = Answer(d, call); rc != nvml::kSuccess) return rc; \
    *v = Gpu(d).field;                                                      \
    return nvml::kSuccess;                                                  \
  }
GPUFORGE_FAKE_UNSIGNED(Power, "nvmlDeviceGetPowerUsage", power_mw)
GPUFORGE_FAKE_UNSIGNED(Limit, "nvmlDeviceGetEnforcedPowerLimit", limit_mw)
GPUFORGE_FAKE_UNSIGNED(Gen, "nvmlDeviceGetCurrPcieLinkGeneration", gen)
GPUFORGE_FAKE_UNSIGNED(GenMax, "nvmlDeviceGetMaxPcieLinkGeneration", gen_max)
GPUFORGE_FAKE_UNSIGNED(Width, "nvmlDeviceGetCurrPcieLinkWidth", width)
GPUFORGE_FAKE_UNSIGNED(WidthMax, "nvmlDeviceGetMaxPcieLinkWidth", width_max)
#undef GPUFORGE_FAKE_UNSIGNED
nvml::Return Temperature(nvml::Device d, int sensor, unsigned* v) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetTemperature"); rc != nvml::kSuccess) return rc;
  if (sensor != nvml::kTemperatureGpu) return nvml::kInvalidArgument;
  *v = Gpu(d).temperature;
  return nvml::kSuccess;
}
nvml::Return NvLink(nvml::Device d, unsigned link, int* active) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetNvLinkState"); rc != nvml::kSuccess) return rc;
  const std::vector<int>& links = Gpu(d).nvlinks;
  if (link >= links.size()) return nvml::kNotSupported;
  *active = links[link];
  return nvml::kSuccess;
}
nvml::Return Persistence(nvml::Device d, int* mode) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetPersistenceMode"); rc != nvml::kSuccess) return rc;
  *mode = Gpu(d).persistence;
  return nvml::kSuccess;
}

nvml::Return ClockInfo(nvml::Device d, int type, unsigned* v) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetClockInfo"); rc != nvml::kSuccess) return rc;
  if (type == nvml::kClockSm) {
    *v = Gpu(d).sm_clock;
  } else if (type == nvml::kClockMem) {
    *v = Gpu(d).mem_clock;
  } else {
    return nvml::kInvalidArgument;
  }
  return nvml::kSuccess;
}
nvml::Return Replay(nvml::Device d, unsigned* v) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetPcieReplayCounter"); rc != nvml::kSuccess) return rc;
  *v = Gpu(d).pcie_replay;
  return nvml::kSuccess;
}
nvml::Return NvLinkErrors(nvml::Device d, unsigned link, int counter, unsigned long long* v) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetNvLinkErrorCounter"); rc != nvml::kSuccess) return rc;
  if (link >= Gpu(d).nvlinks.size()) return nvml::kNotSupported;
  if (counter < 0 || counter > nvml::kNvLinkErrorDlCrcData) return nvml::kInvalidArgument;
  *v = Gpu(d).nvlink_errors_per_counter;
  return nvml::kSuccess;
}

// Answers every field asked for: NVML_FI_DEV_MEMORY_TEMP from the GPU's state, any other id
// NOT_SUPPORTED in its own nvmlReturn, as NVML does for a field a board lacks.
nvml::Return FieldValues(nvml::Device d, int count, nvml::FieldValue* values) {
  if (nvml::Return rc = Answer(d, "nvmlDeviceGetFieldValues"); rc != nvml::kSuccess) return rc;
  if (count < 0 || values == nullptr) return nvml::kInvalidArgument;
  const FakeNvmlGpu& g = Gpu(d);
  for (int i = 0; i < count; ++i) {
    nvml::FieldValue& v = values[i];
    if (v.fieldId != nvml::kFieldMemoryTemp) {
      v.nvmlReturn = nvml::kNotSupported;
      continue;
    }
    v.nvmlReturn = g.hbm_temp_rc;
    v.valueType = g.hbm_temp_type;
    switch (g.hbm_temp_type) {
      case nvml::kValueDouble:
        v.value.dVal = g.hbm_temp;
        break;
      case nvml::kValueSignedInt:
        v.value.siVal = static_cast<int>(g.hbm_temp);
        break;
      case nvml::kValueSignedLongLong:
        v.value.sllVal = static_cast<long long>(g.hbm_temp);
        break;
      default:
        v.value.ullVal = 0;
        v.value.uiVal = static_cast<unsigned>(g.hbm_temp);
        break;
    }
  }
  return nvml::kSuccess;
}

}  // namespace

NvmlApi FakeApi() {
  NvmlApi api;
  api.nvmlInit_v2 = Init;
  api.nvmlShutdown = Shutdown;
  api.nvmlErrorString = ErrorString;
  api.nvmlSystemGetDriverVersion = DriverVersion;
  api.nvmlDeviceGetCount_v2 = Count;
  api.nvmlDeviceGetHandleByIndex_v2 = HandleByIndex;
  api.nvmlDeviceGetName = Name;
  api.nvmlDeviceGetUUID = Uuid;
  api.nvmlDeviceGetPciInfo_v3 = Pci;
  api.nvmlDeviceGetTotalEccErrors = TotalEcc;
  api.nvmlDeviceGetMemoryErrorCounter = MemoryErrors;
  api.nvmlDeviceGetRetiredPagesPendingStatus = RetiredPending;
  api.nvmlDeviceGetRemappedRows = Remapped;
  api.nvmlDeviceGetCurrentClocksEventReasons = ClockReasons;
  api.nvmlDeviceGetPowerUsage = Power;
  api.nvmlDeviceGetEnforcedPowerLimit = Limit;
  api.nvmlDeviceGetTemperature = Temperature;
  api.nvmlDeviceGetCurrPcieLinkGeneration = Gen;
  api.nvmlDeviceGetMaxPcieLinkGeneration = GenMax;
  api.nvmlDeviceGetCurrPcieLinkWidth = Width;
  api.nvmlDeviceGetMaxPcieLinkWidth = WidthMax;
  api.nvmlDeviceGetNvLinkState = NvLink;
  api.nvmlDeviceGetPersistenceMode = Persistence;
  api.nvmlDeviceGetClockInfo = ClockInfo;
  api.nvmlDeviceGetPcieReplayCounter = Replay;
  api.nvmlDeviceGetNvLinkErrorCounter = NvLinkErrors;
  api.nvmlDeviceGetFieldValues = FieldValues;
  return api;
}


}  // namespace gpuforge::probe::internal
