#include "probe/gpu/cuda_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "probe/gpu/bus_id.h"
#include "probe/gpu/dl.h"

namespace gpuforge::probe::internal {

#if !GPUFORGE_HAVE_CUDA

CudaLoad LoadCudaDriverFrom(std::span<const char* const>) {
  return {nullptr, "gpu.no_cuda_headers",
          "this build has no CUDA support: cuda.h was not found at build time"};
}

CudaLoad LoadCudaDriver() { return LoadCudaDriverFrom({}); }

#else

#define GPUFORGE_STR2(x) #x
#define GPUFORGE_STR(x) GPUFORGE_STR2(x)

CudaLoad LoadCudaDriverFrom(std::span<const char* const> names) {
  gpuforge::Result<Library> lib = OpenLibrary(names);
  if (!lib.ok()) {
    return {nullptr, "gpu.no_cuda_driver",
            fmt::format("the CUDA driver library does not load (no NVIDIA driver here?): {}",
                        lib.error().message)};
  }
  auto api = std::make_shared<CudaApi>();
  // GPUFORGE_STR(fn) is the symbol cuda.h maps fn to, e.g. "cuMemAlloc_v2".
#define GPUFORGE_CUDA_BIND(fn) \
  api->fn = reinterpret_cast<decltype(api->fn)>(lib->Symbol(GPUFORGE_STR(fn)));
  GPUFORGE_CUDA_FUNCTIONS(GPUFORGE_CUDA_BIND)
#undef GPUFORGE_CUDA_BIND
  if (api->cuEventElapsedTime == nullptr) {
    // cuEventElapsedTime_v2 arrived with CUDA 12.8 drivers, with the same signature and, for
    // the events used here (timing enabled, one stream), the same result as the original.
    api->cuEventElapsedTime =
        reinterpret_cast<decltype(api->cuEventElapsedTime)>(lib->Symbol("cuEventElapsedTime"));
  }
  api->cuMemGetHandleForAddressRange = reinterpret_cast<decltype(api->cuMemGetHandleForAddressRange)>(
      lib->Symbol("cuMemGetHandleForAddressRange"));
  std::string missing;
#define GPUFORGE_CUDA_MISSING(fn) \
  if (api->fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(GPUFORGE_STR(fn));
  GPUFORGE_CUDA_FUNCTIONS(GPUFORGE_CUDA_MISSING)
#undef GPUFORGE_CUDA_MISSING
  if (!missing.empty()) {
    return {nullptr, "gpu.cuda_driver_too_old",
            fmt::format("{} lacks {}: the NVIDIA driver is older than this build's CUDA {}.{} "
                        "headers need",
                        lib->name, missing, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10)};
  }
  return {std::move(api), "", ""};
}

CudaLoad LoadCudaDriver() {
  static constexpr std::array<const char*, 1> kNames = {"libcuda.so.1"};
  static const CudaLoad loaded = LoadCudaDriverFrom(kNames);
  return loaded;
}

std::string CudaCallError(const CudaApi& api, const char* call, CUresult rc) {
  const char* text = nullptr;
  const char* name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(rc, &text) != CUDA_SUCCESS) {
    text = nullptr;
  }
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(rc, &name) != CUDA_SUCCESS) {
    name = nullptr;
  }
  return fmt::format("{} failed: {} ({})", call, text != nullptr ? text : "unknown error",
                     name != nullptr ? std::string(name) : fmt::format("CUresult {}", int(rc)));
}

std::optional<Failure> CudaCheck(const CudaApi& api, const char* call, CUresult rc) {
  if (rc == CUDA_SUCCESS) return std::nullopt;
  return Failure{"gpu.cuda_error", CudaCallError(api, call, rc)};
}

