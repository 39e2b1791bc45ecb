#include "probe/nccl/nccl_api.h"

#include <fmt/format.h>

#include <array>

#include "gpuforge/base/text.h"
#include "probe/gpu/dl.h"

namespace gpuforge::probe::internal {

#if !(GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL)

NcclLoad LoadNcclFrom(std::span<const char* const>) {
  return {nullptr, "nccl.no_headers",
          "this build has no NCCL support: nccl.h or cuda.h was not found at build time"};
}

NcclLoad LoadNccl() { return LoadNcclFrom({}); }

#else

NcclLoad LoadNcclFrom(std::span<const char* const> names) {
  gpuforge::Result<Library> lib = OpenLibrary(names);
  if (!lib.ok()) {
    return {nullptr, "nccl.no_library",
            fmt::format("NCCL (libnccl.so.2) does not load: {}", lib.error().message)};
  }
  auto api = std::make_shared<NcclApi>();
  api->library = lib->name;
  // NCCL exports its calls under their own names (no versioned aliases as in libcuda).
  std::string missing;
#define GPUFORGE_NCCL_BIND(fn)                                     \
  api->fn = reinterpret_cast<decltype(api->fn)>(lib->Symbol(#fn)); \
  if (api->fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#fn);
  GPUFORGE_NCCL_FUNCTIONS(GPUFORGE_NCCL_BIND)
#undef GPUFORGE_NCCL_BIND
  if (!missing.empty()) {
    return {nullptr, "nccl.too_old",
            fmt::format("{} lacks {}: the NCCL there is older than this build's NCCL {}.{}.{} "
                        "headers need",
                        lib->name, missing, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)};
  }
  return {std::move(api), "", ""};
}

NcclLoad LoadNccl() {
  static constexpr std::array<const char*, 2> kNames = {"libnccl.so.2",
                                                        "/usr/local/cuda/lib64/libnccl.so.2"};
  static const NcclLoad loaded = LoadNcclFrom(kNames);
  return loaded;
}

std::string NcclResultName(ncclResult_t rc) {
  switch (rc) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return fmt::format("ncclResult_t {}", static_cast<int>(rc));
  }
}

std::string NcclCallError(const NcclApi& api, const char* call, ncclResult_t rc) {
  const char* message = api.ncclGetErrorString != nullptr ? api.ncclGetErrorString(rc) : nullptr;
  // ncclGetLastError ignores its argument in every NCCL so far: the text is the calling
  // thread's last error, which is the one just returned.
  const char* last = api.ncclGetLastError != nullptr ? api.ncclGetLastError(nullptr) : nullptr;
  std::string out = fmt::format("{} failed: {} ({})", call,
                                message != nullptr && *message != '\0' ? text::OneLine(message) : "unknown error",
                                NcclResultName(rc));
  if (last != nullptr && *last != '\0')
    out += fmt::format("; NCCL's last error: {}", text::OneLine(last));
  return out;
}

std::optional<Failure> NcclCheck(const NcclApi& api, const char* call, ncclResult_t rc) {
  if (rc == ncclSuccess) return std::nullopt;
  return Failure{"nccl.error", NcclCallError(api, call, rc)};
}

#endif  // GPUFORGE_HAVE_CUDA && GPUFORGE_HAVE_NCCL

}  // namespace gpuforge::probe::internal
