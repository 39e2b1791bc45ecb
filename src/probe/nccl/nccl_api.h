#pragma once

// NCCL (libnccl.so.2) as nccl.allreduce uses it: loaded with dlopen at run time, typed by the
// nccl.h found at build time, like the CUDA driver API in probe/gpu/cuda_api.h. NCCL ships
// apart from the driver (the NGC containers, the nvidia-nccl-cu* wheels, a cluster's module),
// so a node without it SKIPs. A build without nccl.h (or without cuda.h) still compiles:
// LoadNccl() then says so.
//
// The probe takes an NcclLoader, so tests hand it an NcclApi of fakes.

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "probe/gpu/failure.h"

namespace gpuforge::probe::internal {

struct NcclApi;  // complete below when this build has nccl.h and cuda.h

// NCCL, or why there is none. Codes: "nccl.no_headers" (built without nccl.h or cuda.h),
// "nccl.no_library" (no library loads; the reason quotes dlerror), "nccl.too_old" (a symbol this build
// needs is missing; the reason names it).
struct NcclLoad {
  std::shared_ptr<const NcclApi> api;
  std::string code;
  std::string reason;
};
using NcclLoader = std::function<NcclLoad()>;

// Loads NCCL once per process: "libnccl.so.2" from the loader's path, then the CUDA toolkit's
// /usr/local/cuda/lib64/libnccl.so.2 (where some images put it without a loader entry).
NcclLoad LoadNccl();
// Loads the first of `names` that opens, every time it is called.
NcclLoad LoadNcclFrom(std::span<const char* const> names);

}  // namespace gpuforge::probe::internal

#if GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
#include <nccl.h>

namespace gpuforge::probe::internal {

// Every NCCL call the probe makes; all exist since NCCL 2.14 (ncclCommInitRankConfig, whose
// config.blocking = 0 makes the communicators non-blocking; ncclGetLastError is 2.13).
// clang-format off
#define GPUFORGE_NCCL_FUNCTIONS(X)                                                      \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommInitAll)           \
  X(ncclCommInitRankConfig)                                                               \
  X(ncclGroupStart) X(ncclGroupEnd) X(ncclAllReduce) X(ncclCommDestroy)                 \
  X(ncclCommAbort) X(ncclCommGetAsyncError) X(ncclGetErrorString) X(ncclGetLastError)
// clang-format on

struct NcclApi {
#define GPUFORGE_NCCL_MEMBER(fn) decltype(&::fn) fn = nullptr;
  GPUFORGE_NCCL_FUNCTIONS(GPUFORGE_NCCL_MEMBER)
#undef GPUFORGE_NCCL_MEMBER
  std::string library;  // the name that loaded: "libnccl.so.2"
};

// "ncclSystemError" for ncclSystemError; "ncclResult_t 42" for a value this header lacks.
std::string NcclResultName(ncclResult_t rc);

// "ncclCommInitRank failed: unhandled system error (...) (ncclSystemError); NCCL's last
// error: socket connect to 10.0.0.2<44321> failed", in NCCL's own words.
std::string NcclCallError(const NcclApi& api, const char* call, ncclResult_t rc);

// nullopt on ncclSuccess, else an "nccl.error" Failure naming the call.
std::optional<Failure> NcclCheck(const NcclApi& api, const char* call, ncclResult_t rc);

// Calls api.fn(args...) and checks it, naming the call as written.
#define GPUFORGE_NCCL(api, fn, ...) \
  ::gpuforge::probe::internal::NcclCheck((api), #fn, (api).fn(__VA_ARGS__))

}  // namespace gpuforge::probe::internal
#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL
