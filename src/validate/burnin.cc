#include "gpuforge/validate/burnin.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "gpuforge/model/xid.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace {

using probe::GpuCounters;
using probe::GpuSeries;
using probe::GpuWindow;
using probe::Spread;

constexpr std::array<std::string_view, 10> kChecks = {
    "burnin.power", "burnin.clocks", "burnin.tflops", "burnin.temperature", "burnin.throttle",
    "burnin.gemm",  "burnin.ecc",    "burnin.xid",    "burnin.pcie",        "burnin.samples"};

// "0:40:00": hours may pass 24 on a run of days.
std::string Clock(double s) {
  const long long t = std::llround(std::max(0.0, s));
  return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
}

Verdict Start(const GpuSeries& g, std::string_view check) {
  Verdict v;
  v.check = std::string(check);
  v.node = g.node;
  v.entity = g.gpu;
  v.state = State::kPass;
  return v;
}

Verdict With(Verdict v, std::string_view code, std::string detail) {
  internal::Mark(v, code);
  v.detail = std::move(detail);
  return v;
}

// A threshold row cited in a verdict: "KEY: where its value comes from".
std::string Cite(const Thresholds& t, std::string_view key) { return fmt::format("{}: {}", key, t.SourceOf(key)); }

bool Loaded(const GpuWindow& w) { return w.phase == kBurninLoadPhase; }

// The median over the loaded windows of a gauge's window medians.
std::optional<double> LoadedMedian(const GpuSeries& g, std::optional<Spread> GpuWindow::*gauge) {
  std::vector<double> v;
  for (const GpuWindow& w : g.windows) {
    if (Loaded(w) && (w.*gauge).has_value()) v.push_back((w.*gauge)->median);
  }
  if (v.empty()) return std::nullopt;
  return probe::Median(std::move(v));
}

std::optional<double> LoadedTflops(const GpuSeries& g) {
  std::vector<double> v;
  for (const GpuWindow& w : g.windows) {
    if (Loaded(w) && w.tflops.has_value()) v.push_back(*w.tflops);
  }
  if (v.empty()) return std::nullopt;
  return probe::Median(std::move(v));
}

bool AnyLoaded(const GpuSeries& g) { return std::any_of(g.windows.begin(), g.windows.end(), Loaded); }

// The SKIP of a check that judges the GPU under load, where no GEMM phase ran.
Verdict NoLoad(Verdict v, std::string_view consequence = "so it was never under full load") {
  return With(v, "burnin.no_load", fmt::format("no GEMM phase ran on this GPU, {}", consequence));
}

// One GPU's loaded figures, computed once for the peer comparisons.
struct Figures {
  std::optional<double> power, clock, tflops, temp;
};

Figures FiguresOf(const GpuSeries& g) {
  return {LoadedMedian(g, &GpuWindow::power_w), LoadedMedian(g, &GpuWindow::sm_clock_mhz), LoadedTflops(g),
          LoadedMedian(g, &GpuWindow::gpu_temp_c)};
}

// The loaded figures of every GPU of a model, on one node or across the run, sorted: a GPU's
// peers are the others of its pool, and the median without it is found in the sorted pool, so
// judging N GPUs costs N log N, not N^2 (a 1,000-node run has 8,000 GPUs).
struct PeerPools {
  std::map<std::string, std::vector<double>> node, run;  // "model\nnode", "model"
};

PeerPools PoolsOf(std::span<const GpuSeries> all, std::span<const Figures> f, std::optional<double> Figures::*field) {
  PeerPools p;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!(f[i].*field)) continue;
    p.node[all[i].model + "\n" + all[i].node].push_back(*(f[i].*field));
    p.run[all[i].model].push_back(*(f[i].*field));
  }
  for (auto* pools : {&p.node, &p.run}) {
    for (auto& [key, values] : *pools) std::sort(values.begin(), values.end());
  }
  return p;
}

struct PeerFigure {
  std::string_view scope;  // "on its node", "across the run"
  std::size_t count = 0;   // the peers with the figure
  std::optional<double> median;
};

