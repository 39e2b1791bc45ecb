#include "gpuforge/model/gpu_catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

namespace gpuforge::model {

namespace {

constexpr double GB = 1e9;

// PCI device ids (vendor 10de) from pci.ids, https://github.com/pciutils/pciids (pci.ids,
// version 2026.05.24): "20b0  GA100 [A100 SXM4 40GB]", "20b2  GA100 [A100 SXM4 80GB]",
// "20b5  GA100 [A100 PCIe 80GB]", "26b9  AD102GL [L40S]", "2330  GH100 [H100 SXM5 80GB]",
// "2331  GH100 [H100 PCIe]", "2321  GH100 [H100L 94GB]" (H100 NVL), "2335  GH100 [H200 SXM
// 141GB]", "233b  GH100 [H200 NVL]", "2920  GB100 [TS4 / B100]", "29bc  GB102 [B100]",
// "2901  GB100 [B200]", "2909  GB100 [HGX B200 168GB]", "2941  GB100 [HGX GB200]",
// "2684  AD102 [GeForce RTX 4090]", "2204  GA102 [GeForce RTX 3090]".
constexpr std::uint16_t kA100[] = {0x20b2};
constexpr std::uint16_t kA100_40[] = {0x20b0};
constexpr std::uint16_t kA100Pcie[] = {0x20b5};
constexpr std::uint16_t kL40s[] = {0x26b9};
constexpr std::uint16_t kH100[] = {0x2330};
constexpr std::uint16_t kH100Pcie[] = {0x2331};
constexpr std::uint16_t kH100Nvl[] = {0x2321};
constexpr std::uint16_t kH200[] = {0x2335};
constexpr std::uint16_t kH200Nvl[] = {0x233b};
constexpr std::uint16_t kB100[] = {0x2920, 0x29bc};
constexpr std::uint16_t kB200[] = {0x2901, 0x2909};
constexpr std::uint16_t kGb200[] = {0x2941};
constexpr std::uint16_t kRtx4090[] = {0x2684};
constexpr std::uint16_t kRtx3090[] = {0x2204};

// Why these figures: vendor datasheets (SXM variants unless named PCIe/NVL); the B100 and
// MI400X rows use the first guide's table (000_bf90931f775ecd9c.txt, "GPU Selection") because
// that is what the product's users were told; its B100 NVLink figure (1.2 TB/s) is lower than
// NVIDIA's NVLink 5 figure (1.8 TB/s) and docs/inventory.md says so. The GeForce rows exist so
// that an inventory can name a workstation card (`RTX4090`) and facts can recognise it.
constexpr std::array kCatalog = {
    GpuModelInfo{"A100", "nvidia", "ampere", 80 * GB, 400, 600 * GB, true, "a100", "A100 SXM4 80GB", kA100, "450.51.05", "11.0"},
    GpuModelInfo{"A100-40GB", "nvidia", "ampere", 40 * GB, 400, 600 * GB, true, "a100", "A100 SXM4 40GB", kA100_40, "450.51.05", "11.0"},
    GpuModelInfo{"A100-PCIE", "nvidia", "ampere", 80 * GB, 300, 0, false, "a100", "A100 PCIe 80GB", kA100Pcie, "450.51.05", "11.0"},
    GpuModelInfo{"L40S", "nvidia", "ada", 48 * GB, 350, 0, false, "l40s", "L40S PCIe", kL40s, "535.104.05", "11.8"},
    GpuModelInfo{"H100", "nvidia", "hopper", 80 * GB, 700, 900 * GB, true, "h100", "H100 SXM5 80GB", kH100, "525.85.05", "11.8"},
    GpuModelInfo{"H100-PCIE", "nvidia", "hopper", 80 * GB, 350, 0, false, "h100", "H100 PCIe 80GB", kH100Pcie, "520.56.06", "11.8"},
    GpuModelInfo{"H100-NVL", "nvidia", "hopper", 94 * GB, 400, 600 * GB, false, "h100nvl", "H100 NVL 94GB", kH100Nvl},
    GpuModelInfo{"H200", "nvidia", "hopper", 141 * GB, 700, 900 * GB, true, "h200", "H200 SXM 141GB", kH200, "550.90.07", "11.8"},
    GpuModelInfo{"H200-NVL", "nvidia", "hopper", 141 * GB, 600, 900 * GB, false, "h200nvl", "H200 NVL PCIe", kH200Nvl, "565.57.01", "11.8"},
    GpuModelInfo{"B100", "nvidia", "blackwell", 192 * GB, 1000, 1200 * GB, true, "b100", "figures from guide 000 (GPU Selection)", kB100, "", "12.8"},
    GpuModelInfo{"B200", "nvidia", "blackwell", 180 * GB, 1000, 1800 * GB, true, "b200", "B200 SXM 180GB (HGX)", kB200, "570.133.20", "12.8"},
    GpuModelInfo{"GB200", "nvidia", "blackwell", 186 * GB, 1200, 1800 * GB, true, "gb200", "GB200 superchip GPU", kGb200, "570.124.04", "12.8"},
    GpuModelInfo{"RTX4090", "nvidia", "ada", 24 * GB, 450, 0, false, "rtx4090", "GeForce RTX 4090 24GB", kRtx4090},
    GpuModelInfo{"RTX3090", "nvidia", "ampere", 24 * GB, 350, 0, false, "rtx3090", "GeForce RTX 3090 24GB", kRtx3090},
    GpuModelInfo{"MI300X", "amd", "cdna3", 192 * GB, 750, 896 * GB, true, "mi300x", "MI300X OAM"},
    GpuModelInfo{"MI400X", "amd", "cdna4", 192 * GB, 1000, 800 * GB, true, "mi400x", "figures from guide 000 (GPU Selection)"},
};

// Words of a name that say nothing about which SKU it is: vendor and brand prefixes, module
// form factors, memory kinds. "NVIDIA A100-SXM4-40GB" (nvidia-smi) and "A100-40GB" (an
// inventory) are then the same words, and so are "NVIDIA GeForce RTX 4090" and "RTX4090".
bool Noise(std::string_view w) {
  for (std::string_view n : {"NVIDIA", "AMD", "INSTINCT", "TESLA", "GEFORCE", "SXM", "SXM2", "SXM4", "SXM5",
                             "SXM6", "OAM", "HBM2", "HBM2E", "HBM3", "HBM3E"}) {
    if (w == n) return true;
  }
  return false;
}

// Upper case, the noise words dropped, no separators: "nvidia h100 80gb hbm3" -> "H10080GB".
// The nominal memory of the plain model name is dropped too (A100 is the 80 GB part).
std::string Normalize(std::string_view s) {
  std::vector<std::string> words(1);
  for (char c : s) {
    if (c == ' ' || c == '_' || c == '-') {
      if (!words.back().empty()) words.emplace_back();
    } else {
      words.back().push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
    }
  }
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.empty() || Noise(w)) continue;
    if (i > 0 && ((w == "80GB" && (out == "A100" || out == "H100")) || (w == "141GB" && out == "H200"))) continue;
    out += w;
  }
  return out;
}

}  // namespace

