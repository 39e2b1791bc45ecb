#pragma once

#include <cstdint>
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
  // PCI device ids of the SKU (vendor 0x10de for NVIDIA), from pci.ids: what identifies a GPU
  // a node reports, where its marketing name is only for display. Empty: not known.
  std::span<const std::uint16_t> pci_device_ids = {};
  // The oldest NVIDIA driver and CUDA toolkit that know the GPU (#28 item 3: a B200 on driver 550
  // and CUDA 12.4 passed lint and got nvidia-open-550 planned); "" where not known. The driver
  // is the first release NVIDIA lists it in, an upper bound on the true first (kGpuMinimumsSource).
  std::string_view min_driver = {};  // "550.90.07"
  std::string_view min_cuda = {};    // "11.8": the first toolkit with the GPU's compute capability
};

// Where min_driver and min_cuda come from, for messages and docs.
inline constexpr std::string_view kGpuMinimumsSource =
    "CUDA: the first toolkit with the compute capability (CMake's CMakeCUDAArchitecturesAll.cmake; NVIDIA's "
    "Hopper and Blackwell compatibility guides); driver: the first release listing the GPU (NVIDIA "
    "open-gpu-kernel-modules README, Compatible GPUs; R450 release notes for A100; GPU Operator platform "
    "support for HGX B200 >= 570.133.20)";

// Dotted numeric versions compared field by field ("550.90.07" < "570.133.20", "12.4" < "12.8",
// "12" == "12.0"): negative, zero or positive; nullopt when either is not dotted digits.
std::optional<int> CompareVersions(std::string_view a, std::string_view b);

// Looks a model up by name, case-insensitively, accepting common spellings ("h200-sxm",
// "NVIDIA H200", "A100-80GB").
const GpuModelInfo* FindGpuModel(std::string_view name);

std::span<const GpuModelInfo> GpuCatalog();

// The key FindGpuModel compares names by: upper case, vendor/brand/form-factor words dropped,
// no separators ("NVIDIA GeForce RTX 4090" -> "RTX4090", "NVIDIA A100-SXM4-40GB" -> "A10040GB").
std::string GpuNameKey(std::string_view name);

// Whether a memory size a node reports (nvidia-smi memory.total) is this model's: within
// [0.90, 1.02] of the catalogue figure read as GiB. The driver reports a little less than the
// nominal size (H100 80GB: 81559 MiB; L40S with ECC on: 46068 MiB of 48 GiB), never double.
bool MemoryFits(const GpuModelInfo& m, std::uint64_t reported_bytes);

// The catalogue model a GPU is, from its PCI device id and (when known) its memory size;
// nullptr when no row lists the id or the memory does not fit.
const GpuModelInfo* IdentifyGpu(std::uint16_t pci_device_id, std::optional<std::uint64_t> memory_bytes);

}  // namespace gpuforge::model
