// What the controller reads from an agent during a burn-in: the stream's lines
// (probe::ParseStreamLine), folded per GPU (probe::StreamFold). Whatever parses must serialise
// back to a line that parses to the same value; the fold, fed every line of the input in turn,
// must keep its GPUs' windows and events in time order and within the planned run, whatever it
// refuses.

#include <cmath>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "gpuforge/probe/gpu_stream.h"

namespace probe = gpuforge::probe;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuforge::fuzz::AsText(data, size);
  probe::StreamFold fold("n", 600);  // the seeds' planned run
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    auto r = probe::ParseStreamLine("node n, line", line);
    if (!r.ok()) {
      FUZZ_CHECK(r.error().message.starts_with("node n, line: "), "an error without its source: %s",
                 r.error().message.c_str());
      continue;
    }
    const std::string again = probe::ToStreamLine(*r);
    FUZZ_CHECK(again.find('\n') == std::string::npos, "ToStreamLine wrote a newline");
    auto r2 = probe::ParseStreamLine("again", again);
    FUZZ_CHECK(r2.ok(), "ToStreamLine's own line does not parse: %s", r2.ok() ? "" : r2.error().message.c_str());
    FUZZ_CHECK(*r2 == *r, "the line changed through ToStreamLine: %s", again.c_str());
    if (gpuforge::Status st = fold.Take(std::move(*r)); !st.ok()) {
      FUZZ_CHECK(st.error().message.starts_with("node n"), "a fold error without its node: %s",
                 st.error().message.c_str());
    }
  }
  const std::vector<probe::GpuSeries> series = fold.Series();
  FUZZ_CHECK(series.size() <= probe::kStreamMaxGpus, "more GPUs than a stream may name");
  for (const probe::GpuSeries& g : series) {
    FUZZ_CHECK(g.node == "n" && probe::StreamGpuIndex(g.gpu).has_value(), "a series without its node or GPU");
    for (std::size_t i = 0; i < g.windows.size(); ++i) {
      FUZZ_CHECK(g.windows[i].start_s < g.planned_s && std::abs(g.planned_s - 600) <= 0.5, "a window past the planned run");
      FUZZ_CHECK(i == 0 || g.windows[i].start_s >= g.windows[i - 1].start_s + probe::kGpuWindowSeconds,
                 "windows out of order");
    }
    for (std::size_t i = 1; i < g.events.size(); ++i) {
      FUZZ_CHECK(g.events[i].at_s >= g.events[i - 1].at_s, "events out of order");
    }
    FUZZ_CHECK(g.events.size() <= 1000, "more Xids kept than the bound");
  }
  return 0;
}
