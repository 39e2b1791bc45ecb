#include "gpuforge/model/gpu_catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace gpuforge::model {

namespace {

constexpr double GB = 1e9;

// Why these figures: vendor datasheets (SXM variants unless named PCIe/NVL); the B100 and
// MI400X rows use the first guide's table (000_bf90931f775ecd9c.txt, "GPU Selection") because
// that is what the product's users were told; its B100 NVLink figure (1.2 TB/s) is lower than
// NVIDIA's NVLink 5 figure (1.8 TB/s) and docs/inventory.md says so.
constexpr std::array kCatalog = {
    GpuModelInfo{"A100", "nvidia", "ampere", 80 * GB, 400, 600 * GB, true, "a100", "A100 SXM4 80GB"},
    GpuModelInfo{"A100-40GB", "nvidia", "ampere", 40 * GB, 400, 600 * GB, true, "a100", "A100 SXM4 40GB"},
    GpuModelInfo{"A100-PCIE", "nvidia", "ampere", 80 * GB, 300, 0, false, "a100", "A100 PCIe 80GB"},
    GpuModelInfo{"L40S", "nvidia", "ada", 48 * GB, 350, 0, false, "l40s", "L40S PCIe"},
    GpuModelInfo{"H100", "nvidia", "hopper", 80 * GB, 700, 900 * GB, true, "h100", "H100 SXM5 80GB"},
    GpuModelInfo{"H100-PCIE", "nvidia", "hopper", 80 * GB, 350, 0, false, "h100", "H100 PCIe 80GB"},
    GpuModelInfo{"H100-NVL", "nvidia", "hopper", 94 * GB, 400, 600 * GB, false, "h100nvl", "H100 NVL 94GB"},
    GpuModelInfo{"H200", "nvidia", "hopper", 141 * GB, 700, 900 * GB, true, "h200", "H200 SXM 141GB"},
    GpuModelInfo{"H200-NVL", "nvidia", "hopper", 141 * GB, 600, 900 * GB, false, "h200nvl", "H200 NVL PCIe"},
    GpuModelInfo{"B100", "nvidia", "blackwell", 192 * GB, 1000, 1200 * GB, true, "b100", "figures from guide 000 (GPU Selection)"},
    GpuModelInfo{"B200", "nvidia", "blackwell", 180 * GB, 1000, 1800 * GB, true, "b200", "B200 SXM 180GB (HGX)"},
    GpuModelInfo{"GB200", "nvidia", "blackwell", 186 * GB, 1200, 1800 * GB, true, "gb200", "GB200 superchip GPU"},
    GpuModelInfo{"MI300X", "amd", "cdna3", 192 * GB, 750, 896 * GB, true, "mi300x", "MI300X OAM"},
    GpuModelInfo{"MI400X", "amd", "cdna4", 192 * GB, 1000, 800 * GB, true, "mi400x", "figures from guide 000 (GPU Selection)"},
};

std::string Normalize(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' || c == '_') c = '-';
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  for (std::string_view prefix : {"NVIDIA-", "AMD-", "INSTINCT-", "TESLA-"}) {
    if (out.starts_with(prefix)) out.erase(0, prefix.size());
  }
  for (std::string_view suffix : {"-SXM5", "-SXM4", "-SXM", "-OAM"}) {
    if (out.ends_with(suffix)) out.erase(out.size() - suffix.size());
  }
  if (out.ends_with("-80GB") && out.starts_with("A100")) out.erase(out.size() - 5);
  if (out == "H100-80GB") out = "H100";
  if (out == "H200-141GB") out = "H200";
  return out;
}

}  // namespace

const GpuModelInfo* FindGpuModel(std::string_view name) {
  std::string key = Normalize(name);
  for (const GpuModelInfo& m : kCatalog) {
    if (m.name == key) return &m;
  }
  return nullptr;
}

std::span<const GpuModelInfo> GpuCatalog() { return kCatalog; }

}  // namespace gpuforge::model
