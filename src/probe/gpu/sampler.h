#pragma once

// Burn-in's 1 Hz read of one GPU through NVML (#30 part 3): what one sample holds
// (probe/gpu_series.h GpuSample). A call NVML does not support on this GPU, or that an old
// driver lacks, leaves its field absent (the judge then says "not sampled", never passes). A call
// that says the GPU is lost or the driver is gone ends the read with an error naming the call:
// the GPU's series ends there, with that reason.

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "gpuforge/base/result.h"
#include "gpuforge/probe/gpu_series.h"
#include "probe/gpu/nvml_api.h"

namespace gpuforge::probe::internal {

gpuforge::Result<GpuSample> ReadGpuSample(const NvmlApi& api, nvml::Device d);

// What the GPU's PCIe link trains to, read once per run.
struct PcieMax {
  std::optional<int> gen;
  std::optional<int> width;
};
PcieMax ReadPcieMax(const NvmlApi& api, nvml::Device d);

// What the series of one GPU starts with, read before the load: its model, what its link trains
// to, and its counters (what "new" errors count from). `entity` is "gpuN".
GpuSeries StartSeries(const NvmlApi& api, nvml::Device d, std::string entity, double planned_s);

// The sampler's clock: seconds since the run began, and a wait until such a time (returning at
// once when it has passed). Tests drive a fake one that never sleeps.
struct SamplerClock {
  std::function<double()> now;
  std::function<void(double)> wait_until;
};
SamplerClock SteadyClock();

struct SamplerSink {
  std::function<void(std::size_t gpu, GpuWindow window)> window;  // a window as it closes
  std::function<void(std::size_t gpu, std::string reason)> ended;  // a GPU lost: no more windows
};

// Samples every GPU once a second, sample k at second k, for `seconds` (or until `cancel`),
// folds each GPU's samples into 10 s windows (FoldWindow) with the phase `phase_at` gives for the
// window's start, and hands each window over as it closes (the last one, short, at the end). A
// sample whose second has already passed when its turn comes (the reads fell behind) is not
// taken, so a window's `samples` says how many seconds were really seen. A GPU whose read says it
// is lost is dropped: its open window goes out with what it had, then `ended` with the reason.
void RunSampler(const NvmlApi& api, std::span<const nvml::Device> gpus, double seconds,
                const std::function<std::string(double start_s)>& phase_at, const std::atomic<bool>* cancel,
                const SamplerClock& clock, const SamplerSink& sink);

// Where a streamed run reads from: NVML, the clock, and the kernel log's new text (each call the
// records since the last), or why the log cannot be read.
struct StreamSources {
  NvmlLoader nvml;
  std::function<SamplerClock()> make_clock;  // called once the start lines are sent: time 0
  std::function<std::string()> kernel_log;  // empty when it cannot be read
  std::string kernel_log_unread;            // why not; sent in every start line
};

// The agent's side of a burn-in's sampling: every GPU NVML sees, sampled for `seconds` (or until
// `cancel`), sent as gpu-stream lines (probe/gpu_stream.h) as they happen: each GPU's start line,
// then its windows as they close, each Xid the kernel logs for its bus id (read as each window
// closes, so timed to within one window), and an "ended" line for a GPU lost (burnin.nvml_lost)
// or for every GPU still sampled when `cancel` stopped the run (burnin.stopped). Every window's
// phase is `phase`; every line is fitted (FitForStream). An error, before any line, when NVML
// does not load or start, sees no GPU or more than kStreamMaxGpus.
gpuforge::Status StreamGpus(const StreamSources& from, double seconds, const std::string& phase,
                            const std::atomic<bool>* cancel, const std::function<void(const std::string&)>& send);

}  // namespace gpuforge::probe::internal
