#pragma once

// Burn-in's judgement (#30 part 4): every GPU's sample series (probe/gpu_series.h) held against
// the guides' and gpuforge's marks, against itself over time and against its peers (GPUs of the
// same model on its node and across the run). Pure: the series come from the agent, the
// verdicts go to the same reports as validate's. docs/burnin.md lists every mark and its
// source.
//
// One verdict per GPU per check, entity "gpuN":
//   burnin.power        loaded median power against the enforced limit
//   burnin.clocks       loaded median SM clock against the peers' median
//   burnin.tflops       GEMM TFLOPS against the peers' median
//   burnin.temperature  loaded median temperature against the peers' at equal power
//   burnin.throttle     HW slowdown, HW thermal and power brake streaks; SW thermal time
//   burnin.gemm         wrong GEMM elements
//   burnin.ecc          new uncorrectable ECC errors and failed row remaps
//   burnin.xid          hardware Xids
//   burnin.pcie         the link below what it trains to, under load
//   burnin.samples      the samples ran to the planned end
// A FAIL names the minute its first bad sample or event came.

#include <span>
#include <vector>

#include "gpuforge/probe/gpu_series.h"
#include "gpuforge/validate/thresholds.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

// The checks JudgeBurnin gives verdicts for, in the order it gives them per GPU.
std::span<const std::string_view> BurninChecks();

// The phase whose windows count as "loaded" for power, clocks, TFLOPS and temperature.
inline constexpr std::string_view kBurninLoadPhase = "gemm";

// The longest run of consecutive samples with `bit` set across the windows (a gap in time
// between two windows breaks a run), and the start of the window it began in (seconds).
struct Streak {
  int samples = 0;
  double start_s = 0;
};
Streak LongestStreak(std::span<const probe::GpuWindow> windows, std::uint64_t bit);

// Every GPU judged, in the order given.
std::vector<Verdict> JudgeBurnin(const Thresholds& t, std::span<const probe::GpuSeries> series);

}  // namespace gpuforge::validate