// The median of a sorted pool with one copy of `self` (when it is there) left out.
PeerFigure Without(std::string_view scope, const std::vector<double>* pool, std::optional<double> self) {
  PeerFigure r{scope, 0, std::nullopt};
  if (pool == nullptr) return r;
  std::size_t skip = pool->size();  // the index left out; size(): none
  if (self) skip = static_cast<std::size_t>(std::lower_bound(pool->begin(), pool->end(), *self) - pool->begin());
  r.count = pool->size() - (skip < pool->size() ? 1 : 0);
  if (r.count == 0) return r;
  auto at = [&](std::size_t i) { return (*pool)[i < skip ? i : i + 1]; };
  r.median = r.count % 2 == 1 ? at(r.count / 2) : (at(r.count / 2 - 1) + at(r.count / 2)) / 2;
  return r;
}

std::array<PeerFigure, 2> PeersOf(const PeerPools& p, const GpuSeries& g, std::optional<double> self) {
  auto find = [](const std::map<std::string, std::vector<double>>& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  };
  return {Without("on its node", find(p.node, g.model + "\n" + g.node), self),
          Without("across the run", find(p.run, g.model), self)};
}

Verdict JudgePower(const Thresholds& t, const GpuSeries& g, const Figures& f) {
  Verdict v = Start(g, "burnin.power");
  if (!AnyLoaded(g)) return NoLoad(std::move(v));
  const std::optional<double> power = f.power;
  const std::optional<double> limit = LoadedMedian(g, &GpuWindow::power_limit_w);
  if (!power || !limit) {
    return With(v, "burnin.not_sampled",
                fmt::format("NVML gave no {} for this GPU", !power ? "power draw" : "enforced power limit"));
  }
  const double fraction = t.Get("burnin.power.min_limit_fraction");
  const double mark = fraction * *limit;
  v.measured = *power;
  v.unit = "W";
  v.threshold = fmt::format(">= {} x the enforced limit ({} of {} W; {})", internal::Fixed(fraction),
                            internal::Fixed(mark), internal::Fixed(*limit),
                            Cite(t, "burnin.power.min_limit_fraction"));
  if (*power >= mark) {
    v.detail = fmt::format("loaded median {} W, {} x its {} W limit", internal::Fixed(*power),
                           internal::Fixed(*power / *limit), internal::Fixed(*limit));
    return v;
  }
  std::string first;
  for (const GpuWindow& w : g.windows) {
    if (Loaded(w) && w.power_w && w.power_w->median < mark) {
      first = fmt::format("; first below it at {}", Clock(w.start_s));
      break;
    }
  }
  return With(v, "burnin.power_low",
              fmt::format("loaded median {} W, {} x its {} W limit{}", internal::Fixed(*power),
                          internal::Fixed(*power / *limit), internal::Fixed(*limit), first));
}

// burnin.clocks and burnin.tflops: the GPU's loaded figure against the median of the other GPUs
// of its model, on its node and across the run; behind in either scope fails.
Verdict JudgeAgainstPeers(const Thresholds& t, const GpuSeries& g, const Figures& f, const PeerPools& pools,
                          std::string_view check, std::optional<double> Figures::*field, std::string_view unit,
                          std::string_view what) {
  Verdict v = Start(g, check);
  if (!AnyLoaded(g)) return NoLoad(std::move(v));
  const std::optional<double> mine = f.*field;
  if (!mine) return With(v, "burnin.not_sampled", fmt::format("no {} was sampled for this GPU under load", what));
  const double deficit = t.Get("burnin.peers.max_deficit");
  v.measured = *mine;
  v.unit = std::string(unit);
  v.threshold = fmt::format(">= {} x the median of the other {} GPUs, on its node and across the run ({})",
                            internal::Fixed(1 - deficit), g.model, Cite(t, "burnin.peers.max_deficit"));
  std::vector<std::string> said;
  bool behind = false;
  bool any = false;
  for (const PeerFigure& p : PeersOf(pools, g, mine)) {
    if (!p.median || *p.median <= 0) continue;
    any = true;
    const double ratio = *mine / *p.median;
    behind = behind || ratio < 1 - deficit;
    said.push_back(fmt::format("{} x the median of {} peer(s) {} ({} {})", internal::Fixed(ratio), p.count, p.scope,
                               internal::Fixed(*p.median), unit));
  }
  if (!any) {
    return With(v, "burnin.no_peers",
                fmt::format("no other {} GPU in the run to compare with; its loaded median {} was {} {}", g.model,
                            what, internal::Fixed(*mine), unit));
  }
  std::string detail = fmt::format("loaded median {} {}: {}", internal::Fixed(*mine), unit, fmt::join(said, "; "));
  if (behind) return With(v, "burnin.behind_peers", std::move(detail));
  v.detail = std::move(detail);
  return v;
}

