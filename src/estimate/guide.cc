#include "estimate/guide.h"

#include <array>
#include <utility>

#include "gpuforge/model/gpu_catalog.h"

namespace gpuforge::estimate::guide {

std::optional<double> GpuUnitPrice(std::string_view model) {
  static constexpr std::array<std::pair<std::string_view, double>, 3> kPrices = {{
      {"H200", 35e3},
      {"B100", 45e3},
      {"MI400X", 28e3},
  }};
  // Why through the catalogue: "h200-sxm" and "NVIDIA H200" are the same card, and only the
  // canonical name is in the guide's table.
  const model::GpuModelInfo* info = model::FindGpuModel(model);
  if (info == nullptr) return std::nullopt;
  for (const auto& [name, price] : kPrices) {
    if (info->name == name) return price;
  }
  return std::nullopt;
}

}  // namespace gpuforge::estimate::guide
