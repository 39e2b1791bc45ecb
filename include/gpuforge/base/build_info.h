#pragma once

#include <string_view>

namespace gpuforge {

// What this binary was built from and with; printed by `gpuforge version` (and --version).
// Written at configure time (cmake/build_info.cc.in): a commit made since the last cmake run
// shows in git_describe only after the next one.
struct BuildInfo {
  std::string_view version;       // project version from CMakeLists.txt
  std::string_view git_describe;  // `git describe --always --dirty --tags`
  std::string_view git_revision;  // `git rev-parse HEAD`; "" when built outside a git checkout
  std::string_view build_type;    // CMAKE_BUILD_TYPE
  std::string_view compiler;      // "GNU 12.2.0"
  bool sanitizers;                // GPUFORGE_SANITIZE: ASan + UBSan (a test build, never shipped)
  bool with_cuda_headers;
  bool with_nccl_headers;
  bool with_ibverbs_headers;
  bool with_kernels;              // the GPU probes' CUDA kernels are embedded (nvcc at build time)
};

const BuildInfo& GetBuildInfo();

}  // namespace gpuforge
