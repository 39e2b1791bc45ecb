// Burn-in's 1 Hz NVML read (probe/gpu/sampler.h) against the fake NVML (fake_nvml.h): units, what
// a GPU does not support, and a GPU lost mid-read. No GPU or NVML is needed.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <limits>
#include <map>

#include <fmt/format.h>

#include <utility>

#include "gpuforge/probe/gpu_stream.h"
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
  EXPECT_DOUBLE_EQ(*s->hbm_temp_c, 47);
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

// NVML_FI_DEV_MEMORY_TEMP comes in whichever union member the valueType names; a GDDR board
// fails the field while the call succeeds, and a type NVML never defined is no reading.
TEST_F(GpuSamplerTest, HbmTemperatureIsTheFieldValueInItsOwnType) {
  const auto read = [&] {
    const gpuforge::Result<GpuSample> s = ReadGpuSample(FakeApi(), Device());
    EXPECT_TRUE(s.ok());
    return s.ok() ? s->hbm_temp_c : std::nullopt;
  };
  for (const int type : {nvml::kValueDouble, nvml::kValueUnsignedInt, nvml::kValueSignedInt,
                         nvml::kValueSignedLongLong}) {
    gpu().hbm_temp_type = type;
    gpu().hbm_temp = 71;
    EXPECT_EQ(read(), 71.0) << "valueType " << type;
  }
  gpu().hbm_temp_type = 7;  // NVML_VALUE_TYPE_COUNT: not a type
  EXPECT_EQ(read(), std::nullopt);
  gpu().hbm_temp_type = nvml::kValueDouble;
  gpu().hbm_temp = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(read(), std::nullopt);
  gpu().hbm_temp = 71;
  gpu().hbm_temp_rc = nvml::kNotSupported;  // the field, not the call
  EXPECT_EQ(read(), std::nullopt);
  gpu().hbm_temp_rc = nvml::kSuccess;
  gpu().not_supported.insert("nvmlDeviceGetFieldValues");  // the call
  EXPECT_EQ(read(), std::nullopt);
  NvmlApi old = FakeApi();
  old.nvmlDeviceGetFieldValues = nullptr;  // a driver without it
  const gpuforge::Result<GpuSample> s = ReadGpuSample(old, Device());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->hbm_temp_c.has_value());
  EXPECT_TRUE(s->gpu_temp_c.has_value());
}

TEST_F(GpuSamplerTest, AGpuLostInTheFieldValueEndsTheSample) {
  gpu().hbm_temp_rc = nvml::kGpuIsLost;
  const gpuforge::Result<GpuSample> s = ReadGpuSample(FakeApi(), Device());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "nvmlDeviceGetFieldValues (NVML_FI_DEV_MEMORY_TEMP) failed: GPU is lost (NVML error 15)");
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

// The sampler's loop on a clock that never sleeps: time jumps to each wait, and what a test
// wants to happen at a second (a GPU lost, Ctrl-C, a stall) runs as the clock reaches it.
class GpuSamplerLoopTest : public GpuSamplerTest {
 protected:
  void SetUp() override {
    GpuSamplerTest::SetUp();
    nvml_.gpus.resize(2);
    nvml_.gpus[1].bus_id = "00000000:9A:00.0";
  }
  struct Got {
    std::vector<std::vector<GpuWindow>> windows = std::vector<std::vector<GpuWindow>>(2);
    std::vector<std::string> ended = std::vector<std::string>(2);
  };
  Got Run(double seconds, const std::atomic<bool>* cancel = nullptr) {
    Got got;
    double t = 0;
    SamplerClock clock{[&t] { return t; },
                       [&](double until) {
                         t = std::max(t, until);
                         if (auto it = at_.find(static_cast<int>(until)); it != at_.end()) it->second(t);
                       }};
    const nvml::Device devices[] = {Handle(0), Handle(1)};
    RunSampler(
        FakeApi(), devices, seconds, [](double start) { return start < 20 ? "gemm" : "idle"; }, cancel, clock,
        SamplerSink{[&](std::size_t i, GpuWindow w) { got.windows[i].push_back(std::move(w)); },
                    [&](std::size_t i, std::string why) { got.ended[i] = std::move(why); }});
    return got;
  }
  static nvml::Device Handle(unsigned i) { return reinterpret_cast<nvml::Device>(static_cast<std::uintptr_t>(i + 1)); }
  std::map<int, std::function<void(double&)>> at_;  // second -> what happens then
};