Verdict JudgeTemperature(const Thresholds& t, const GpuSeries& g, const Figures& f, const PeerPools& temps,
                         const PeerPools& powers) {
  Verdict v = Start(g, "burnin.temperature");
  if (!AnyLoaded(g)) return NoLoad(std::move(v));
  if (!f.temp || !f.power) {
    return With(v, "burnin.not_sampled",
                fmt::format("no {} was sampled for this GPU under load", !f.temp ? "temperature" : "power"));
  }
  const double excess = t.Get("burnin.temperature.max_above_peers_c");
  const double equal = t.Get("burnin.temperature.equal_power_fraction");
  v.measured = *f.temp;
  v.unit = "C";
  v.threshold = fmt::format("<= the other {} GPUs' median + {} C while drawing no more than {} x their power ({}; {})",
                            g.model, internal::Fixed(excess), internal::Fixed(1 + equal),
                            Cite(t, "burnin.temperature.max_above_peers_c"),
                            Cite(t, "burnin.temperature.equal_power_fraction"));
  std::vector<std::string> said;
  bool hot = false;
  bool judged = false;
  bool peers = false;
  const std::array<PeerFigure, 2> temp = PeersOf(temps, g, f.temp);
  const std::array<PeerFigure, 2> power = PeersOf(powers, g, f.power);
  for (std::size_t s = 0; s < temp.size(); ++s) {
    if (!temp[s].median || !power[s].median) continue;
    peers = true;
    const double above = *f.temp - *temp[s].median;
    // A GPU drawing more than its peers runs hotter for that alone; only at equal (or lower)
    // power does a higher temperature say the cooling is worse.
    if (*f.power > *power[s].median * (1 + equal)) {
      said.push_back(fmt::format("{:+.1f} C against peers {} but at {} W to their {} W: not compared", above,
                                 temp[s].scope, internal::Fixed(*f.power), internal::Fixed(*power[s].median)));
      continue;
    }
    judged = true;
    hot = hot || above > excess;
    said.push_back(fmt::format("{:+.1f} C against the median of {} peer(s) {} ({} C at {} W; this GPU {} W)", above,
                               temp[s].count, temp[s].scope, internal::Fixed(*temp[s].median),
                               internal::Fixed(*power[s].median), internal::Fixed(*f.power)));
  }
  if (!peers) {
    return With(v, "burnin.no_peers",
                fmt::format("no other {} GPU in the run to compare with; its loaded median was {} C", g.model,
                            internal::Fixed(*f.temp)));
  }
  std::string detail = fmt::format("loaded median {} C: {}", internal::Fixed(*f.temp), fmt::join(said, "; "));
  if (!judged) return With(v, "burnin.unequal_power", std::move(detail));
  if (hot) return With(v, "burnin.hotter_than_peers", std::move(detail));
  v.detail = std::move(detail);
  return v;
}

struct BitName {
  std::uint64_t bit;
  std::string_view name;
  std::string_view code = {};  // the FAIL code for a streak; empty for bits not failed on
};
constexpr std::array<BitName, 5> kBits = {{
    {.bit = probe::kClocksEventHwSlowdown, .name = "HW slowdown (0x8)", .code = "burnin.hw_slowdown"},
    {.bit = probe::kClocksEventHwThermal, .name = "HW thermal (0x40)", .code = "burnin.hw_thermal"},
    {.bit = probe::kClocksEventHwPowerBrake, .name = "power brake (0x80)", .code = "burnin.power_brake"},
    {.bit = probe::kClocksEventSwThermal, .name = "SW thermal (0x20)"},
    {.bit = probe::kClocksEventSwPowerCap, .name = "SW power cap (0x4, normal under GEMM)"},
}};

const probe::BitStreaks* StreaksOf(const GpuWindow& w, std::uint64_t bit) {
  for (const auto& [b, s] : w.reasons) {
    if (b == bit) return &s;
  }
  return nullptr;
}

