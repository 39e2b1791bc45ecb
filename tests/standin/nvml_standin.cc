// A stand-in for the driver's libnvidia-ml.so.1, built for the tests (tests/CMakeLists.txt:
// gpuforge_standin_nvml, written as build-test/tests/standin-nvml/libnvidia-ml.so.1). With its
// directory on LD_LIBRARY_PATH, the gpuforge binary loads it through the same dlopen and symbol
// binding as the real library (probe/gpu/nvml_api.cc), so the end-to-end tests run the real load
// path, a real process and real signals; the answers come from the fake NVML of the unit tests
// (probe/fake_nvml.h). No GPU or NVIDIA code is involved.
//
// Set from the environment when the library initialises:
//   GPUFORGE_STANDIN_NVML_GPUS=N           GPUs NVML lists (default 2)
//   GPUFORGE_STANDIN_NVML_LOSE_GPU0_AFTER=K  GPU 0 answers GPU_IS_LOST after K power reads

#include <cstdlib>
#include <string>

#include "probe/fake_nvml.h"

namespace fake = gpuforge::probe::internal;
namespace nvml = gpuforge::probe::internal::nvml;

namespace {

fake::NvmlApi& Api() {
  static fake::FakeNvml state = [] {
    fake::FakeNvml s;
    const char* n = std::getenv("GPUFORGE_STANDIN_NVML_GPUS");
    s.gpus.resize(n != nullptr ? std::strtoul(n, nullptr, 10) : 2);
    for (std::size_t i = 0; i < s.gpus.size(); ++i) {
      char bus[32];
      std::snprintf(bus, sizeof bus, "00000000:%02zX:00.0", 0x1b + i);
      s.gpus[i].bus_id = bus;
      s.gpus[i].power_mw = 690000;
      s.gpus[i].clock_reasons = nvml::kReasonSwPowerCap;
    }
    return s;
  }();
  static fake::NvmlApi api = [] {
    fake::g_nvml = &state;
    return fake::FakeApi();
  }();
  return api;
}

long LoseAfter() {
  static const long k = [] {
    const char* v = std::getenv("GPUFORGE_STANDIN_NVML_LOSE_GPU0_AFTER");
    return v != nullptr ? std::strtol(v, nullptr, 10) : -1L;
  }();
  return k;
}

}  // namespace

extern "C" {

using R = nvml::Return;
using D = nvml::Device;

__attribute__((visibility("default"))) R nvmlInit_v2() { return Api().nvmlInit_v2(); }
__attribute__((visibility("default"))) R nvmlShutdown() { return Api().nvmlShutdown(); }
__attribute__((visibility("default"))) const char* nvmlErrorString(R rc) { return Api().nvmlErrorString(rc); }
__attribute__((visibility("default"))) R nvmlSystemGetDriverVersion(char* b, unsigned n) {
  return Api().nvmlSystemGetDriverVersion(b, n);
}
__attribute__((visibility("default"))) R nvmlDeviceGetCount_v2(unsigned* n) { return Api().nvmlDeviceGetCount_v2(n); }
__attribute__((visibility("default"))) R nvmlDeviceGetHandleByIndex_v2(unsigned i, D* d) {
  return Api().nvmlDeviceGetHandleByIndex_v2(i, d);
}
__attribute__((visibility("default"))) R nvmlDeviceGetName(D d, char* b, unsigned n) { return Api().nvmlDeviceGetName(d, b, n); }
__attribute__((visibility("default"))) R nvmlDeviceGetUUID(D d, char* b, unsigned n) { return Api().nvmlDeviceGetUUID(d, b, n); }
__attribute__((visibility("default"))) R nvmlDeviceGetPciInfo_v3(D d, nvml::PciInfo* p) {
  return Api().nvmlDeviceGetPciInfo_v3(d, p);
}
__attribute__((visibility("default"))) R nvmlDeviceGetTotalEccErrors(D d, int e, int c, unsigned long long* v) {
  return Api().nvmlDeviceGetTotalEccErrors(d, e, c, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetRemappedRows(D d, unsigned* a, unsigned* b, unsigned* c, unsigned* f) {
  return Api().nvmlDeviceGetRemappedRows(d, a, b, c, f);
}
__attribute__((visibility("default"))) R nvmlDeviceGetCurrentClocksEventReasons(D d, unsigned long long* v) {
  return Api().nvmlDeviceGetCurrentClocksEventReasons(d, v);
}
// GPU 0 is lost after K reads of its power: the driver's answer to a GPU that fell off the bus.
__attribute__((visibility("default"))) R nvmlDeviceGetPowerUsage(D d, unsigned* mw) {
  static long reads = 0;
  if (reinterpret_cast<std::uintptr_t>(d) == 1 && LoseAfter() >= 0 && ++reads > LoseAfter()) {
    fake::g_nvml->gpus[0].fail_call = "nvmlDeviceGetPowerUsage";
  }
  return Api().nvmlDeviceGetPowerUsage(d, mw);
}
__attribute__((visibility("default"))) R nvmlDeviceGetEnforcedPowerLimit(D d, unsigned* mw) {
  return Api().nvmlDeviceGetEnforcedPowerLimit(d, mw);
}
__attribute__((visibility("default"))) R nvmlDeviceGetTemperature(D d, int s, unsigned* c) {
  return Api().nvmlDeviceGetTemperature(d, s, c);
}
__attribute__((visibility("default"))) R nvmlDeviceGetCurrPcieLinkGeneration(D d, unsigned* v) {
  return Api().nvmlDeviceGetCurrPcieLinkGeneration(d, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetMaxPcieLinkGeneration(D d, unsigned* v) {
  return Api().nvmlDeviceGetMaxPcieLinkGeneration(d, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetCurrPcieLinkWidth(D d, unsigned* v) {
  return Api().nvmlDeviceGetCurrPcieLinkWidth(d, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetMaxPcieLinkWidth(D d, unsigned* v) {
  return Api().nvmlDeviceGetMaxPcieLinkWidth(d, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetClockInfo(D d, int t, unsigned* v) {
  return Api().nvmlDeviceGetClockInfo(d, t, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetPcieReplayCounter(D d, unsigned* v) {
  return Api().nvmlDeviceGetPcieReplayCounter(d, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetNvLinkErrorCounter(D d, unsigned l, int c, unsigned long long* v) {
  return Api().nvmlDeviceGetNvLinkErrorCounter(d, l, c, v);
}
__attribute__((visibility("default"))) R nvmlDeviceGetFieldValues(D d, int n, nvml::FieldValue* v) {
  return Api().nvmlDeviceGetFieldValues(d, n, v);
}

}  // extern "C"