TEST_F(GpuSamplerLoopTest, TenSecondWindowsPerGpuWithTheirPhaseAndAShortLastOne) {
  nvml_.gpus[1].clock_reasons = nvml::kReasonHwThermalSlowdown;
  const Got got = Run(35);
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(got.windows[i].size(), 4u) << i;
    EXPECT_EQ(got.windows[i][0].start_s, 0);
    EXPECT_EQ(got.windows[i][3].start_s, 30);
    EXPECT_EQ(got.windows[i][0].samples, 10);
    EXPECT_EQ(got.windows[i][3].samples, 5);
    EXPECT_EQ(got.windows[i][1].phase, "gemm");
    EXPECT_EQ(got.windows[i][2].phase, "idle");
    EXPECT_TRUE(got.ended[i].empty());
  }
  ASSERT_EQ(got.windows[1][0].reasons.size(), 1u);
  EXPECT_EQ(got.windows[1][0].reasons[0].second, (BitStreaks{10, 10, 10, 10}));
  // A run of whole windows ends without an empty one.
  EXPECT_EQ(Run(30).windows[0].size(), 3u);
  EXPECT_TRUE(Run(0).windows[0].empty());
}

TEST_F(GpuSamplerLoopTest, AGpuLostMidRunEndsItsSeriesWithTheReasonAndTheOtherGoesOn) {
  at_[12] = [this](double&) { nvml_.gpus[0].fail_call = "nvmlDeviceGetPowerUsage"; };
  const Got got = Run(30);
  ASSERT_EQ(got.windows[0].size(), 2u);
  EXPECT_EQ(got.windows[0][1].start_s, 10);
  EXPECT_EQ(got.windows[0][1].samples, 2);  // seconds 10 and 11
  EXPECT_EQ(got.ended[0], "nvmlDeviceGetPowerUsage failed: GPU is lost (NVML error 15)");
  EXPECT_EQ(got.windows[1].size(), 3u);
  EXPECT_TRUE(got.ended[1].empty());
}

TEST_F(GpuSamplerLoopTest, CtrlCStopsAtTheNextSecondAndAStallLosesTheSecondsItMissed) {
  std::atomic<bool> stop{false};
  at_[5] = [](double& t) { t += 2.5; };  // the reads stalled: seconds 5 and 6 are not seen
  at_[23] = [&stop](double&) { stop = true; };
  const Got got = Run(60, &stop);
  ASSERT_EQ(got.windows[0].size(), 3u);
  EXPECT_EQ(got.windows[0][0].samples, 8);
  EXPECT_EQ(got.windows[0][1].samples, 10);
  EXPECT_EQ(got.windows[0][2].samples, 3);  // 20, 21, 22
}

TEST_F(GpuSamplerTest, ASeriesStartsWithTheModelTheLinkMaximumAndTheCounters) {
  gpu().ecc_uncorrected_volatile = 3;
  gpu().gen_max = 5;
  gpu().width_max = 16;
  const GpuSeries g = StartSeries(FakeApi(), Device(), "gpu0", 3600);
  EXPECT_EQ(g.gpu, "gpu0");
  EXPECT_EQ(g.model, "NVIDIA H200");
  EXPECT_EQ(g.pcie_gen_max, 5);
  EXPECT_EQ(g.pcie_width_max, 16);
  EXPECT_EQ(g.start_counters.ecc_uncorrectable, 3);
  EXPECT_EQ(g.planned_s, 3600);
  EXPECT_TRUE(g.windows.empty());
}

