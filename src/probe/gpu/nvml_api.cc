#include "probe/gpu/nvml_api.h"

#include <fmt/format.h>

#include <array>

#include "probe/gpu/dl.h"

namespace gpuforge::probe::internal {
namespace {

template <class F>
bool Bind(const Library& lib, F* slot, const char* symbol) {
  *slot = reinterpret_cast<F>(lib.Symbol(symbol));
  return *slot != nullptr;
}

NvmlLoad Load() {
  constexpr std::array<const char*, 1> kNames = {"libnvidia-ml.so.1"};
  gpuforge::Result<Library> lib = OpenLibrary(kNames);
  if (!lib.ok()) {
    return {nullptr, "gpu.no_nvml",
            fmt::format("NVML (libnvidia-ml.so.1, part of the NVIDIA driver) does not load: {}",
                        lib.error().message)};
  }
  auto api = std::make_shared<NvmlApi>();
  const Library& l = *lib;
  std::string missing;
  auto need = [&](auto* slot, const char* symbol) {
    if (!Bind(l, slot, symbol)) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  need(&api->nvmlInit_v2, "nvmlInit_v2");
  need(&api->nvmlShutdown, "nvmlShutdown");
  need(&api->nvmlErrorString, "nvmlErrorString");
  need(&api->nvmlSystemGetDriverVersion, "nvmlSystemGetDriverVersion");
  need(&api->nvmlDeviceGetCount_v2, "nvmlDeviceGetCount_v2");
  need(&api->nvmlDeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2");
  need(&api->nvmlDeviceGetName, "nvmlDeviceGetName");
  need(&api->nvmlDeviceGetUUID, "nvmlDeviceGetUUID");
  need(&api->nvmlDeviceGetPciInfo_v3, "nvmlDeviceGetPciInfo_v3");
  if (!missing.empty()) {
    return {nullptr, "gpu.nvml_too_old",
            fmt::format("{} lacks {}: the NVIDIA driver is too old for gpuforge", l.name, missing)};
  }
  // Device queries are optional: a driver without one reports that metric as not supported.
  Bind(l, &api->nvmlDeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors");
  Bind(l, &api->nvmlDeviceGetMemoryErrorCounter, "nvmlDeviceGetMemoryErrorCounter");
  Bind(l, &api->nvmlDeviceGetRetiredPagesPendingStatus, "nvmlDeviceGetRetiredPagesPendingStatus");
  Bind(l, &api->nvmlDeviceGetRemappedRows, "nvmlDeviceGetRemappedRows");
  if (!Bind(l, &api->nvmlDeviceGetCurrentClocksEventReasons,
            "nvmlDeviceGetCurrentClocksEventReasons")) {
    Bind(l, &api->nvmlDeviceGetCurrentClocksEventReasons,
         "nvmlDeviceGetCurrentClocksThrottleReasons");
  }
  Bind(l, &api->nvmlDeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
  Bind(l, &api->nvmlDeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit");
  Bind(l, &api->nvmlDeviceGetTemperature, "nvmlDeviceGetTemperature");
  Bind(l, &api->nvmlDeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration");
  Bind(l, &api->nvmlDeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration");
  Bind(l, &api->nvmlDeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth");
  Bind(l, &api->nvmlDeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth");
  Bind(l, &api->nvmlDeviceGetNvLinkState, "nvmlDeviceGetNvLinkState");
  Bind(l, &api->nvmlDeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode");
  Bind(l, &api->nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo");
  Bind(l, &api->nvmlDeviceGetPcieReplayCounter, "nvmlDeviceGetPcieReplayCounter");
  Bind(l, &api->nvmlDeviceGetNvLinkErrorCounter, "nvmlDeviceGetNvLinkErrorCounter");
  Bind(l, &api->nvmlDeviceGetFieldValues, "nvmlDeviceGetFieldValues");
  return {std::move(api), "", ""};
}

}  // namespace

NvmlLoad LoadNvml() {
  static const NvmlLoad loaded = Load();
  return loaded;
}

std::optional<double> FieldAsDouble(const nvml::FieldValue& v) {
  switch (v.valueType) {
    case nvml::kValueDouble:
      return v.value.dVal;
    case nvml::kValueUnsignedInt:
      return v.value.uiVal;
    case nvml::kValueUnsignedLong:
      return static_cast<double>(v.value.ulVal);
    case nvml::kValueUnsignedLongLong:
      return static_cast<double>(v.value.ullVal);
    case nvml::kValueSignedLongLong:
      return static_cast<double>(v.value.sllVal);
    case nvml::kValueSignedInt:
      return v.value.siVal;
    case nvml::kValueUnsignedShort:
      return v.value.usVal;
    default:
      return std::nullopt;
  }
}

std::string NvmlCallError(const NvmlApi& api, const char* call, nvml::Return rc) {
  const char* text = api.nvmlErrorString != nullptr ? api.nvmlErrorString(rc) : nullptr;
  return fmt::format("{} failed: {} (NVML error {})", call,
                     text != nullptr ? text : "unknown error", rc);
}

}  // namespace gpuforge::probe::internal
