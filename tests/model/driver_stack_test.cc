// The driver stack decisions (#14 OS): default branch, open modules, kernel, GPUDirect path.

#include "gpuforge/model/driver_stack.h"

#include <gtest/gtest.h>

namespace gpuforge::model {
namespace {

Software Ubuntu(std::string version) {
  Software sw;
  sw.os_distro = "ubuntu";
  sw.os_version = std::move(version);
  sw.ofed_kind = "doca-ofed";
  return sw;
}

TEST(DriverStack, DefaultBranchIsTheProductionBranchWithOpenModules) {
  Software sw = Ubuntu("24.04");
  EXPECT_EQ(DriverBranchOf(sw), "580");
  EXPECT_TRUE(OpenKernelModules(sw));
  sw.driver_version = "570.172.08";
  EXPECT_EQ(DriverBranchOf(sw), "570");
  sw.driver_branch = "550";
  EXPECT_EQ(DriverBranchOf(sw), "550");
  EXPECT_FALSE(OpenKernelModules(sw)) << "before 560 NVIDIA's installers default to the proprietary modules";
  sw.driver_kernel_modules = "open";
  EXPECT_TRUE(OpenKernelModules(sw));
}

TEST(DriverStack, KernelFromTheReleaseOrTheInventory) {
  EXPECT_EQ(KernelOf(Ubuntu("24.04")), (std::pair{6, 8}));
  EXPECT_EQ(KernelOf(Ubuntu("22.04")), (std::pair{5, 15}));
  Software rocky;
  rocky.os_distro = "rocky";
  rocky.os_version = "9.4";
  EXPECT_EQ(KernelOf(rocky), (std::pair{5, 14}));
  rocky.os_kernel = "6.12.0";
  EXPECT_EQ(KernelOf(rocky), (std::pair{6, 12}));
  EXPECT_EQ(KernelOf(Ubuntu("23.10")), std::nullopt);
}

TEST(DriverStack, DmaBufByDefaultWhereItWorks) {
  GpuDirectChoice c = ChooseGpuDirect(Ubuntu("24.04"));
  EXPECT_EQ(c.mode, GpuDirect::kDmaBuf);
  EXPECT_EQ(c.why, "DMA-BUF (default: open kernel modules 580, kernel 6.8); no nvidia-peermem");
  EXPECT_TRUE(c.dmabuf_blocker.empty());
}

TEST(DriverStack, PeermemWhereDmaBufCannotWorkSayingWhy) {
  Software old_kernel = Ubuntu("20.04");
  GpuDirectChoice c = ChooseGpuDirect(old_kernel);
  EXPECT_EQ(c.mode, GpuDirect::kPeermem);
  EXPECT_EQ(c.why, "nvidia-peermem (default: kernel 5.4 is older than 5.12, the first with RDMA DMA-BUF support), "
                   "with the doca-ofed peer-memory API");
  Software proprietary = Ubuntu("24.04");
  proprietary.driver_kernel_modules = "proprietary";
  EXPECT_EQ(ChooseGpuDirect(proprietary).mode, GpuDirect::kPeermem);
  Software old_branch = Ubuntu("24.04");
  old_branch.driver_branch = "510";
  old_branch.driver_kernel_modules = "open";
  EXPECT_EQ(ChooseGpuDirect(old_branch).mode, GpuDirect::kPeermem);
  EXPECT_NE(ChooseGpuDirect(old_branch).dmabuf_blocker.find("older than 515"), std::string::npos);
}

TEST(DriverStack, TheInventoryDecidesWhenItSays) {
  Software sw = Ubuntu("24.04");
  sw.gpudirect = "peermem";
  GpuDirectChoice c = ChooseGpuDirect(sw);
  EXPECT_EQ(c.mode, GpuDirect::kPeermem);
  EXPECT_TRUE(c.stated);
  EXPECT_EQ(c.why, "nvidia-peermem (software.rdma.gpudirect), with the doca-ofed peer-memory API");
  EXPECT_TRUE(HasPeerMemoryApi(sw));
  sw.ofed_kind = "rdma-core";
  EXPECT_FALSE(HasPeerMemoryApi(sw));
}

}  // namespace
}  // namespace gpuforge::model
