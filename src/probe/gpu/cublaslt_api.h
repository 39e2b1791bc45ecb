#pragma once

// cuBLASLt (part of the CUDA toolkit, not of the driver: present on nodes where a toolkit or a
// framework's wheels installed it) as gpu.gemm uses it, loaded with dlopen at run time and
// typed by the cublasLt.h found at build time. The library tried first is the major version
// of that header (libcublasLt.so.13 for CUDA 13), then libcublasLt.so.12. The calls and enum
// values used here (descriptor attributes, CUBLAS_COMPUTE_32F, CUDA_R_16BF) are the same in
// cuBLAS 12 and 13 as far as their documentation shows; that a 13-typed call into a 12 library
// works is an assumption that has not been run.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "probe/gpu/failure.h"

namespace gpuforge::probe::internal {

struct CublasLtApi;  // complete below when this build has cublasLt.h

// cuBLASLt, or why there is none: "gpu.no_cublaslt_headers" (built without cublasLt.h),
// "gpu.no_cublaslt" (no library loads; the reason quotes dlerror), "gpu.cublaslt_too_old" (a symbol is
// missing).
struct CublasLtLoad {
  std::shared_ptr<const CublasLtApi> api;
  std::string code;
  std::string reason;
};
using CublasLtLoader = std::function<CublasLtLoad()>;

// Loads the library once per process.
CublasLtLoad LoadCublasLt();

}  // namespace gpuforge::probe::internal

#if GPUFORGE_HAVE_CUDA && __has_include(<cublasLt.h>)
#define GPUFORGE_HAVE_CUBLASLT 1
#include <cublasLt.h>

namespace gpuforge::probe::internal {

// clang-format off
#define GPUFORGE_CUBLASLT_FUNCTIONS(X)                                                        \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion) X(cublasLtGetStatusString)       \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatrixLayoutCreate)      \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate)                            \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                  \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)
// clang-format on

struct CublasLtApi {
#define GPUFORGE_CUBLASLT_MEMBER(fn) decltype(&::fn) fn = nullptr;
  GPUFORGE_CUBLASLT_FUNCTIONS(GPUFORGE_CUBLASLT_MEMBER)
#undef GPUFORGE_CUBLASLT_MEMBER
  std::string library;  // "libcublasLt.so.13"
};

// nullopt on CUBLAS_STATUS_SUCCESS, else a "gpu.cublas_error" Failure naming the call.
std::optional<Failure> CublasCheck(const CublasLtApi& api, const char* call, cublasStatus_t rc);

#define GPUFORGE_CUBLAS(api, fn, ...) \
  ::gpuforge::probe::internal::CublasCheck((api), #fn, (api).fn(__VA_ARGS__))

}  // namespace gpuforge::probe::internal
#endif
