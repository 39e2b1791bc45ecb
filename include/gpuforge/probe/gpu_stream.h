#pragma once

// Burn-in's stream (#30 part 3): how a GpuSeries travels from the agent to the controller while
// the load runs, one JSON line at a time, so that a node that dies mid-run has already sent what
// it saw up to its last window. Four kinds of line, each naming its GPU:
//
//   start   the series' fixed part: model, PCIe maximum, planned duration, counters before load
//   window  one closed 10 s window (GpuWindow)
//   event   one Xid, with its time
//   ended   why the GPU's samples stopped before the planned end (NVML lost, agent stopped)
//
// The controller parses every line strictly (ParseStreamLine: a node's output is hostile until
// checked) and folds them per GPU (StreamFold), which refuses a stream out of order: a window
// before its start line, windows going back in time, anything after "ended", more GPUs or
// windows than a burn-in can have. docs/burnin.md, "The stream", lists every field.

#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpuforge/base/result.h"
#include "gpuforge/base/schemas.h"
#include "gpuforge/probe/gpu_series.h"

namespace gpuforge::probe {

inline constexpr std::string_view kGpuStreamSchema = schemas::kGpuStream;

// The longest burn-in gpuforge runs (#30: "over 30 days" is refused), in seconds.
inline constexpr double kBurninMaxSeconds = 30.0 * 24 * 3600;
// The most GPUs one node's stream may name; more is a broken or hostile agent.
inline constexpr std::size_t kStreamMaxGpus = 64;

// Every line's `gpu` is "gpu" and the GPU's index, 0 to 999 ("gpu0"): the entity burn-in's
// verdicts name. The index, or nothing for any other text.
std::optional<int> StreamGpuIndex(std::string_view gpu);

struct StreamStart {
  std::string gpu;
  std::string model;
  std::optional<int> pcie_gen_max;
  std::optional<int> pcie_width_max;
  double planned_s = 0;
  GpuCounters start_counters;
  std::string xid_unread;  // GpuSeries::xid_unread
  bool operator==(const StreamStart&) const = default;
};
struct StreamWindow {
  std::string gpu;
  GpuWindow window;
  bool operator==(const StreamWindow&) const = default;
};
struct StreamEvent {
  std::string gpu;
  GpuEvent event;
  bool operator==(const StreamEvent&) const = default;
};
struct StreamEnded {
  std::string gpu;
  std::string code;    // "burnin.nvml_lost", "burnin.stopped"
  std::string reason;  // for people: the NVML call and its error, the signal
  bool operator==(const StreamEnded&) const = default;
};
using StreamLine = std::variant<StreamStart, StreamWindow, StreamEvent, StreamEnded>;

// One line, no newline in it.
std::string ToStreamLine(const StreamLine& line);

// A line as the controller got it from `source` ("node gpu-07, burn-in stream line 42"); an
// error names the source, what is wrong and the start of the line. A field this version does
// not know is ignored (within a major version fields are only added: docs/cli.md).
gpuforge::Result<StreamLine> ParseStreamLine(std::string_view source, std::string_view line);

// What the agent reads may lie outside what the parser accepts (NVML answering PCIe generation
// 0, a counter past 2^53, a gauge of 1e9): such a field is left out of the line, as a field
// NVML did not give is, so that one odd reading never costs the controller the GPU's whole
// line. The agent applies this to every line before ToStreamLine.
void FitForStream(StreamLine& line);

// Folds one node's parsed lines into its GPUs' series, in the order they came. `planned_s` is
// the burn-in the controller planned: a start line claiming another duration is refused, so an
// agent cannot make the controller keep more windows than the run has.
class StreamFold {
 public:
  StreamFold(std::string node, double planned_s) : node_(std::move(node)), planned_s_(planned_s) {}

  // Takes the next line; an error (naming the node and GPU) leaves the fold as it was, so
  // the series gathered so far still stand.
  gpuforge::Status Take(StreamLine line);

  // Every GPU's series, in GPU index order (gpu2 before gpu10), with the node set.
  std::vector<GpuSeries> Series() const;

 private:
  struct Gpu {
    GpuSeries series;
    bool ended = false;
  };
  std::string node_;
  double planned_s_;
  std::map<int, Gpu> gpus_;  // by the index in "gpuN"
};

// The agent's side (`gpuforge agent sample`): every GPU of this node through the driver's NVML,
// sampled at 1 Hz for `seconds` or until `cancel`, each line handed to `send` as it happens;
// the kernel log (/dev/kmsg) from now on gives the Xids, and where it cannot be read every start
// line says why. No load runs: every window's phase is "idle" (the load phases are not built).
// An error, before any line, naming the code (gpu.no_nvml, gpu.nvml_error, gpu.none) and why.
gpuforge::Status StreamGpuSamples(double seconds, const std::atomic<bool>* cancel,
                                  const std::function<void(const std::string&)>& send);

}  // namespace gpuforge::probe