Verdict JudgeThrottle(const Thresholds& t, const GpuSeries& g) {
  Verdict v = Start(g, "burnin.throttle");
  int samples = 0;
  for (const GpuWindow& w : g.windows) samples += std::max(0, w.samples);
  if (samples == 0) return With(v, "burnin.no_samples", "no sample of this GPU arrived");
  const double need = t.Get("burnin.throttle.hw_consecutive_samples");
  const double sw_max = t.Get("burnin.throttle.sw_thermal_max_fraction");
  v.unit = "samples";
  v.threshold = fmt::format("HW slowdown, HW thermal and power brake each set for fewer than {} samples in a row ({}); "
                            "SW thermal at most {}% of the samples, more warns ({})",
                            internal::Fixed(need), Cite(t, "burnin.throttle.hw_consecutive_samples"),
                            internal::Fixed(100 * sw_max), Cite(t, "burnin.throttle.sw_thermal_max_fraction"));
  std::vector<std::string> said;
  std::string_view fail_code;
  std::string fail_detail;
  int worst = 0;
  double sw_thermal = 0;
  for (const BitName& b : kBits) {
    int set = 0;
    for (const GpuWindow& w : g.windows) {
      if (const probe::BitStreaks* s = StreaksOf(w, b.bit)) set += s->set;
    }
    const double share = static_cast<double>(set) / samples;
    if (b.bit == probe::kClocksEventSwThermal) sw_thermal = share;
    if (set == 0) continue;
    std::string text = fmt::format("{} {:.1f}% of the time", b.name, 100 * share);
    if (!b.code.empty()) {
      const Streak s = LongestStreak(g.windows, b.bit);
      worst = std::max(worst, s.samples);
      text += fmt::format(", longest {} samples in a row from about {}", s.samples, Clock(s.start_s));
      if (fail_code.empty() && s.samples >= need) {
        fail_code = b.code;
        fail_detail = fmt::format("{} set for {} samples in a row from about {}", b.name, s.samples, Clock(s.start_s));
      }
    }
    said.push_back(std::move(text));
  }
  v.measured = worst;
  const std::string all = said.empty() ? std::string("no clock-event reason that matters was set")
                                       : fmt::format("{}", fmt::join(said, "; "));
  if (!fail_code.empty()) return With(v, fail_code, fmt::format("{} ({})", fail_detail, all));
  if (sw_thermal > sw_max) return With(v, "burnin.sw_thermal", all);
  v.detail = all;
  return v;
}

Verdict JudgeGemm(const GpuSeries& g) {
  Verdict v = Start(g, "burnin.gemm");
  if (!AnyLoaded(g)) return NoLoad(std::move(v), "so no result was compared");
  double wrong = 0;
  std::optional<double> first;
  bool counted = false;
  for (const GpuWindow& w : g.windows) {
    if (!w.wrong_elements) continue;
    counted = true;
    if (*w.wrong_elements > 0 && !first) first = w.start_s;
    wrong += *w.wrong_elements;
  }
  if (!counted) return With(v, "burnin.not_sampled", "the GEMM phase counted no result against the first");
  v.measured = wrong;
  v.unit = "count";
  v.threshold = "0 elements differing from the first result (gpu-burn's check, anchors.md)";
  if (!first) {
    v.detail = "every GEMM result matched the first";
    return v;
  }
  return With(v, "burnin.gemm_mismatch",
              fmt::format("{:.0f} GEMM result element(s) differed from the first, the first at {}", wrong,
                          Clock(*first)));
}

// The first window whose counter stands above where it started; the rise and when.
struct Rise {
  double by = 0;
  double at_s = 0;
  bool sampled = false;
};
Rise RiseOf(const GpuSeries& g, std::optional<double> GpuCounters::*counter) {
  Rise r;
  std::optional<double> base = g.start_counters.*counter;
  std::optional<double> last;
  bool risen = false;
  for (const GpuWindow& w : g.windows) {
    const std::optional<double> now = w.counters.*counter;
    if (!now) continue;
    r.sampled = true;
    if (!base) base = *now;  // no reading before the load: count from the first window's
    if (*now > *base && !risen) {
      r.at_s = w.start_s;
      risen = true;
    }
    last = now;
  }
  if (last && base) r.by = std::max(0.0, *last - *base);
  return r;
}

