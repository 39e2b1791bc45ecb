#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpuforge::model {

// Known accelerator SKUs, so an inventory can say `model: H200` and get sensible memory,
// TDP and NVLink figures; anything it writes itself wins. Figures are vendor datasheet values
// unless the note says they come from a guide in shared/seeds/.
struct GpuModelInfo {
  std::string_view name;        // canonical: "H200"
  std::string_view vendor;      // "nvidia" | "amd"
  std::string_view generation;  // "ampere" | "ada" | "hopper" | "blackwell" | "cdna3" | ...
  double memory_bytes;
  double tdp_w;
  double nvlink_bytes_per_s;  // per GPU, 0 when the SKU has none
  bool sxm;                   // SXM / OAM module rather than a PCIe card
  std::string_view slurm_type;  // gres type name: "h200"
  std::string_view note;
};

// Looks a model up by name, case-insensitively, accepting common spellings ("h200-sxm",
// "NVIDIA H200", "A100-80GB").
const GpuModelInfo* FindGpuModel(std::string_view name);

std::span<const GpuModelInfo> GpuCatalog();

}  // namespace gpuforge::model
