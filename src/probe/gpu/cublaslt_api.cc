#include "probe/gpu/cublaslt_api.h"

#include <fmt/format.h>

#include <array>
#include <span>

#include "probe/gpu/dl.h"

namespace gpuforge::probe::internal {

#if !GPUFORGE_HAVE_CUBLASLT

CublasLtLoad LoadCublasLt() {
  return {nullptr, "gpu.no_cublaslt_headers",
          "this build has no cuBLASLt support: cublasLt.h was not found at build time"};
}

#else

namespace {

#define GPUFORGE_STR2(x) #x
#define GPUFORGE_STR(x) GPUFORGE_STR2(x)

CublasLtLoad Load() {
  constexpr std::array<const char*, 2> kNames = {"libcublasLt.so." GPUFORGE_STR(CUBLAS_VER_MAJOR),
                                                 "libcublasLt.so.12"};
  const std::span<const char* const> names(kNames.data(), CUBLAS_VER_MAJOR == 12 ? 1 : 2);
  gpuforge::Result<Library> lib = OpenLibrary(names);
  if (!lib.ok()) {
    return {nullptr, "gpu.no_cublaslt",
            fmt::format("cuBLASLt (libcublasLt, from the CUDA toolkit) does not load: {}",
                        lib.error().message)};
  }
  auto api = std::make_shared<CublasLtApi>();
  api->library = lib->name;
  std::string missing;
#define GPUFORGE_CUBLASLT_BIND(fn)                                              \
  api->fn = reinterpret_cast<decltype(api->fn)>(lib->Symbol(GPUFORGE_STR(fn))); \
  if (api->fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(GPUFORGE_STR(fn));
  GPUFORGE_CUBLASLT_FUNCTIONS(GPUFORGE_CUBLASLT_BIND)
#undef GPUFORGE_CUBLASLT_BIND
  if (!missing.empty()) {
    return {nullptr, "gpu.cublaslt_too_old", fmt::format("{} lacks {}", lib->name, missing)};
  }
  return {std::move(api), "", ""};
}

}  // namespace

CublasLtLoad LoadCublasLt() {
  static const CublasLtLoad loaded = Load();
  return loaded;
}

std::optional<Failure> CublasCheck(const CublasLtApi& api, const char* call, cublasStatus_t rc) {
  if (rc == CUBLAS_STATUS_SUCCESS) return std::nullopt;
  const char* text =
      api.cublasLtGetStatusString != nullptr ? api.cublasLtGetStatusString(rc) : nullptr;
  return Failure{"gpu.cublas_error", fmt::format("{} failed: {} (cublasStatus_t {})", call,
                                             text != nullptr ? text : "unknown status", int(rc))};
}

#endif  // GPUFORGE_HAVE_CUBLASLT

}  // namespace gpuforge::probe::internal
