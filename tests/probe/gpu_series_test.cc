// Burn-in's windows: 1 Hz samples folded as the agent will keep them (probe/gpu_series.h).

#include "gpuforge/probe/gpu_series.h"

#include <gtest/gtest.h>

namespace gpuforge::probe {
namespace {

GpuSample At(double power, std::uint64_t reasons) {
  GpuSample s;
  s.power_w = power;
  s.power_limit_w = 700;
  s.gpu_temp_c = 60;
  s.pcie_gen = 5;
  s.pcie_width = 16;
  s.reasons = reasons;
  return s;
}

TEST(GpuSeriesFold, GaugesAreMinMedianMaxOverTheSamplesThatHaveThem) {
  std::vector<GpuSample> s;
  for (double p : {600, 700, 650, 640, 660}) s.push_back(At(p, 0));
  s[2].power_w.reset();  // one read failed
  s[1].pcie_gen = 3;     // a downtrain in one sample shows as the window's lowest
  const GpuWindow w = FoldWindow(120, "gemm", s);
  EXPECT_EQ(w.start_s, 120);
  EXPECT_EQ(w.samples, 5);
  EXPECT_EQ(w.phase, "gemm");
  ASSERT_TRUE(w.power_w.has_value());
  EXPECT_EQ(*w.power_w, (Spread{600, 650, 700}));
  EXPECT_EQ(*w.pcie_gen, 3);
  EXPECT_EQ(*w.pcie_width, 16);
  EXPECT_FALSE(w.sm_clock_mhz.has_value());  // never given: absent, not 0
  EXPECT_TRUE(w.reasons.empty());
}

TEST(GpuSeriesFold, ReasonBitsBecomeStreaksWithTheirHeadAndTail) {
  // HW slowdown in samples 0-1, 4-6 and 9; SW power cap throughout; one sample unread.
  const std::vector<int> slow = {1, 1, 0, 0, 1, 1, 1, 0, 0, 1};
  std::vector<GpuSample> s;
  for (int x : slow) s.push_back(At(650, kClocksEventSwPowerCap | (x ? kClocksEventHwSlowdown : 0)));
  s[7].reasons.reset();
  const GpuWindow w = FoldWindow(0, "gemm", s);
  ASSERT_EQ(w.reasons.size(), 2u);
  EXPECT_EQ(w.reasons[0].first, kClocksEventSwPowerCap);
  EXPECT_EQ(w.reasons[0].second, (BitStreaks{9, 7, 7, 2}));  // the unread sample breaks it
  EXPECT_EQ(w.reasons[1].first, kClocksEventHwSlowdown);
  EXPECT_EQ(w.reasons[1].second, (BitStreaks{6, 3, 2, 1}));
}

TEST(GpuSeriesFold, CountersAreTheLastReadingInTheWindow) {
  std::vector<GpuSample> s(3, At(650, 0));
  s[0].counters.ecc_uncorrectable = 0;
  s[1].counters.ecc_uncorrectable = 2;
  s[2].counters.remap_pending = 1;  // and the last sample's uncorrectable read failed
  const GpuWindow w = FoldWindow(0, "gemm", s);
  EXPECT_EQ(w.counters.ecc_uncorrectable, 2);
  EXPECT_EQ(w.counters.remap_pending, 1);
  EXPECT_FALSE(w.counters.pcie_replay.has_value());
}

TEST(GpuSeriesFold, NoSamplesIsAnEmptyWindow) {
  const GpuWindow w = FoldWindow(30, "idle", {});
  EXPECT_EQ(w.samples, 0);
  EXPECT_FALSE(w.power_w.has_value());
  EXPECT_TRUE(w.reasons.empty());
}

}  // namespace
}  // namespace gpuforge::probe
