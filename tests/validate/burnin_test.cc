// Burn-in's judgement (#30 part 4) on synthetic sample series: the cases the issue names (the
// guide's 400 -> 300 W throttle, a 2-sample HW-slowdown blip against a 5-sample one, a GPU at
// 35% of its peers' TFLOPS, one wrong GEMM element, an Xid 79 in minute 40, a GPU 10 C hotter
// than its peers at equal power) and each check's other ways to fail or not judge. The series
// are built here as the agent's sampler will hand them over (probe/gpu_series.h); the sampler
// itself and the run are later parts of #30.

#include "gpuforge/validate/burnin.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "gpuforge/inventory/loader.h"

namespace gpuforge::validate {
namespace {

using probe::BitStreaks;
using probe::GpuSeries;
using probe::GpuWindow;
using probe::Spread;

Thresholds Marks() {
  inventory::LoadOutcome out = inventory::LoadString(
      "version: 1\ncluster: {name: b}\nprofiles:\n  p: {gpus: {model: H200, count: 8}}\nnodes:\n"
      "  - {name: g01, profile: p, address: 198.18.0.1}\n",
      "b.yaml");
  EXPECT_TRUE(out.ok()) << out.FormatDiagnostics();
  Result<Thresholds> t = Thresholds::For(*out.cluster, ModelTable{});
  EXPECT_TRUE(t.ok());
  return *t;
}

Spread Flat(double v) { return {v, v, v}; }

// What a healthy GPU under load gives: `minutes` of GEMM in 10 s windows of 10 samples.
struct Load {
  double power = 680, limit = 700, clock = 1980, temp = 62, tflops = 720;
  int minutes = 60;
};

GpuSeries Gpu(std::string node, int index, const Load& l = {}, std::string model = "NVIDIA H200") {
  GpuSeries g;
  g.node = std::move(node);
  g.gpu = fmt::format("gpu{}", index);
  g.model = std::move(model);
  g.pcie_gen_max = 5;
  g.pcie_width_max = 16;
  g.planned_s = l.minutes * 60.0;
  g.start_counters = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < l.minutes * 6; ++i) {
    GpuWindow w;
    w.start_s = i * 10.0;
    w.samples = 10;
    w.phase = "gemm";
    w.power_w = Flat(l.power);
    w.power_limit_w = Flat(l.limit);
    w.sm_clock_mhz = Flat(l.clock);
    w.mem_clock_mhz = Flat(3201);
    w.gpu_temp_c = Flat(l.temp);
    w.hbm_temp_c = Flat(l.temp + 8);
    w.tflops = l.tflops;
    w.wrong_elements = 0;
    w.pcie_gen = 5;
    w.pcie_width = 16;
    w.reasons = {{probe::kClocksEventSwPowerCap, BitStreaks{10, 10, 10, 10}}};
    w.counters = {0, 0, 0, 0, 0, 0};
    g.windows.push_back(std::move(w));
  }
  return g;
}

// Two nodes of eight.
std::vector<GpuSeries> Cluster(const Load& l = {}) {
  std::vector<GpuSeries> out;
  for (const char* node : {"g01", "g02"}) {
    for (int i = 0; i < 8; ++i) out.push_back(Gpu(node, i, l));
  }
  return out;
}

const Verdict& Of(const std::vector<Verdict>& v, std::string_view node, std::string_view gpu, std::string_view check) {
  for (const Verdict& x : v) {
    if (x.node == node && x.entity == gpu && x.check == check) return x;
  }
  static const Verdict kNone{};
  ADD_FAILURE() << "no " << check << " verdict for " << node << " " << gpu;
  return kNone;
}

// Every verdict that is not a PASS, as "node gpu check code".
std::vector<std::string> NotPassed(const std::vector<Verdict>& v) {
  std::vector<std::string> out;
  for (const Verdict& x : v) {
    if (x.state != State::kPass) out.push_back(fmt::format("{} {} {} {}", x.node, x.entity, x.check, x.code));
  }
  return out;
}

// Sets `bit` in the samples [from, from + n) of the run (seconds from the start, 1 Hz).
void SetBit(GpuSeries& g, std::uint64_t bit, int from, int n) {
  for (GpuWindow& w : g.windows) {
    const int w0 = static_cast<int>(w.start_s);
    std::vector<bool> set(static_cast<std::size_t>(w.samples), false);
    for (int s = 0; s < w.samples; ++s) set[static_cast<std::size_t>(s)] = w0 + s >= from && w0 + s < from + n;
    if (std::none_of(set.begin(), set.end(), [](bool b) { return b; })) continue;
    BitStreaks b;
    int run = 0;
    for (std::size_t s = 0; s < set.size(); ++s) {
      run = set[s] ? run + 1 : 0;
      b.set += set[s] ? 1 : 0;
      b.longest = std::max(b.longest, run);
    }
    while (b.head < w.samples && set[static_cast<std::size_t>(b.head)]) ++b.head;
    while (b.tail < w.samples && set[set.size() - 1 - static_cast<std::size_t>(b.tail)]) ++b.tail;
    w.reasons.emplace_back(bit, b);
  }
}

TEST(Burnin, AHealthyRunPassesEveryCheckOfEveryGpuWithAFigure) {
  const std::vector<GpuSeries> s = Cluster();
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  ASSERT_EQ(v.size(), s.size() * BurninChecks().size());
  EXPECT_TRUE(NotPassed(v).empty()) << fmt::format("{}", fmt::join(NotPassed(v), "\n"));
  std::set<std::string> checks;
  for (const Verdict& x : v) {
    checks.insert(x.check);
    EXPECT_TRUE(x.measured.has_value()) << x.check;
    EXPECT_FALSE(x.threshold.empty()) << x.check;
  }
  EXPECT_EQ(checks.size(), BurninChecks().size());
  // SW power cap is set throughout, as under any GEMM, and is never judged.
  EXPECT_NE(Of(v, "g01", "gpu0", "burnin.throttle").detail.find("SW power cap (0x4, normal under GEMM) 100.0%"),
            std::string::npos);
}

// Guide 004, Thermal throttling: "the GPUs will throttle to 300W". DCGM's targeted_power
// passes it at 0.75; gpuforge's mark is 0.9 of the enforced limit.
TEST(Burnin, TheGuidesGpuThrottledFrom400To300WFailsPower) {
  Load a100{.power = 390, .limit = 400, .clock = 1410, .temp = 65, .tflops = 280};
  std::vector<GpuSeries> s;
  for (int i = 0; i < 8; ++i) s.push_back(Gpu("a01", i, a100, "NVIDIA A100-SXM4-80GB"));
  for (int m = 20 * 6; m < 60 * 6; ++m) s[3].windows[static_cast<std::size_t>(m)].power_w = Flat(300);
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& bad = Of(v, "a01", "gpu3", "burnin.power");
  EXPECT_EQ(bad.state, State::kFail);
  EXPECT_EQ(bad.code, "burnin.power_low");
  EXPECT_DOUBLE_EQ(*bad.measured, 300);
  EXPECT_NE(bad.detail.find("0.75 x its 400 W limit; first below it at 0:20:00"), std::string::npos) << bad.detail;
  EXPECT_NE(bad.threshold.find(">= 0.90 x the enforced limit (360 of 400 W"), std::string::npos) << bad.threshold;
  EXPECT_EQ(Of(v, "a01", "gpu2", "burnin.power").state, State::kPass);
  // The mark is a threshold row: --param burnin.power.min_limit_fraction=0.75 (DCGM's) passes it.
  Thresholds dcgm = Marks();
  ASSERT_TRUE(dcgm.Override("burnin.power.min_limit_fraction", "0.75").ok());
  EXPECT_EQ(Of(JudgeBurnin(dcgm, s), "a01", "gpu3", "burnin.power").state, State::kPass);
}

TEST(Burnin, AHwSlowdownBlipOfTwoSamplesPassesAndFiveInARowFailAcrossAWindowEdge) {
  std::vector<GpuSeries> s = Cluster();
  SetBit(s[1], probe::kClocksEventHwSlowdown, 100, 2);  // two samples: a blip
  SetBit(s[1], probe::kClocksEventHwSlowdown, 300, 1);  // and a lone one later
  SetBit(s[2], probe::kClocksEventHwSlowdown, 2397, 5);  // five in a row, over the 2400 s window edge
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& blip = Of(v, "g01", "gpu1", "burnin.throttle");
  EXPECT_EQ(blip.state, State::kPass) << blip.detail;
  EXPECT_DOUBLE_EQ(*blip.measured, 2);
  EXPECT_NE(blip.detail.find("HW slowdown (0x8)"), std::string::npos) << blip.detail;
  const Verdict& held = Of(v, "g01", "gpu2", "burnin.throttle");
  EXPECT_EQ(held.state, State::kFail);
  EXPECT_EQ(held.code, "burnin.hw_slowdown");
  EXPECT_DOUBLE_EQ(*held.measured, 5);
  EXPECT_NE(held.detail.find("set for 5 samples in a row from about 0:39:50"), std::string::npos) << held.detail;
  // Three is the mark.
  std::vector<GpuSeries> three = Cluster();
  SetBit(three[0], probe::kClocksEventHwPowerBrake, 55, 3);
  EXPECT_EQ(Of(JudgeBurnin(Marks(), three), "g01", "gpu0", "burnin.throttle").code, "burnin.power_brake");
}

TEST(Burnin, SwThermalOverOnePercentOfTheTimeWarnsAndHwThermalFails) {
  std::vector<GpuSeries> s = Cluster();
  SetBit(s[4], probe::kClocksEventSwThermal, 600, 72);  // 2% of 3,600 samples, in a run
  SetBit(s[5], probe::kClocksEventSwThermal, 600, 20);  // 0.56%
  SetBit(s[6], probe::kClocksEventHwThermal, 1000, 30);
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  EXPECT_EQ(Of(v, "g01", "gpu4", "burnin.throttle").code, "burnin.sw_thermal");
  EXPECT_EQ(Of(v, "g01", "gpu4", "burnin.throttle").state, State::kWarn);
  EXPECT_EQ(Of(v, "g01", "gpu5", "burnin.throttle").state, State::kPass);
  EXPECT_EQ(Of(v, "g01", "gpu6", "burnin.throttle").code, "burnin.hw_thermal");
}

// NVIDIA/DCGM #122: an A100 at 6.7 of 19.2 TFLOPS passed --run xlong; its peers give it away.
TEST(Burnin, OneGpuAt35PercentOfItsPeersTflopsFailsAndOnlyIt) {
  std::vector<GpuSeries> s = Cluster();
  for (GpuWindow& w : s[13].windows) w.tflops = 0.35 * 720;
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  EXPECT_EQ(NotPassed(v), std::vector<std::string>{"g02 gpu5 burnin.tflops burnin.behind_peers"});
  const Verdict& bad = Of(v, "g02", "gpu5", "burnin.tflops");
  EXPECT_NE(bad.detail.find("0.35 x the median of 7 peer(s) on its node (720 TFLOPS)"), std::string::npos)
      << bad.detail;
  EXPECT_NE(bad.detail.find("0.35 x the median of 15 peer(s) across the run"), std::string::npos) << bad.detail;
  // 5% is the mark: 0.96 passes, 0.94 fails.
  for (GpuWindow& w : s[13].windows) w.tflops = 0.96 * 720;
  EXPECT_EQ(Of(JudgeBurnin(Marks(), s), "g02", "gpu5", "burnin.tflops").state, State::kPass);
  for (GpuWindow& w : s[13].windows) w.tflops = 0.94 * 720;
  EXPECT_EQ(Of(JudgeBurnin(Marks(), s), "g02", "gpu5", "burnin.tflops").state, State::kFail);
}

TEST(Burnin, AWholeNodeBehindTheRunFailsAcrossTheRunThoughItsNodePeersAgree) {
  std::vector<GpuSeries> s = Cluster();
  for (std::size_t i = 8; i < 16; ++i) {
    for (GpuWindow& w : s[i].windows) w.sm_clock_mhz = Flat(1700);
  }
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& c = Of(v, "g02", "gpu0", "burnin.clocks");
  EXPECT_EQ(c.code, "burnin.behind_peers");
  EXPECT_NE(c.detail.find("1.00 x the median of 7 peer(s) on its node"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("0.86 x the median of 15 peer(s) across the run"), std::string::npos) << c.detail;
  EXPECT_EQ(Of(v, "g01", "gpu0", "burnin.clocks").state, State::kPass);
}

TEST(Burnin, OneWrongGemmElementFailsWithTheMinute) {
  std::vector<GpuSeries> s = Cluster();
  s[7].windows[6 * 17 + 3].wrong_elements = 1;
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& bad = Of(v, "g01", "gpu7", "burnin.gemm");
  EXPECT_EQ(bad.code, "burnin.gemm_mismatch");
  EXPECT_DOUBLE_EQ(*bad.measured, 1);
  EXPECT_NE(bad.detail.find("the first at 0:17:30"), std::string::npos) << bad.detail;
  EXPECT_EQ(NotPassed(v).size(), 1u);
}

TEST(Burnin, AnXid79InMinute40FailsAndAnApplicationXidIsOnlyNoted) {
  std::vector<GpuSeries> s = Cluster();
  s[9].events.push_back({2400, 79, "GPU has fallen off the bus"});
  s[10].events.push_back({600, 13, "Graphics Engine Exception"});
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& bad = Of(v, "g02", "gpu1", "burnin.xid");
  EXPECT_EQ(bad.code, "burnin.xid");
  EXPECT_NE(bad.detail.find("Xid 79 at 0:40:00: GPU has fallen off the bus"), std::string::npos) << bad.detail;
  const Verdict& app = Of(v, "g02", "gpu2", "burnin.xid");
  EXPECT_EQ(app.state, State::kPass);
  EXPECT_NE(app.detail.find("not hardware, not judged: Xid 13 at 0:10:00"), std::string::npos) << app.detail;
}

// A kernel log the agent could not read is no evidence of no Xid.
TEST(Burnin, XidsNotWatchedSkipRatherThanPass) {
  std::vector<GpuSeries> s = Cluster();
  s[3].xid_unread = "cannot open /dev/kmsg: Operation not permitted";
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& x = Of(v, "g01", "gpu3", "burnin.xid");
  EXPECT_EQ(x.state, State::kSkip);
  EXPECT_EQ(x.code, "burnin.not_sampled");
  EXPECT_NE(x.detail.find("not watched: cannot open /dev/kmsg"), std::string::npos) << x.detail;
}

TEST(Burnin, AGpu10CHotterThanItsPeersAtEqualPowerFailsButNotWhenItDrawsMore) {
  std::vector<GpuSeries> s = Cluster();
  for (GpuWindow& w : s[2].windows) w.gpu_temp_c = Flat(72);
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& hot = Of(v, "g01", "gpu2", "burnin.temperature");
  EXPECT_EQ(hot.code, "burnin.hotter_than_peers");
  EXPECT_NE(hot.detail.find("+10.0 C against the median of 7 peer(s) on its node (62.0 C at 680 W"), std::string::npos)
      << hot.detail;
  EXPECT_EQ(NotPassed(v).size(), 1u);
  // 8 C is the mark, and hotter at more power is not a cooling finding.
  for (GpuWindow& w : s[2].windows) w.gpu_temp_c = Flat(69);
  EXPECT_EQ(Of(JudgeBurnin(Marks(), s), "g01", "gpu2", "burnin.temperature").state, State::kPass);
  for (GpuWindow& w : s[2].windows) {
    w.gpu_temp_c = Flat(72);
    w.power_w = Flat(690);  // 1.5% more than its peers' 680 W counts as equal power (5%)
  }
  EXPECT_EQ(Of(JudgeBurnin(Marks(), s), "g01", "gpu2", "burnin.temperature").code, "burnin.hotter_than_peers");
  for (GpuWindow& w : s[2].windows) w.power_w = Flat(760);
  const std::vector<Verdict> drawing_more = JudgeBurnin(Marks(), s);
  const Verdict& more = Of(drawing_more, "g01", "gpu2", "burnin.temperature");
  EXPECT_EQ(more.code, "burnin.unequal_power");
  EXPECT_EQ(more.state, State::kSkip);
}

TEST(Burnin, NewUncorrectableEccAndFailedRemapsFailFromTheirMinuteAndOldOnesDoNot) {
  std::vector<GpuSeries> s = Cluster();
  for (std::size_t i = 120; i < s[0].windows.size(); ++i) s[0].windows[i].counters.ecc_uncorrectable = 2;
  for (std::size_t i = 200; i < s[1].windows.size(); ++i) s[1].windows[i].counters.remap_failed = 1;
  // Errors from before the burn-in are not new.
  s[2].start_counters.ecc_uncorrectable = 5;
  for (GpuWindow& w : s[2].windows) w.counters.ecc_uncorrectable = 5;
  // NVML gives neither counter (ECC off): not judged, and said so.
  for (GpuWindow& w : s[3].windows) w.counters = {};
  s[3].start_counters = {};
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& ue = Of(v, "g01", "gpu0", "burnin.ecc");
  EXPECT_EQ(ue.code, "burnin.ecc_uncorrectable");
  EXPECT_NE(ue.detail.find("the first by 0:20:10: uncorrectable +2"), std::string::npos) << ue.detail;
  EXPECT_EQ(Of(v, "g01", "gpu1", "burnin.ecc").code, "burnin.remap_failed");
  EXPECT_EQ(Of(v, "g01", "gpu2", "burnin.ecc").state, State::kPass);
  EXPECT_EQ(Of(v, "g01", "gpu3", "burnin.ecc").code, "burnin.not_sampled");
  EXPECT_EQ(Of(v, "g01", "gpu3", "burnin.ecc").state, State::kSkip);
}

TEST(Burnin, APcieDowntrainUnderLoadFailsButALowerGenerationAtIdleDoesNot) {
  std::vector<GpuSeries> s = Cluster();
  for (std::size_t i = 60; i < 70; ++i) s[4].windows[i].pcie_width = 8;
  for (std::size_t i = 0; i < 30; ++i) {
    s[5].windows[i].phase = "idle";
    s[5].windows[i].pcie_gen = 1;  // the driver saves power at idle
  }
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& down = Of(v, "g01", "gpu4", "burnin.pcie");
  EXPECT_EQ(down.code, "burnin.pcie_downtrain");
  EXPECT_NE(down.detail.find("Gen5 x8 under load from 0:10:00 (10 loaded window(s) below Gen5 x16)"),
            std::string::npos)
      << down.detail;
  EXPECT_EQ(Of(v, "g01", "gpu5", "burnin.pcie").state, State::kPass);
}

TEST(Burnin, ANodeWhoseSamplesStopMidRunFailsWithWhyAndTheRestIsStillJudged) {
  std::vector<GpuSeries> s = Cluster();
  for (std::size_t i = 8; i < 16; ++i) {
    s[i].windows.resize(6 * 30);  // the node went silent at minute 30
  }
  s[8].windows[6 * 20].wrong_elements = 3;
  s[1].windows.resize(6 * 45);
  s[1].ended_code = "nvml.gone";
  s[1].ended_reason = "nvmlDeviceGetPowerUsage: GPU is lost";
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  const Verdict& silent = Of(v, "g02", "gpu3", "burnin.samples");
  EXPECT_EQ(silent.code, "burnin.stopped_early");
  EXPECT_NE(silent.detail.find("samples stop at 0:30:00 of 1:00:00: the node went silent"), std::string::npos)
      << silent.detail;
  EXPECT_NE(Of(v, "g01", "gpu1", "burnin.samples").detail.find("the agent said: nvml.gone: nvmlDeviceGetPowerUsage"),
            std::string::npos);
  EXPECT_EQ(Of(v, "g02", "gpu0", "burnin.gemm").code, "burnin.gemm_mismatch");
  EXPECT_EQ(Of(v, "g01", "gpu0", "burnin.samples").state, State::kPass);
  // A GPU no sample of which arrived: nothing is passed.
  std::vector<GpuSeries> none = {Gpu("g03", 0, {.minutes = 0})};
  none[0].planned_s = 600;
  for (const Verdict& x : JudgeBurnin(Marks(), none)) {
    EXPECT_NE(x.state, State::kPass) << x.check;
  }
}

TEST(Burnin, WithoutPeersOrLoadTheComparisonsSkipWithTheReason) {
  std::vector<GpuSeries> alone = {Gpu("g01", 0)};
  const std::vector<Verdict> v = JudgeBurnin(Marks(), alone);
  EXPECT_EQ(Of(v, "g01", "gpu0", "burnin.tflops").code, "burnin.no_peers");
  EXPECT_EQ(Of(v, "g01", "gpu0", "burnin.clocks").code, "burnin.no_peers");
  EXPECT_EQ(Of(v, "g01", "gpu0", "burnin.temperature").code, "burnin.no_peers");
  EXPECT_EQ(Of(v, "g01", "gpu0", "burnin.power").state, State::kPass);
  // Another model is no peer.
  std::vector<GpuSeries> mixed = {Gpu("g01", 0), Gpu("g01", 1, {}, "NVIDIA H100 80GB HBM3")};
  EXPECT_EQ(Of(JudgeBurnin(Marks(), mixed), "g01", "gpu1", "burnin.tflops").code, "burnin.no_peers");
  // An idle-only run judges no loaded figure.
  std::vector<GpuSeries> idle = Cluster();
  for (GpuSeries& g : idle) {
    for (GpuWindow& w : g.windows) w.phase = "idle";
  }
  for (std::string_view check : {"burnin.power", "burnin.clocks", "burnin.tflops", "burnin.temperature",
                                 "burnin.gemm", "burnin.pcie"}) {
    EXPECT_EQ(Of(JudgeBurnin(Marks(), idle), "g01", "gpu0", check).code, "burnin.no_load") << check;
  }
}

TEST(BurninStreak, JoinsRunsAcrossWindowsAndBreaksThemAtAGap) {
  GpuSeries g = Gpu("g01", 0, {.minutes = 2});
  SetBit(g, probe::kClocksEventHwSlowdown, 8, 25);  // 8..32: over three windows
  Streak s = LongestStreak(g.windows, probe::kClocksEventHwSlowdown);
  EXPECT_EQ(s.samples, 25);
  EXPECT_DOUBLE_EQ(s.start_s, 0);
  // A window lost in the middle (the agent missed 10 s) breaks it.
  g.windows.erase(g.windows.begin() + 2);
  s = LongestStreak(g.windows, probe::kClocksEventHwSlowdown);
  EXPECT_EQ(s.samples, 12);
  // A bit never set has no streak; the longest inside one window counts on its own.
  EXPECT_EQ(LongestStreak(g.windows, probe::kClocksEventHwThermal).samples, 0);
  GpuSeries one = Gpu("g01", 0, {.minutes = 1});
  SetBit(one, probe::kClocksEventHwThermal, 22, 4);
  s = LongestStreak(one.windows, probe::kClocksEventHwThermal);
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.start_s, 20);
  // Streak counts beyond the window's samples (hostile or corrupt) are clamped to it.
  one.windows[0].reasons.emplace_back(probe::kClocksEventHwPowerBrake, BitStreaks{50, 50, 50, 50});
  EXPECT_EQ(LongestStreak(one.windows, probe::kClocksEventHwPowerBrake).samples, 10);
}

// The sampler's folding and the judge's streak joining agree with the longest run counted on the
// raw 1 Hz samples, for random bit patterns over random window lengths (some short: lost samples).
TEST(BurninStreak, FoldedWindowsGiveTheLongestRunOfTheRawSamples) {
  std::mt19937 rng(20261207);
  for (int trial = 0; trial < 500; ++trial) {
    const double p = std::uniform_real_distribution<double>(0.05, 0.95)(rng);
    std::vector<probe::GpuWindow> windows;
    int longest = 0;
    int run = 0;
    for (int w = 0; w < 12; ++w) {
      const int n = std::uniform_int_distribution<int>(0, 10)(rng) < 2 ? 7 : 10;
      std::vector<probe::GpuSample> samples(static_cast<std::size_t>(n));
      for (probe::GpuSample& s : samples) {
        const bool set = std::bernoulli_distribution(p)(rng);
        s.reasons = set ? probe::kClocksEventHwThermal : 0;
        run = set ? run + 1 : 0;
        longest = std::max(longest, run);
      }
      windows.push_back(probe::FoldWindow(w * probe::kGpuWindowSeconds, "gemm", samples));
    }
    ASSERT_EQ(LongestStreak(windows, probe::kClocksEventHwThermal).samples, longest) << "trial " << trial;
  }
}

// Judging is N log N in GPUs: 8,000 GPUs (1,000 nodes) of an hour each, one of them slow.
TEST(BurninScale, AThousandNodesAreJudgedAndTheOneSlowGpuNamed) {
  std::vector<GpuSeries> s;
  s.reserve(8000);
  const GpuSeries model = Gpu("n", 0, {.minutes = 5});
  for (int n = 0; n < 1000; ++n) {
    for (int i = 0; i < 8; ++i) {
      s.push_back(model);
      s.back().node = fmt::format("n{:04}", n);
      s.back().gpu = fmt::format("gpu{}", i);
    }
  }
  for (GpuWindow& w : s[4321].windows) w.tflops = 600;
  const std::vector<Verdict> v = JudgeBurnin(Marks(), s);
  EXPECT_EQ(NotPassed(v), std::vector<std::string>{"n0540 gpu1 burnin.tflops burnin.behind_peers"});
}

}  // namespace
}  // namespace gpuforge::validate