// The agent's stream of a run (StreamGpus): what `gpuforge agent sample` prints, parsed and
// folded as the controller will (gpu_stream.h), so the two sides are tested against each other.
class GpuStreamRunTest : public GpuSamplerLoopTest {
 protected:
  struct Run {
    gpuforge::Status status;
    std::vector<std::string> lines;
    std::vector<GpuSeries> series;
  };
  Run Stream(double seconds, const std::atomic<bool>* cancel = nullptr, bool log_readable = true) {
    Run run;
    double t = 0;
    StreamSources from;
    from.nvml = [this] { return nvml_load_; };
    from.make_clock = [&] {
      return SamplerClock{[&t] { return t; },
                          [&](double until) {
                            t = std::max(t, until);
                            if (auto it = at_.find(static_cast<int>(until)); it != at_.end()) it->second(t);
                          }};
    };
    if (log_readable) {
      from.kernel_log = [this] { return std::exchange(kernel_log_, ""); };
    } else {
      from.kernel_log_unread = "cannot open /dev/kmsg: Operation not permitted";
    }
    run.status = StreamGpus(from, seconds, "idle", cancel, [&run](const std::string& l) { run.lines.push_back(l); });
    StreamFold fold("n1", seconds);
    for (std::size_t i = 0; i < run.lines.size(); ++i) {
      gpuforge::Result<StreamLine> l = ParseStreamLine(fmt::format("line {}", i + 1), run.lines[i]);
      EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message);
      if (!l.ok()) continue;
      gpuforge::Status st = fold.Take(std::move(*l));
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    }
    run.series = fold.Series();
    return run;
  }
  NvmlLoad nvml_load_{std::make_shared<NvmlApi>(FakeApi()), "", ""};
  std::string kernel_log_;
};

TEST_F(GpuStreamRunTest, EveryGpuStartsSendsItsWindowsAndTheXidsOnItsBus) {
  at_[14] = [this](double&) {
    kernel_log_ =
        "3,1234,98765432,-;NVRM: Xid (PCI:0000:9a:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n"
        "3,1235,98765433,-;NVRM: Xid (PCI:0000:77:00): 48, pid=1, a GPU NVML does not list\n";
  };
  const Run run = Stream(25);
  ASSERT_TRUE(run.status.ok()) << run.status.error().message;
  ASSERT_EQ(run.series.size(), 2u);
  for (const GpuSeries& g : run.series) {
    EXPECT_EQ(g.node, "n1");
    EXPECT_EQ(g.model, "NVIDIA H200");
    EXPECT_EQ(g.planned_s, 25);
    EXPECT_EQ(g.pcie_gen_max, 5);
    EXPECT_TRUE(g.xid_unread.empty());
    ASSERT_EQ(g.windows.size(), 3u) << g.gpu;
    EXPECT_EQ(g.windows[0].samples, 10);
    EXPECT_EQ(g.windows[2].samples, 5);
    EXPECT_EQ(g.windows[1].phase, "idle");
    EXPECT_DOUBLE_EQ(g.windows[0].hbm_temp_c->median, 47);
    EXPECT_TRUE(g.ended_code.empty());
  }
  EXPECT_TRUE(run.series[0].events.empty());
  ASSERT_EQ(run.series[1].events.size(), 1u);
  EXPECT_EQ(run.series[1].events[0].xid, 79);
  // Read as the window of seconds 10-19 closed: timed to within that window.
  EXPECT_GE(run.series[1].events[0].at_s, 14);
  EXPECT_LE(run.series[1].events[0].at_s, 20);
  EXPECT_EQ(nvml_.inits, 1);
  EXPECT_EQ(nvml_.shutdowns, 1);
}