Verdict JudgeEcc(const GpuSeries& g) {
  Verdict v = Start(g, "burnin.ecc");
  const Rise ue = RiseOf(g, &GpuCounters::ecc_uncorrectable);
  const Rise failed = RiseOf(g, &GpuCounters::remap_failed);
  const Rise ce = RiseOf(g, &GpuCounters::ecc_correctable);
  const Rise pending = RiseOf(g, &GpuCounters::remap_pending);
  if (!ue.sampled && !failed.sampled) {
    return With(v, "burnin.not_sampled",
                "NVML gave neither the uncorrectable ECC count nor the row-remap state (ECC off, or not supported)");
  }
  v.measured = ue.by + failed.by;
  v.unit = "count";
  v.threshold = "no new uncorrectable ECC error and no failed row remap (anchors.md: Azure HPC health checks)";
  auto count = [](const Rise& r) { return r.sampled ? fmt::format("+{:.0f}", r.by) : std::string("n/a"); };
  const std::string counts =
      fmt::format("uncorrectable {}, failed remaps {}, correctable {}, pending remaps {}{}", count(ue), count(failed),
                  count(ce), count(pending),
                  ue.sampled && failed.sampled && ce.sampled && pending.sampled ? ""
                                                                                 : " (n/a: NVML does not give it here)");
  if (ue.by > 0) {
    return With(v, "burnin.ecc_uncorrectable", fmt::format("new uncorrectable ECC error(s), the first by {}: {}",
                                                            Clock(ue.at_s + probe::kGpuWindowSeconds), counts));
  }
  if (failed.by > 0) {
    return With(v, "burnin.remap_failed",
                fmt::format("row remap failed, the first by {}: {}", Clock(failed.at_s + probe::kGpuWindowSeconds),
                            counts));
  }
  v.detail = counts;
  return v;
}

Verdict JudgeXid(const GpuSeries& g) {
  Verdict v = Start(g, "burnin.xid");
  // No sample arrived: nothing says the Xids were watched.
  if (g.windows.empty()) return With(v, "burnin.no_samples", "no sample of this GPU arrived");
  if (!g.xid_unread.empty() && g.events.empty()) {
    return With(v, "burnin.not_sampled", "the kernel log's Xids were not watched: " + g.xid_unread);
  }
  int hardware = 0;
  const probe::GpuEvent* first = nullptr;
  std::vector<std::string> others;
  for (const probe::GpuEvent& e : g.events) {
    if (model::IsHardwareXid(e.xid)) {
      ++hardware;
      if (first == nullptr) first = &e;
    } else {
      others.push_back(fmt::format("Xid {} at {}", e.xid, Clock(e.at_s)));
    }
  }
  v.measured = hardware;
  v.unit = "count";
  v.threshold = "no hardware Xid (NVIDIA's Xid catalog: the codes whose action is a reset, a reboot or a support case)";
  const std::string rest = others.empty() ? std::string() : fmt::format(" (not hardware, not judged: {})", fmt::join(others, ", "));
  if (first != nullptr) {
    return With(v, "burnin.xid",
                fmt::format("Xid {} at {}{}{}; {} hardware Xid(s) in all{}", first->xid, Clock(first->at_s),
                            first->detail.empty() ? "" : ": ", first->detail, hardware, rest));
  }
  v.detail = "no hardware Xid" + rest;
  return v;
}

Verdict JudgePcie(const GpuSeries& g) {
  Verdict v = Start(g, "burnin.pcie");
  if (!AnyLoaded(g)) return NoLoad(std::move(v), "so its link was never judged under load");
  if (!g.pcie_gen_max || !g.pcie_width_max) {
    return With(v, "burnin.not_sampled", "NVML gave no maximum PCIe link generation or width for this GPU");
  }
  v.unit = "windows";
  v.threshold = fmt::format("Gen{} x{} (what the link trains to) in every loaded window; at idle the driver may lower "
                            "the generation to save power, so idle windows are not judged",
                            *g.pcie_gen_max, *g.pcie_width_max);
  int down = 0;
  const GpuWindow* first = nullptr;
  bool sampled = false;
  for (const GpuWindow& w : g.windows) {
    if (!Loaded(w) || !w.pcie_gen || !w.pcie_width) continue;
    sampled = true;
    if (*w.pcie_gen < *g.pcie_gen_max || *w.pcie_width < *g.pcie_width_max) {
      ++down;
      if (first == nullptr) first = &w;
    }
  }
  if (!sampled) return With(v, "burnin.not_sampled", "no PCIe link state was sampled under load");
  v.measured = down;
  const Rise replay = RiseOf(g, &GpuCounters::pcie_replay);
  const std::string replays = replay.sampled ? fmt::format("; replay counter +{:.0f}", replay.by) : std::string();
  if (first != nullptr) {
    return With(v, "burnin.pcie_downtrain",
                fmt::format("the link ran at Gen{} x{} under load from {} ({} loaded window(s) below Gen{} x{}){}",
                            *first->pcie_gen, *first->pcie_width, Clock(first->start_s), down, *g.pcie_gen_max,
                            *g.pcie_width_max, replays));
  }
  v.detail = fmt::format("Gen{} x{} in every loaded window{}", *g.pcie_gen_max, *g.pcie_width_max, replays);
  return v;
}

