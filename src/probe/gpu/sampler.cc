#include "probe/gpu/sampler.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpuforge/base/text.h"
#include "gpuforge/probe/gpu_stream.h"
#include "probe/gpu/bus_id.h"
#include "probe/gpu/xid.h"

namespace gpuforge::probe::internal {
namespace {

// The answers that mean no later call will work either.
bool Gone(nvml::Return rc) { return rc == nvml::kGpuIsLost || rc == nvml::kDriverNotLoaded; }

// Collects the first "gone" answer; every other failure leaves its field absent.
struct Reader {
  const NvmlApi& api;
  std::string lost;

  // Runs a call when it exists; true on success.
  template <class F, class... A>
  bool Call(F* fn, const char* name, A... args) {
    if (fn == nullptr || !lost.empty()) return false;
    const nvml::Return rc = fn(args...);
    if (Gone(rc)) lost = NvmlCallError(api, name, rc);
    return rc == nvml::kSuccess;
  }
};

}  // namespace

gpuforge::Result<GpuSample> ReadGpuSample(const NvmlApi& api, nvml::Device d) {
  Reader r{api, ""};
  GpuSample s;
  unsigned u = 0;
  unsigned long long ull = 0;
  if (r.Call(api.nvmlDeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", d, &u)) s.power_w = u / 1000.0;
  if (r.Call(api.nvmlDeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", d, &u)) {
    s.power_limit_w = u / 1000.0;
  }
  if (r.Call(api.nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo", d, nvml::kClockSm, &u)) s.sm_clock_mhz = u;
  if (r.Call(api.nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo", d, nvml::kClockMem, &u)) s.mem_clock_mhz = u;
  if (r.Call(api.nvmlDeviceGetTemperature, "nvmlDeviceGetTemperature", d, nvml::kTemperatureGpu, &u)) {
    s.gpu_temp_c = u;
  }
  // HBM temperature: the field NVML_FI_DEV_MEMORY_TEMP. The call can succeed while the field
  // fails (a GDDR board answers NOT_SUPPORTED in the field), so the field's own return decides;
  // a lost GPU can answer in either place.
  nvml::FieldValue field{};
  field.fieldId = nvml::kFieldMemoryTemp;
  if (r.Call(api.nvmlDeviceGetFieldValues, "nvmlDeviceGetFieldValues", d, 1, &field)) {
    if (Gone(field.nvmlReturn)) {
      r.lost = NvmlCallError(api, "nvmlDeviceGetFieldValues (NVML_FI_DEV_MEMORY_TEMP)", field.nvmlReturn);
    } else if (field.nvmlReturn == nvml::kSuccess) {
      if (std::optional<double> c = FieldAsDouble(field); c && std::isfinite(*c)) s.hbm_temp_c = *c;
    }
  }
  if (r.Call(api.nvmlDeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration", d, &u)) {
    s.pcie_gen = static_cast<int>(u);
  }
  if (r.Call(api.nvmlDeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth", d, &u)) {
    s.pcie_width = static_cast<int>(u);
  }
  if (r.Call(api.nvmlDeviceGetCurrentClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons", d, &ull)) {
    s.reasons = ull;
  }
  if (r.Call(api.nvmlDeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors", d, nvml::kUncorrected, nvml::kVolatile,
             &ull)) {
    s.counters.ecc_uncorrectable = static_cast<double>(ull);
  }
  if (r.Call(api.nvmlDeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors", d, nvml::kCorrected, nvml::kVolatile,
             &ull)) {
    s.counters.ecc_correctable = static_cast<double>(ull);
  }
  unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
  if (r.Call(api.nvmlDeviceGetRemappedRows, "nvmlDeviceGetRemappedRows", d, &corrected, &uncorrected, &pending,
             &failure)) {
    s.counters.remap_pending = pending;
    s.counters.remap_failed = failure;  // NVML's "a remap failed" flag: 0 or 1
  }
  if (r.Call(api.nvmlDeviceGetPcieReplayCounter, "nvmlDeviceGetPcieReplayCounter", d, &u)) {
    s.counters.pcie_replay = u;
  }
  // Every link's replay, recovery and CRC counts, summed; links that do not exist answer
  // NOT_SUPPORTED (or INVALID_ARGUMENT) and add nothing.
  double nvlink = 0;
  bool any = false;
  for (unsigned link = 0; link < nvml::kNvLinkMaxLinks && r.lost.empty(); ++link) {
    for (int counter = nvml::kNvLinkErrorDlReplay; counter <= nvml::kNvLinkErrorDlCrcData; ++counter) {
      if (r.Call(api.nvmlDeviceGetNvLinkErrorCounter, "nvmlDeviceGetNvLinkErrorCounter", d, link, counter, &ull)) {
        nvlink += static_cast<double>(ull);
        any = true;
      }
    }
  }
  if (any) s.counters.nvlink_errors = nvlink;
  if (!r.lost.empty()) return Error{r.lost};
  return s;
}

PcieMax ReadPcieMax(const NvmlApi& api, nvml::Device d) {
  Reader r{api, ""};
  PcieMax m;
  unsigned u = 0;
  if (r.Call(api.nvmlDeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration", d, &u)) {
    m.gen = static_cast<int>(u);
  }
  if (r.Call(api.nvmlDeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth", d, &u)) m.width = static_cast<int>(u);
  return m;
}

GpuSeries StartSeries(const NvmlApi& api, nvml::Device d, std::string entity, double planned_s) {
  GpuSeries g;
  g.gpu = std::move(entity);
  g.planned_s = planned_s;
  char name[nvml::kNameBuffer] = {};
  if (api.nvmlDeviceGetName != nullptr && api.nvmlDeviceGetName(d, name, sizeof name) == nvml::kSuccess) {
    name[sizeof name - 1] = '\0';
    g.model = name;
  }
  const PcieMax max = ReadPcieMax(api, d);
  g.pcie_gen_max = max.gen;
  g.pcie_width_max = max.width;
  if (gpuforge::Result<GpuSample> s = ReadGpuSample(api, d); s.ok()) g.start_counters = s->counters;
  return g;
}

SamplerClock SteadyClock() {
  const auto start = std::chrono::steady_clock::now();
  return SamplerClock{
      [start] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); },
      [start](double t) {
        std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(t)));
      }};
}

void RunSampler(const NvmlApi& api, std::span<const nvml::Device> gpus, double seconds,
                const std::function<std::string(double start_s)>& phase_at, const std::atomic<bool>* cancel,
                const SamplerClock& clock, const SamplerSink& sink) {
  const long long total = static_cast<long long>(std::floor(std::max(0.0, seconds)));
  const long long per_window = static_cast<long long>(kGpuWindowSeconds);
  struct Open {
    std::vector<GpuSample> samples;
    bool lost = false;
  };
  std::vector<Open> open(gpus.size());
  long long window = 0;  // the index of the window the open samples belong to
  auto close = [&](std::size_t i) {
    const double start = static_cast<double>(window * per_window);
    sink.window(i, FoldWindow(start, phase_at(start), open[i].samples));
    open[i].samples.clear();
  };
  auto cancelled = [&] { return cancel != nullptr && cancel->load(); };
  long long k = 0;
  for (; k < total && !cancelled(); ++k) {
    if (k / per_window != window) {
      for (std::size_t i = 0; i < gpus.size(); ++i) {
        if (!open[i].lost) close(i);
      }
      window = k / per_window;
    }
    clock.wait_until(static_cast<double>(k));
    if (cancelled()) break;
    // Fallen a whole second behind: this second was not seen.
    if (clock.now() >= static_cast<double>(k + 1)) continue;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (open[i].lost) continue;
      gpuforge::Result<GpuSample> s = ReadGpuSample(api, gpus[i]);
      if (!s.ok()) {
        open[i].lost = true;
        close(i);
        sink.ended(i, s.error().message);
        continue;
      }
      open[i].samples.push_back(std::move(*s));
    }
  }
  // The last window, short where the run was cut or its length is not a multiple of 10 s; none
  // when the run ended exactly on a window's edge before a sample of the next.
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (open[i].lost) continue;
    if (k > window * per_window || !open[i].samples.empty()) close(i);
  }
}

}  // namespace gpuforge::probe::internal

namespace gpuforge::probe::internal {

gpuforge::Status StreamGpus(const StreamSources& from, double seconds, const std::string& phase,
                            const std::atomic<bool>* cancel, const std::function<void(const std::string&)>& send) {
  const NvmlLoad load = from.nvml();
  if (!load.api) return Error{fmt::format("{}: {}", load.code, load.reason)};
  const NvmlApi& api = *load.api;
  if (nvml::Return rc = api.nvmlInit_v2(); rc != nvml::kSuccess) {
    return Error{"gpu.nvml_error: " + NvmlCallError(api, "nvmlInit_v2", rc)};
  }
  const NvmlSession session(api);
  unsigned count = 0;
  if (nvml::Return rc = api.nvmlDeviceGetCount_v2(&count); rc != nvml::kSuccess) {
    return Error{"gpu.nvml_error: " + NvmlCallError(api, "nvmlDeviceGetCount_v2", rc)};
  }
  if (count == 0) return Error{"gpu.none: NVML sees no GPU"};
  // A stream names at most kStreamMaxGpus GPUs; a node with more is not one gpuforge knows.
  if (count > kStreamMaxGpus) {
    return Error{fmt::format("gpu.too_many: NVML counts {} GPUs, more than the {} a burn-in samples on one node",
                             count, kStreamMaxGpus)};
  }
  std::vector<nvml::Device> devices(count);
  std::vector<std::string> names(count), buses(count);
  for (unsigned i = 0; i < count; ++i) {
    if (nvml::Return rc = api.nvmlDeviceGetHandleByIndex_v2(i, &devices[i]); rc != nvml::kSuccess) {
      return Error{fmt::format("gpu.nvml_error: GPU {}: {}", i, NvmlCallError(api, "nvmlDeviceGetHandleByIndex_v2", rc))};
    }
    names[i] = fmt::format("gpu{}", i);
    nvml::PciInfo pci{};
    if (api.nvmlDeviceGetPciInfo_v3(devices[i], &pci) == nvml::kSuccess) {
      pci.busId[sizeof pci.busId - 1] = '\0';
      buses[i] = CanonicalBusId(pci.busId);
    }
  }
  std::vector<bool> ended(count, false);
  // Every line fitted to what the controller's parser takes (an odd reading left out, not the line).
  auto emit = [&send](StreamLine l) {
    FitForStream(l);
    send(ToStreamLine(l));
  };
  for (unsigned i = 0; i < count; ++i) {
    const GpuSeries g = StartSeries(api, devices[i], names[i], seconds);
    StreamStart s;
    s.gpu = names[i];
    s.model = text::Printable(g.model, 96);
    s.pcie_gen_max = g.pcie_gen_max;
    s.pcie_width_max = g.pcie_width_max;
    s.planned_s = seconds;
    s.start_counters = g.start_counters;
    s.xid_unread = from.kernel_log ? std::string() : from.kernel_log_unread;
    emit(std::move(s));
  }
  // The kernel log's Xids, each to the GPU on its bus; one on a bus NVML does not list (a GPU
  // NVML no longer sees) is no GPU's to report here.
  // The clock starts once the GPUs are open and their start lines sent: NVML's init can take
  // seconds without persistence mode, and those are not the run's.
  const SamplerClock clock = from.make_clock();
  double polled = -1;
  // Once per window (`force`: now, for a GPU just lost, whose Xid says why).
  auto poll_xids = [&](double window_start, bool force) {
    if (!from.kernel_log || (!force && window_start == polled)) return;
    polled = window_start;
    const double at = std::min(clock.now(), seconds);
    for (const XidEvent& e : ParseXid(from.kernel_log()).events) {
      for (unsigned i = 0; i < count; ++i) {
        if (ended[i] || buses[i].empty() || buses[i] != e.bus_id) continue;
        emit(StreamEvent{names[i], GpuEvent{at, e.code, e.detail}});
      }
    }
  };
  RunSampler(api, devices, seconds, [&phase](double) { return phase; }, cancel, clock,
             SamplerSink{[&](std::size_t i, GpuWindow w) {
                           const double start = w.start_s;
                           emit(StreamWindow{names[i], std::move(w)});
                           poll_xids(start, false);
                         },
                         [&](std::size_t i, std::string why) {
                           poll_xids(clock.now(), true);
                           ended[i] = true;
                           emit(StreamEnded{names[i], "burnin.nvml_lost", std::move(why)});
                         }});
  poll_xids(seconds, true);
  if (cancel != nullptr && cancel->load()) {
    const std::string why = fmt::format("the agent was stopped {:.0f} s into the planned {:.0f} s", clock.now(), seconds);
    for (unsigned i = 0; i < count; ++i) {
      if (!ended[i]) emit(StreamEnded{names[i], "burnin.stopped", why});
    }
  }
  return {};
}

}  // namespace gpuforge::probe::internal

namespace gpuforge::probe {

gpuforge::Status StreamGpuSamples(double seconds, const std::atomic<bool>* cancel,
                                  const std::function<void(const std::string&)>& send) {
  internal::StreamSources from{internal::LoadNvml, internal::SteadyClock, {}, {}};
  gpuforge::Result<internal::KernelLogTail> tail = internal::KernelLogTail::Open();
  if (tail.ok()) {
    auto shared = std::make_shared<internal::KernelLogTail>(std::move(*tail));
    from.kernel_log = [shared] { return shared->Read(); };
  } else {
    from.kernel_log_unread = tail.error().message;
  }
  return internal::StreamGpus(from, seconds, "idle", cancel, send);
}

}  // namespace gpuforge::probe