std::optional<ProbeResult> OpenCuda(const CudaApi& api, const std::string& probe,
                                    std::vector<CudaGpu>* gpus) {
  const CUresult init = api.cuInit(0);
  if (init == CUDA_ERROR_NO_DEVICE)
    return Skip(probe, "gpu.none", CudaCallError(api, "cuInit", init));
  if (init != CUDA_SUCCESS) return Fail(probe, "gpu.cuda_error", CudaCallError(api, "cuInit", init));
  auto fail = [&](const Failure& f) { return Fail(probe, f.code, f.reason); };
  int count = 0;
  if (auto f = GPUFORGE_CU(api, cuDeviceGetCount, &count)) return fail(*f);
  if (count <= 0) return Skip(probe, "gpu.none", "the CUDA driver sees no GPU");
  gpus->clear();
  for (int i = 0; i < count; ++i) {
    CudaGpu g;
    if (auto f = GPUFORGE_CU(api, cuDeviceGet, &g.device, i)) return fail(*f);
    char text[256] = {};
    if (auto f = GPUFORGE_CU(api, cuDeviceGetPCIBusId, text, int(sizeof text) - 1, g.device)) {
      return fail(*f);
    }
    g.bus_id = CanonicalBusId(text);
    if (g.bus_id.empty()) g.bus_id = fmt::format("cuda{}", i);
    std::fill(std::begin(text), std::end(text), '\0');
    if (auto f = GPUFORGE_CU(api, cuDeviceGetName, text, int(sizeof text) - 1, g.device)) {
      return fail(*f);
    }
    for (char c : std::string_view(text)) g.name.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    const std::pair<int*, CUdevice_attribute> attributes[] = {
        {&g.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
        {&g.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
        {&g.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
        {&g.threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
    };
    for (const auto& [out, attribute] : attributes) {
      if (auto f = GPUFORGE_CU(api, cuDeviceGetAttribute, out, attribute, g.device)) {
        return fail(*f);
      }
    }
    // Optional: a driver that does not know an attribute answers CUDA_ERROR_INVALID_VALUE,
    // and the probes then do without (no FMA peak, no NUMA note).
    int value = 0;
    if (api.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, g.device) == CUDA_SUCCESS &&
        value > 0) {
      g.clock_khz = value;
    }
    if (api.cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, g.device) == CUDA_SUCCESS &&
        value >= 0) {
      g.host_numa = value;
    }
    gpus->push_back(std::move(g));
  }
  std::stable_sort(gpus->begin(), gpus->end(),
                   [](const CudaGpu& a, const CudaGpu& b) { return a.bus_id < b.bus_id; });
  for (std::size_t i = 0; i < gpus->size(); ++i) (*gpus)[i].entity = fmt::format("gpu{}", i);
  return std::nullopt;
}

PrimaryContext::~PrimaryContext() {
  if (!retained_) return;
  api_.cuCtxSetCurrent(nullptr);
  api_.cuDevicePrimaryCtxRelease(device_);
}

std::optional<Failure> PrimaryContext::Enter() {
  CUcontext ctx = nullptr;
  if (auto f = GPUFORGE_CU(api_, cuDevicePrimaryCtxRetain, &ctx, device_)) return f;
  retained_ = true;
  return GPUFORGE_CU(api_, cuCtxSetCurrent, ctx);
}

std::optional<Failure> TimeRounds(const CudaApi& api, CUstream stream, const Repeats& r,
                                  const Context& ctx,
                                  const std::function<std::optional<Failure>()>& op,
                                  std::vector<double>* seconds) {
  CUevent start_event = nullptr, stop_event = nullptr;
  if (auto f = GPUFORGE_CU(api, cuEventCreate, &start_event, CU_EVENT_DEFAULT)) return f;
  CudaOwned<CUevent> start(start_event, api.cuEventDestroy);
  if (auto f = GPUFORGE_CU(api, cuEventCreate, &stop_event, CU_EVENT_DEFAULT)) return f;
  CudaOwned<CUevent> stop(stop_event, api.cuEventDestroy);
  for (int i = 0; i < r.warmup; ++i) {
    if (auto f = op()) return f;
  }
  if (auto f = GPUFORGE_CU(api, cuStreamSynchronize, stream)) return f;
  seconds->clear();
  for (int round = 0; round < r.repeats; ++round) {
    if (ctx.Cancelled()) return Failure{"probe.cancelled", "cancelled between timed rounds"};
    if (auto f = GPUFORGE_CU(api, cuEventRecord, start.get(), stream)) return f;
    for (int i = 0; i < r.iters; ++i) {
      if (auto f = op()) return f;
    }
    if (auto f = GPUFORGE_CU(api, cuEventRecord, stop.get(), stream)) return f;
    if (auto f = GPUFORGE_CU(api, cuEventSynchronize, stop.get())) return f;
    float ms = 0;
    if (auto f = GPUFORGE_CU(api, cuEventElapsedTime, &ms, start.get(), stop.get())) return f;
    if (!(ms > 0)) {
      return Failure{"probe.bad_timing",
                     fmt::format("the events of timed round {} are {} ms apart", round + 1, ms)};
    }
    seconds->push_back(ms / 1e3);
  }
  return std::nullopt;
}

#endif  // GPUFORGE_HAVE_CUDA

}  // namespace gpuforge::probe::internal