Verdict JudgeSamples(const GpuSeries& g) {
  Verdict v = Start(g, "burnin.samples");
  double end = 0;
  int taken = 0;
  for (const GpuWindow& w : g.windows) {
    end = std::max(end, w.start_s + probe::kGpuWindowSeconds);
    taken += std::max(0, w.samples);
  }
  v.measured = end;
  v.unit = "s";
  v.threshold = fmt::format("samples to the planned end, {} (within one {} s window)", Clock(g.planned_s),
                            internal::Fixed(probe::kGpuWindowSeconds));
  const std::string count = fmt::format("{} sample(s) in {} window(s)", taken, g.windows.size());
  if (end + probe::kGpuWindowSeconds < g.planned_s) {
    const std::string why = !g.ended_reason.empty()
                                ? fmt::format("the agent said: {}{}{}", g.ended_code, g.ended_code.empty() ? "" : ": ",
                                              g.ended_reason)
                                : "the node went silent (a reboot, a hang, a lost session)";
    return With(v, "burnin.stopped_early", fmt::format("samples stop at {} of {}: {}; {}; the data up to then is judged",
                                                       Clock(end), Clock(g.planned_s), why, count));
  }
  v.detail = count;
  return v;
}

}  // namespace

std::span<const std::string_view> BurninChecks() { return kChecks; }

Streak LongestStreak(std::span<const GpuWindow> windows, std::uint64_t bit) {
  Streak best;
  int run = 0;             // the run still open at the previous window's end
  double run_start = 0;
  std::optional<double> prev_start;
  for (const GpuWindow& w : windows) {
    // A gap in time (samples lost, the agent restarted) breaks the run: nothing says the bit
    // stayed set through it.
    if (prev_start && w.start_s - *prev_start > probe::kGpuWindowSeconds + 0.5) run = 0;
    prev_start = w.start_s;
    const probe::BitStreaks* s = StreaksOf(w, bit);
    const int n = std::max(0, w.samples);
    const int head = s ? std::clamp(s->head, 0, n) : 0;
    const int tail = s ? std::clamp(s->tail, 0, n) : 0;
    const int longest = s ? std::clamp(s->longest, 0, n) : 0;
    if (n > 0 && head == n) {  // set in every sample: the open run goes on through it
      if (run == 0) run_start = w.start_s;
      run += n;
      if (run > best.samples) best = {run, run_start};
      continue;
    }
    if (run + head > best.samples) best = {run + head, run > 0 ? run_start : w.start_s};
    if (longest > best.samples) best = {longest, w.start_s};
    run = tail;
    run_start = w.start_s;
  }
  return best;
}

std::vector<Verdict> JudgeBurnin(const Thresholds& t, std::span<const GpuSeries> series) {
  std::vector<Figures> f;
  f.reserve(series.size());
  for (const GpuSeries& g : series) f.push_back(FiguresOf(g));
  const PeerPools clocks = PoolsOf(series, f, &Figures::clock);
  const PeerPools tflops = PoolsOf(series, f, &Figures::tflops);
  const PeerPools temps = PoolsOf(series, f, &Figures::temp);
  const PeerPools powers = PoolsOf(series, f, &Figures::power);
  std::vector<Verdict> out;
  out.reserve(series.size() * kChecks.size());
  for (std::size_t i = 0; i < series.size(); ++i) {
    const GpuSeries& g = series[i];
    out.push_back(JudgePower(t, g, f[i]));
    out.push_back(JudgeAgainstPeers(t, g, f[i], clocks, "burnin.clocks", &Figures::clock, "MHz", "SM clock"));
    out.push_back(JudgeAgainstPeers(t, g, f[i], tflops, "burnin.tflops", &Figures::tflops, "TFLOPS", "GEMM TFLOPS"));
    out.push_back(JudgeTemperature(t, g, f[i], temps, powers));
    out.push_back(JudgeThrottle(t, g));
    out.push_back(JudgeGemm(g));
    out.push_back(JudgeEcc(g));
    out.push_back(JudgeXid(g));
    out.push_back(JudgePcie(g));
    out.push_back(JudgeSamples(g));
  }
  return out;
}

}  // namespace gpuforge::validate