std::string GpuNameKey(std::string_view name) { return Normalize(name); }

std::optional<int> CompareVersions(std::string_view a, std::string_view b) {
  auto fields = [](std::string_view v) -> std::optional<std::vector<long>> {
    std::vector<long> out;
    while (!v.empty()) {
      const std::size_t dot = v.find('.');
      const std::string_view f = v.substr(0, dot);
      long n = 0;
      auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), n);
      if (f.empty() || ec != std::errc() || p != f.data() + f.size() || n < 0) return std::nullopt;
      out.push_back(n);
      if (dot == std::string_view::npos) break;
      v.remove_prefix(dot + 1);
      if (v.empty()) return std::nullopt;  // "12."
    }
    if (out.empty()) return std::nullopt;
    return out;
  };
  const auto x = fields(a), y = fields(b);
  if (!x || !y) return std::nullopt;
  for (std::size_t i = 0; i < std::max(x->size(), y->size()); ++i) {
    const long l = i < x->size() ? (*x)[i] : 0, r = i < y->size() ? (*y)[i] : 0;
    if (l != r) return l < r ? -1 : 1;
  }
  return 0;
}

bool MemoryFits(const GpuModelInfo& m, std::uint64_t reported_bytes) {
  const double nominal = m.memory_bytes / GB * 1024.0 * 1024.0 * 1024.0;
  const double r = static_cast<double>(reported_bytes);
  return r >= 0.90 * nominal && r <= 1.02 * nominal;
}

const GpuModelInfo* IdentifyGpu(std::uint16_t pci_device_id, std::optional<std::uint64_t> memory_bytes) {
  for (const GpuModelInfo& m : kCatalog) {
    if (std::find(m.pci_device_ids.begin(), m.pci_device_ids.end(), pci_device_id) == m.pci_device_ids.end()) continue;
    if (memory_bytes && !MemoryFits(m, *memory_bytes)) continue;
    return &m;
  }
  return nullptr;
}


const GpuModelInfo* FindGpuModel(std::string_view name) {
  std::string key = Normalize(name);
  if (key.empty()) return nullptr;
  for (const GpuModelInfo& m : kCatalog) {
    if (Normalize(m.name) == key) return &m;
  }
  return nullptr;
}

std::span<const GpuModelInfo> GpuCatalog() { return kCatalog; }

}  // namespace gpuforge::model
