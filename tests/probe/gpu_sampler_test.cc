// Burn-in's 1 Hz NVML read (probe/gpu/sampler.h) against the fake NVML (fake_nvml.h): units, what
// a GPU does not support, and a GPU lost mid-read. No GPU or NVML is needed.

#include <gtest/gtest.h>

#include "probe/fake_nvml.h"
#include "probe/gpu/sampler.h"

namespace gpuforge::probe::internal {
namespace {

class GpuSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nvml_.gpus.resize(1);
    g_nvml = &nvml_;
  }
  void TearDown() override { g_nvml = nullptr; }
  FakeNvmlGpu& gpu() { return nvml_.gpus[0]; }
  static nvml::Device Device() { return reinterpret_cast<nvml::Device>(static_cast<std::uintptr_t>(1)); }
  FakeNvml nvml_;
};

TEST_F(GpuSamplerTest, ReadsEveryFieldInItsUnit) {
  gpu().power_mw = 681500;
  gpu().temperature = 64;
  gpu().clock_reasons = nvml::kReasonSwPowerCap | nvml::kReasonHwSlowdown;
  gpu().ecc_uncorrected_volatile = 2;
  gpu().ecc_corrected_volatile = 7;
  gpu().remap_pending = 1;
  gpu().pcie_replay = 4;
  gpu().nvlink_errors_per_counter = 1;  // 18 links x 4 counters
  gpu().width = 8;
  const gpuforge::Result<GpuSample> s = ReadGpuSample(FakeApi(), Device());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_DOUBLE_EQ(*s->power_w, 681.5);
  EXPECT_DOUBLE_EQ(*s->power_limit_w, 700);
  EXPECT_DOUBLE_EQ(*s->sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(*s->mem_clock_mhz, 3201);
  EXPECT_DOUBLE_EQ(*s->gpu_temp_c, 64);
  EXPECT_FALSE(s->hbm_temp_c.has_value());  // not read yet, and so not pretended
  EXPECT_EQ(*s->pcie_gen, 5);
  EXPECT_EQ(*s->pcie_width, 8);
  EXPECT_EQ(*s->reasons, kClocksEventSwPowerCap | kClocksEventHwSlowdown);
  EXPECT_DOUBLE_EQ(*s->counters.ecc_uncorrectable, 2);
  EXPECT_DOUBLE_EQ(*s->counters.ecc_correctable, 7);
  EXPECT_DOUBLE_EQ(*s->counters.remap_pending, 1);
  EXPECT_DOUBLE_EQ(*s->counters.remap_failed, 0);
  EXPECT_DOUBLE_EQ(*s->counters.pcie_replay, 4);
  EXPECT_DOUBLE_EQ(*s->counters.nvlink_errors, 72);
  const PcieMax max = ReadPcieMax(FakeApi(), Device());
  EXPECT_EQ(max.gen, 5);
  EXPECT_EQ(max.width, 16);
}

TEST_F(GpuSamplerTest, WhatTheGpuOrDriverDoesNotGiveIsAbsentNotZero) {
  gpu().not_supported = {"nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetNvLinkErrorCounter"};
  NvmlApi old = FakeApi();
  old.nvmlDeviceGetClockInfo = nullptr;  // a driver without the call
  const gpuforge::Result<GpuSample> s = ReadGpuSample(old, Device());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->sm_clock_mhz.has_value());
  EXPECT_FALSE(s->counters.ecc_uncorrectable.has_value());
  EXPECT_FALSE(s->counters.remap_failed.has_value());
  EXPECT_FALSE(s->counters.nvlink_errors.has_value());
  EXPECT_TRUE(s->power_w.has_value());
}

TEST_F(GpuSamplerTest, AGpuLostMidReadEndsTheSampleNamingTheCall) {
  gpu().fail_call = "nvmlDeviceGetCurrentClocksEventReasons";
  gpu().fail_rc = nvml::kGpuIsLost;
  const gpuforge::Result<GpuSample> s = ReadGpuSample(FakeApi(), Device());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "nvmlDeviceGetCurrentClocksEventReasons failed: GPU is lost (NVML error 15)");
  // The driver unloaded (a reload mid-run) is the same.
  gpu().fail_call = "nvmlDeviceGetPowerUsage";
  gpu().fail_rc = nvml::kDriverNotLoaded;
  EXPECT_FALSE(ReadGpuSample(FakeApi(), Device()).ok());
  // Any other failure of one call leaves only that field out.
  gpu().fail_rc = 999;
  const gpuforge::Result<GpuSample> other = ReadGpuSample(FakeApi(), Device());
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->power_w.has_value());
  EXPECT_TRUE(other->gpu_temp_c.has_value());
}

}  // namespace
}  // namespace gpuforge::probe::internal
