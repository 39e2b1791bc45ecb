#pragma once

// The part of NVML (libnvidia-ml.so.1, the NVIDIA driver's management library) that gpu.health
// uses, loaded at run time. There is no nvml.h on the build machines, so the C ABI below is
// declared here by hand, from NVIDIA's NVML API reference (docs.nvidia.com/deploy/nvml-api)
// and the layout of nvml.h of NVML 12 (checked against NVML 12.2's header: enum values,
// nvmlPciInfo_t, function signatures). Enums are C enums, passed as int; nvmlDevice_t is an
// opaque pointer. Every call used here exists since R450 drivers except
// nvmlDeviceGetCurrentClocksEventReasons (NVML 12.2+), whose older name
// nvmlDeviceGetCurrentClocksThrottleReasons has the same signature and is the fallback.

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace gpuforge::probe::internal {

namespace nvml {

using Return = int;                    // nvmlReturn_t
using Device = struct nvmlDevice_st*;  // nvmlDevice_t

// nvmlReturn_t values used here.
inline constexpr Return kSuccess = 0;          // NVML_SUCCESS
inline constexpr Return kInvalidArgument = 2;  // NVML_ERROR_INVALID_ARGUMENT
inline constexpr Return kNotSupported = 3;     // NVML_ERROR_NOT_SUPPORTED
inline constexpr Return kDriverNotLoaded = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
inline constexpr Return kGpuIsLost = 15;       // NVML_ERROR_GPU_IS_LOST

// nvmlMemoryErrorType_t
inline constexpr int kCorrected = 0;    // NVML_MEMORY_ERROR_TYPE_CORRECTED
inline constexpr int kUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
// nvmlEccCounterType_t
inline constexpr int kVolatile = 0;   // NVML_VOLATILE_ECC
inline constexpr int kAggregate = 1;  // NVML_AGGREGATE_ECC
// nvmlMemoryLocation_t
inline constexpr int kLocationDram = 2;  // NVML_MEMORY_LOCATION_DRAM
inline constexpr int kLocationSram = 7;  // NVML_MEMORY_LOCATION_SRAM
// nvmlTemperatureSensors_t
inline constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
// nvmlEnableState_t: 0 NVML_FEATURE_DISABLED, 1 NVML_FEATURE_ENABLED
inline constexpr unsigned kNvLinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS

// nvmlClockType_t (nvmlDeviceGetClockInfo): 0 NVML_CLOCK_GRAPHICS, 1 NVML_CLOCK_SM, 2 NVML_CLOCK_MEM.
inline constexpr int kClockSm = 1;
inline constexpr int kClockMem = 2;
// nvmlNvLinkErrorCounter_t: 0 NVML_NVLINK_ERROR_DL_REPLAY, 1 NVML_NVLINK_ERROR_DL_RECOVERY,
// 2 NVML_NVLINK_ERROR_DL_CRC_FLIT, 3 NVML_NVLINK_ERROR_DL_CRC_DATA.
inline constexpr int kNvLinkErrorDlReplay = 0;
inline constexpr int kNvLinkErrorDlCrcData = 3;

// Buffer sizes NVML documents as always large enough.
inline constexpr unsigned kNameBuffer = 96;    // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kUuidBuffer = 96;    // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kDriverBuffer = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

// nvmlClocksEventReasons (formerly nvmlClocksThrottleReasons) bits.
inline constexpr unsigned long long kReasonGpuIdle = 0x1;
inline constexpr unsigned long long kReasonApplicationsClocksSetting = 0x2;
inline constexpr unsigned long long kReasonSwPowerCap = 0x4;
inline constexpr unsigned long long kReasonHwSlowdown = 0x8;
inline constexpr unsigned long long kReasonSyncBoost = 0x10;
inline constexpr unsigned long long kReasonSwThermalSlowdown = 0x20;
inline constexpr unsigned long long kReasonHwThermalSlowdown = 0x40;
inline constexpr unsigned long long kReasonHwPowerBrakeSlowdown = 0x80;
inline constexpr unsigned long long kReasonDisplayClockSetting = 0x100;

// nvmlPciInfo_t (filled by nvmlDeviceGetPciInfo_v3).
struct PciInfo {
  char busIdLegacy[16];  // "0000:1B:00.0"
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;  // device id << 16 | vendor id
  unsigned pciSubSystemId;
  char busId[32];  // "00000000:1B:00.0"
};
static_assert(sizeof(PciInfo) == 68);

// nvmlFieldValue_t (nvmlDeviceGetFieldValues): the caller sets fieldId (and scopeId, 0 here);
// NVML fills the rest, and `nvmlReturn` says per field whether `value` means anything. The
// union is 8 bytes (its largest members are double and unsigned long long), so the struct is
// 40 bytes on LP64, as nvml.h lays it out.
struct FieldValue {
  unsigned fieldId;
  unsigned scopeId;
  long long timestamp;    // microseconds since 1970
  long long latencyUsec;
  int valueType;          // nvmlValueType_t, kValue* below
  Return nvmlReturn;
  union {
    double dVal;
    unsigned uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
  } value;
};
static_assert(sizeof(FieldValue) == 40);

// nvmlValueType_t
inline constexpr int kValueDouble = 0;
inline constexpr int kValueUnsignedInt = 1;
inline constexpr int kValueUnsignedLong = 2;
inline constexpr int kValueUnsignedLongLong = 3;
inline constexpr int kValueSignedLongLong = 4;
inline constexpr int kValueSignedInt = 5;
inline constexpr int kValueUnsignedShort = 6;

// Field ids: NVML_FI_DEV_MEMORY_TEMP, the memory (HBM) temperature in degrees C. Boards
// without a memory sensor (GDDR) answer NOT_SUPPORTED in the field's nvmlReturn.
inline constexpr unsigned kFieldMemoryTemp = 82;

}  // namespace nvml

// Function pointers into NVML, named as the library exports them. Tests fill one with fakes.
// A device query that is null (missing in an old driver) reads as not supported.
struct NvmlApi {
  using R = nvml::Return;
  using D = nvml::Device;
  R (*nvmlInit_v2)() = nullptr;
  R (*nvmlShutdown)() = nullptr;
  const char* (*nvmlErrorString)(R) = nullptr;
  R (*nvmlSystemGetDriverVersion)(char*, unsigned) = nullptr;
  R (*nvmlDeviceGetCount_v2)(unsigned*) = nullptr;
  R (*nvmlDeviceGetHandleByIndex_v2)(unsigned, D*) = nullptr;
  R (*nvmlDeviceGetName)(D, char*, unsigned) = nullptr;
  R (*nvmlDeviceGetUUID)(D, char*, unsigned) = nullptr;
  R (*nvmlDeviceGetPciInfo_v3)(D, nvml::PciInfo*) = nullptr;
  // (device, error type, counter type, count)
  R (*nvmlDeviceGetTotalEccErrors)(D, int, int, unsigned long long*) = nullptr;
  // (device, error type, counter type, location, count)
  R (*nvmlDeviceGetMemoryErrorCounter)(D, int, int, int, unsigned long long*) = nullptr;
  R (*nvmlDeviceGetRetiredPagesPendingStatus)(D, int*) = nullptr;
  // (device, corrected rows, uncorrected rows, pending, failure occurred)
  R (*nvmlDeviceGetRemappedRows)(D, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  R (*nvmlDeviceGetCurrentClocksEventReasons)(D, unsigned long long*) = nullptr;
  R (*nvmlDeviceGetPowerUsage)(D, unsigned*) = nullptr;          // milliwatts
  R (*nvmlDeviceGetEnforcedPowerLimit)(D, unsigned*) = nullptr;  // milliwatts
  R (*nvmlDeviceGetTemperature)(D, int, unsigned*) = nullptr;    // degrees C
  R (*nvmlDeviceGetCurrPcieLinkGeneration)(D, unsigned*) = nullptr;
  R (*nvmlDeviceGetMaxPcieLinkGeneration)(D, unsigned*) = nullptr;
  R (*nvmlDeviceGetCurrPcieLinkWidth)(D, unsigned*) = nullptr;
  R (*nvmlDeviceGetMaxPcieLinkWidth)(D, unsigned*) = nullptr;
  R (*nvmlDeviceGetNvLinkState)(D, unsigned, int*) = nullptr;
  R (*nvmlDeviceGetPersistenceMode)(D, int*) = nullptr;
  // Burn-in's sampler (sampler.h); optional: where one is missing (an old driver) its field is
  // not sampled, and gpu.health never needs them.
  R (*nvmlDeviceGetClockInfo)(D, int, unsigned*) = nullptr;  // (device, nvmlClockType_t, MHz)
  R (*nvmlDeviceGetPcieReplayCounter)(D, unsigned*) = nullptr;
  // (device, link, nvmlNvLinkErrorCounter_t, count)
  R (*nvmlDeviceGetNvLinkErrorCounter)(D, unsigned, int, unsigned long long*) = nullptr;
  // (device, count, values): each value's fieldId in, its nvmlReturn and value out.
  R (*nvmlDeviceGetFieldValues)(D, int, nvml::FieldValue*) = nullptr;
};

// A field value as a double, by its valueType; nullopt for a type NVML did not define (a
// library answering garbage must not become a reading).
std::optional<double> FieldAsDouble(const nvml::FieldValue& v);

// NVML, or why there is none: code "gpu.no_nvml" (the library does not load; reason quotes
// dlerror) or "gpu.nvml_too_old" (a required symbol is missing).
struct NvmlLoad {
  std::shared_ptr<const NvmlApi> api;
  std::string code;
  std::string reason;
};
using NvmlLoader = std::function<NvmlLoad()>;

// Loads libnvidia-ml.so.1 once per process.
NvmlLoad LoadNvml();

// nvmlShutdown paired with a successful nvmlInit_v2 on every path out: made right after it.
class NvmlSession {
 public:
  explicit NvmlSession(const NvmlApi& api) : api_(api) {}
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;
  ~NvmlSession() { api_.nvmlShutdown(); }

 private:
  const NvmlApi& api_;
};

// "nvmlDeviceGetRemappedRows failed: GPU is lost (NVML error 15)"
std::string NvmlCallError(const NvmlApi& api, const char* call, nvml::Return rc);

}  // namespace gpuforge::probe::internal