TEST_F(GpuStreamRunTest, ALostGpuEndsWithTheCallAndCtrlCEndsTheOthers) {
  std::atomic<bool> stop = false;
  at_[12] = [this](double&) { nvml_.gpus[0].fail_call = "nvmlDeviceGetPowerUsage"; };
  at_[33] = [&stop](double&) { stop = true; };
  const Run run = Stream(60, &stop);
  ASSERT_TRUE(run.status.ok());
  ASSERT_EQ(run.series.size(), 2u);
  EXPECT_EQ(run.series[0].ended_code, "burnin.nvml_lost");
  EXPECT_EQ(run.series[0].ended_reason, "nvmlDeviceGetPowerUsage failed: GPU is lost (NVML error 15)");
  EXPECT_EQ(run.series[0].windows.size(), 2u);  // 0-9, and 10-11 sent short when it was lost
  EXPECT_EQ(run.series[1].ended_code, "burnin.stopped");
  EXPECT_EQ(run.series[1].ended_reason, "the agent was stopped 33 s into the planned 60 s");
  EXPECT_EQ(run.series[1].windows.size(), 4u);
  EXPECT_EQ(nvml_.shutdowns, 1);
}

// Two GPUs lost in one window: each one's Xid is read before its end, not lost with it.
TEST_F(GpuStreamRunTest, TheXidOfALostGpuIsSentBeforeItsEnd) {
  at_[12] = [this](double&) {
    nvml_.gpus[0].fail_call = "nvmlDeviceGetPowerUsage";
    kernel_log_ = "3,1,1,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus.\n";
  };
  at_[14] = [this](double&) {
    nvml_.gpus[1].fail_call = "nvmlDeviceGetPowerUsage";
    kernel_log_ = "3,2,2,-;NVRM: Xid (PCI:0000:9a:00): 79, pid=1, GPU has fallen off the bus.\n";
  };
  const Run run = Stream(30);
  ASSERT_TRUE(run.status.ok());
  ASSERT_EQ(run.series.size(), 2u);
  for (const GpuSeries& g : run.series) {
    EXPECT_EQ(g.ended_code, "burnin.nvml_lost") << g.gpu;
    ASSERT_EQ(g.events.size(), 1u) << g.gpu;
    EXPECT_EQ(g.events[0].xid, 79);
  }
}

TEST_F(GpuStreamRunTest, AKernelLogThatCannotBeReadIsSaidInEveryStartLine) {
  const Run run = Stream(10, nullptr, /*log_readable=*/false);
  ASSERT_TRUE(run.status.ok());
  ASSERT_EQ(run.series.size(), 2u);
  for (const GpuSeries& g : run.series) EXPECT_EQ(g.xid_unread, "cannot open /dev/kmsg: Operation not permitted");
}

TEST_F(GpuStreamRunTest, NoNvmlNoDriverOrNoGpuIsAnErrorBeforeAnyLine) {
  nvml_load_ = NvmlLoad{nullptr, "gpu.no_nvml", "NVML (libnvidia-ml.so.1) does not load: not found"};
  Run run = Stream(10);
  ASSERT_FALSE(run.status.ok());
  EXPECT_EQ(run.status.error().message, "gpu.no_nvml: NVML (libnvidia-ml.so.1) does not load: not found");
  EXPECT_TRUE(run.lines.empty());
  nvml_load_ = NvmlLoad{std::make_shared<NvmlApi>(FakeApi()), "", ""};
  nvml_.init_rc = nvml::kDriverNotLoaded;
  run = Stream(10);
  ASSERT_FALSE(run.status.ok());
  EXPECT_EQ(run.status.error().message, "gpu.nvml_error: nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)");
  EXPECT_TRUE(run.lines.empty());
  nvml_.init_rc = nvml::kSuccess;
  nvml_.gpus.clear();
  run = Stream(10);
  ASSERT_FALSE(run.status.ok());
  EXPECT_EQ(run.status.error().message, "gpu.none: NVML sees no GPU");
  EXPECT_TRUE(run.lines.empty());
  EXPECT_EQ(nvml_.shutdowns, nvml_.inits - 1);  // every successful init shut down
}

}  // namespace
}  // namespace gpuforge::probe::internal
