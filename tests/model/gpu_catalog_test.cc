#include "gpuforge/model/gpu_catalog.h"

#include <gtest/gtest.h>

#include <set>

namespace gpuforge::model {
namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024;

const GpuModelInfo* Named(std::string_view name) { return FindGpuModel(name); }

// Names as nvidia-smi prints them: "NVIDIA A100-SXM4-40GB" (deviceQuery in
// github.com/bottlerocket-os/bottlerocket/pull/3873), "NVIDIA H100 80GB HBM3" and "NVIDIA H200"
// (tests/data/facts), "NVIDIA GeForce RTX 2080 Ti" style GeForce names
// (github.com/NVIDIA/nvidia-docker/issues/1671).
TEST(GpuCatalog, NvidiaSmiNamesFindTheirRow) {
  ASSERT_NE(Named("NVIDIA A100-SXM4-40GB"), nullptr);
  EXPECT_EQ(Named("NVIDIA A100-SXM4-40GB")->name, "A100-40GB");
  EXPECT_EQ(Named("NVIDIA A100-SXM4-80GB")->name, "A100");
  EXPECT_EQ(Named("NVIDIA A100 80GB PCIe")->name, "A100-PCIE");
  EXPECT_EQ(Named("NVIDIA H100 80GB HBM3")->name, "H100");
  EXPECT_EQ(Named("NVIDIA H100 PCIe")->name, "H100-PCIE");
  EXPECT_EQ(Named("NVIDIA H100 NVL")->name, "H100-NVL");
  EXPECT_EQ(Named("NVIDIA H200")->name, "H200");
  EXPECT_EQ(Named("NVIDIA GeForce RTX 4090")->name, "RTX4090");
  EXPECT_EQ(Named("rtx-4090")->name, "RTX4090");
  // The spellings inventories already use keep working.
  EXPECT_EQ(Named("h200-sxm")->name, "H200");
  EXPECT_EQ(Named("A100-80GB")->name, "A100");
  EXPECT_EQ(Named("AMD Instinct MI300X")->name, "MI300X");
  EXPECT_EQ(Named("NVIDIA GeForce RTX 2080 Ti"), nullptr);
  EXPECT_EQ(Named(""), nullptr);
  EXPECT_EQ(Named("NVIDIA"), nullptr);
}

// Device ids from pci.ids (github.com/pciutils/pciids, version 2026.05.24); memory sizes as
// nvidia-smi reports them (github.com/modal-labs/modal-client/pull/2797: H100 81559 MiB,
// A100 80GB 81920 MiB, A100 40GB 40960 MiB, L40S 46068 MiB; the H200 fixture 143771 MiB).
TEST(GpuCatalog, IdentifiesByDeviceIdAndMemory) {
  EXPECT_EQ(IdentifyGpu(0x20b0, 40960 * kMiB)->name, "A100-40GB");
  EXPECT_EQ(IdentifyGpu(0x20b2, 81920 * kMiB)->name, "A100");
  EXPECT_EQ(IdentifyGpu(0x2330, 81559 * kMiB)->name, "H100");
  EXPECT_EQ(IdentifyGpu(0x2335, 143771 * kMiB)->name, "H200");
  EXPECT_EQ(IdentifyGpu(0x26b9, 46068 * kMiB)->name, "L40S");
  EXPECT_EQ(IdentifyGpu(0x2684, std::nullopt)->name, "RTX4090");
  EXPECT_EQ(IdentifyGpu(0x20b2, 40960 * kMiB), nullptr);  // an 80 GB id with 40 GB is no A100
  EXPECT_EQ(IdentifyGpu(0x1e07, std::nullopt), nullptr);  // not in the catalogue
  EXPECT_FALSE(MemoryFits(*Named("A100"), 40960 * kMiB));
  EXPECT_TRUE(MemoryFits(*Named("A100-40GB"), 40960 * kMiB));
  EXPECT_FALSE(MemoryFits(*Named("H100"), 95830 * kMiB));  // an H100 NVL's 94 GB
}

TEST(GpuCatalog, NoDeviceIdBelongsToTwoRows) {
  std::set<std::uint16_t> seen;
  for (const GpuModelInfo& m : GpuCatalog()) {
    for (std::uint16_t id : m.pci_device_ids) EXPECT_TRUE(seen.insert(id).second) << m.name << " " << id;
  }
  EXPECT_GE(seen.size(), 14u);
}

}  // namespace
}  // namespace gpuforge::model
