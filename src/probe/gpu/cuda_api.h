#pragma once

// The CUDA driver API (libcuda.so.1) as gpuforge's GPU probes use it: loaded with dlopen at
// run time, typed by the cuda.h found at build time. Which exported symbol each call binds to
// comes from that header's own mapping (cuMemAlloc -> cuMemAlloc_v2, cuEventElapsedTime ->
// cuEventElapsedTime_v2 in CUDA 13.0), so the loaded function always matches the declaration.
// A build without cuda.h still compiles: LoadCudaDriver() then says so and the probes SKIP.
//
// The probes take a CudaLoader, so tests hand them a CudaApi of fakes. None of this has run
// against a real GPU while it was written (the machines had no GPU and no libcuda).

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/probe/probe.h"
#include "probe/gpu/failure.h"
#include "probe/gpu/repeats.h"

namespace gpuforge::probe::internal {

struct CudaApi;  // complete below when this build has cuda.h

// The driver API, or why there is none. Codes: "gpu.no_cuda_headers" (built without cuda.h),
// "gpu.no_cuda_driver" (libcuda.so.1 does not load; the reason quotes dlerror),
// "gpu.cuda_driver_too_old" (a symbol this build needs is missing; the reason names it).
struct CudaLoad {
  std::shared_ptr<const CudaApi> api;
  std::string code;
  std::string reason;
};
using CudaLoader = std::function<CudaLoad()>;

// Loads libcuda.so.1 once per process.
CudaLoad LoadCudaDriver();
// Loads the first of `names` that opens, every time it is called. For tests: the toolkit's
// stub libcuda (lib64/stubs/libcuda.so) exports every symbol and fails every call.
CudaLoad LoadCudaDriverFrom(std::span<const char* const> names);

}  // namespace gpuforge::probe::internal

#if GPUFORGE_HAVE_CUDA
#include <cuda.h>

namespace gpuforge::probe::internal {

// Every driver call the probes make. X(name) is the name as written in code; cuda.h's macros
// turn it into the versioned symbol.
// clang-format off
#define GPUFORGE_CUDA_FUNCTIONS(X)                                                         \
  X(cuGetErrorString) X(cuGetErrorName) X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet)       \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceGetPCIBusId)                        \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)              \
  X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemsetD32)             \
  X(cuMemsetD32Async)                                                                      \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)                \
  X(cuMemcpyDtoDAsync) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)         \
  X(cuStreamQuery)                                                                         \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)                \
  X(cuEventElapsedTime) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)       \
  X(cuLaunchKernel)
// clang-format on

struct CudaApi {
#define GPUFORGE_CUDA_MEMBER(fn) decltype(&::fn) fn = nullptr;
  GPUFORGE_CUDA_FUNCTIONS(GPUFORGE_CUDA_MEMBER)
#undef GPUFORGE_CUDA_MEMBER
  // Optional (drivers since CUDA 11.7), nullptr without it: a DMA-BUF descriptor for GPU
  // memory, for GPUDirect RDMA without nvidia-peermem.
  decltype(&::cuMemGetHandleForAddressRange) cuMemGetHandleForAddressRange = nullptr;
};

// "cuMemAlloc failed: out of memory (CUDA_ERROR_OUT_OF_MEMORY)", in the driver's own words.
std::string CudaCallError(const CudaApi& api, const char* call, CUresult rc);

// nullopt on CUDA_SUCCESS, else a "gpu.cuda_error" Failure naming the call.
std::optional<Failure> CudaCheck(const CudaApi& api, const char* call, CUresult rc);

// Calls api.fn(args...) and checks it, naming the call as written: GPUFORGE_CU(api, cuMemAlloc,
// &p, n) fails with "cuMemAlloc failed: ...".
#define GPUFORGE_CU(api, fn, ...) \
  ::gpuforge::probe::internal::CudaCheck((api), #fn, (api).fn(__VA_ARGS__))

// One GPU as the driver sees it (CUDA_VISIBLE_DEVICES applies).
struct CudaGpu {
  CUdevice device = 0;
  std::string entity;  // "gpu0".. in PCI bus order, as gpu.health names them
  std::string bus_id;  // canonical, see bus_id.h
  std::string name;    // "NVIDIA H200"
  int cc_major = 0;
  int cc_minor = 0;
  int sms = 0;
  int threads_per_sm = 0;
  int clock_khz = 0;     // CU_DEVICE_ATTRIBUTE_CLOCK_RATE: the peak SM clock; 0 when unknown
  int host_numa = -1;    // CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID (CUDA 12.2+); -1 when unknown
  // "gpu0 (0000:1b:00.0)": how failures name it.
  std::string Label() const { return entity + " (" + bus_id + ")"; }
};

// cuInit and the GPUs in bus order, or the result that ends the probe: SKIP "gpu.none" when
// cuInit says CUDA_ERROR_NO_DEVICE or there are no devices, ERROR "gpu.cuda_error" naming the call
// otherwise.
std::optional<ProbeResult> OpenCuda(const CudaApi& api, const std::string& probe,
                                    std::vector<CudaGpu>* gpus);

// Owns one driver handle (or a library's) and releases it with the matching call.
template <class T, class R = CUresult>
class CudaOwned {
 public:
  using Release = R (*)(T);
  CudaOwned(T handle, Release release) : handle_(handle), release_(release) {}
  ~CudaOwned() {
    if (release_ != nullptr) release_(handle_);
  }
  CudaOwned(const CudaOwned&) = delete;
  CudaOwned& operator=(const CudaOwned&) = delete;
  T get() const { return handle_; }

 private:
  T handle_;
  Release release_;
};

// A GPU's primary context (the one the CUDA runtime and cuBLAS also use), current on this
// thread from Enter() until destruction.
class PrimaryContext {
 public:
  PrimaryContext(const CudaApi& api, CUdevice device) : api_(api), device_(device) {}
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  std::optional<Failure> Enter();

 private:
  const CudaApi& api_;
  CUdevice device_;
  bool retained_ = false;
};

// Enqueues `op` as Repeats says and returns the seconds of each timed round. Fails
// "probe.cancelled" when `ctx` is cancelled between rounds, "probe.bad_timing" on a non-positive time.
std::optional<Failure> TimeRounds(const CudaApi& api, CUstream stream, const Repeats& r,
                                  const Context& ctx,
                                  const std::function<std::optional<Failure>()>& op,
                                  std::vector<double>* seconds);

}  // namespace gpuforge::probe::internal
#endif  // GPUFORGE_HAVE_CUDA
