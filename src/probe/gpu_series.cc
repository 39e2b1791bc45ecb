#include "gpuforge/probe/gpu_series.h"

#include <algorithm>

#include "gpuforge/probe/probe.h"

namespace gpuforge::probe {
namespace {

std::optional<Spread> SpreadOf(const std::vector<GpuSample>& samples, std::optional<double> GpuSample::*gauge) {
  std::vector<double> v;
  for (const GpuSample& s : samples) {
    if ((s.*gauge).has_value()) v.push_back(*(s.*gauge));
  }
  if (v.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return Spread{*lo, Median(v), *hi};
}

std::optional<int> LowestOf(const std::vector<GpuSample>& samples, std::optional<int> GpuSample::*field) {
  std::optional<int> low;
  for (const GpuSample& s : samples) {
    if ((s.*field).has_value()) low = low ? std::min(*low, *(s.*field)) : *(s.*field);
  }
  return low;
}

std::optional<double> LastOf(const std::vector<GpuSample>& samples, std::optional<double> GpuCounters::*counter) {
  for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
    if ((it->counters.*counter).has_value()) return it->counters.*counter;
  }
  return std::nullopt;
}

}  // namespace

GpuWindow FoldWindow(double start_s, std::string phase, const std::vector<GpuSample>& samples) {
  GpuWindow w;
  w.start_s = start_s;
  w.samples = static_cast<int>(samples.size());
  w.phase = std::move(phase);
  w.power_w = SpreadOf(samples, &GpuSample::power_w);
  w.power_limit_w = SpreadOf(samples, &GpuSample::power_limit_w);
  w.sm_clock_mhz = SpreadOf(samples, &GpuSample::sm_clock_mhz);
  w.mem_clock_mhz = SpreadOf(samples, &GpuSample::mem_clock_mhz);
  w.gpu_temp_c = SpreadOf(samples, &GpuSample::gpu_temp_c);
  w.hbm_temp_c = SpreadOf(samples, &GpuSample::hbm_temp_c);
  w.pcie_gen = LowestOf(samples, &GpuSample::pcie_gen);
  w.pcie_width = LowestOf(samples, &GpuSample::pcie_width);
  for (std::uint64_t bit : kClocksEventKept) {
    BitStreaks b;
    int run = 0;
    bool leading = true;
    for (const GpuSample& s : samples) {
      const bool set = s.reasons.has_value() && (*s.reasons & bit) != 0;
      run = set ? run + 1 : 0;
      b.set += set ? 1 : 0;
      b.longest = std::max(b.longest, run);
      if (leading && set) ++b.head;
      leading = leading && set;
    }
    b.tail = run;
    if (b.set > 0) w.reasons.emplace_back(bit, b);
  }
  w.counters.ecc_uncorrectable = LastOf(samples, &GpuCounters::ecc_uncorrectable);
  w.counters.ecc_correctable = LastOf(samples, &GpuCounters::ecc_correctable);
  w.counters.remap_failed = LastOf(samples, &GpuCounters::remap_failed);
  w.counters.remap_pending = LastOf(samples, &GpuCounters::remap_pending);
  w.counters.pcie_replay = LastOf(samples, &GpuCounters::pcie_replay);
  w.counters.nvlink_errors = LastOf(samples, &GpuCounters::nvlink_errors);
  return w;
}

}  // namespace gpuforge::probe
