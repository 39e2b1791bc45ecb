#pragma once

#include <string_view>

namespace gpuforge {

// What this binary was built from and with; printed by `gpuforge --version`.
struct BuildInfo {
  std::string_view version;       // project version from CMakeLists.txt
  std::string_view git_describe;  // `git describe --always --dirty --tags`
  bool with_cuda_headers;
  bool with_nccl_headers;
  bool with_ibverbs_headers;
};

const BuildInfo& GetBuildInfo();

}  // namespace gpuforge
