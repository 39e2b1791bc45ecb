#pragma once

// How the GPU probes repeat a timed measurement, and the rows of the three parameters that
// say so (each probe lists them with its own help).

#include "gpuforge/base/result.h"
#include "gpuforge/probe/probe.h"

namespace gpuforge::probe::internal {

// `warmup` untimed operations, then `repeats` rounds of `iters` operations each; the figure is
// the median round.
struct Repeats {
  int warmup = 5;
  int iters = 20;
  int repeats = 5;
};

inline const ParamSpec kWarmupParam{"warmup", ParamKind::kWhole, "5", 0, 1000, ""};
inline const ParamSpec kItersParam{"iters", ParamKind::kWhole, "20", 1, 10000, ""};
inline const ParamSpec kRepeatsParam{"repeats", ParamKind::kWhole, "5", 1, 1000, ""};

gpuforge::Result<Repeats> RepeatParams(const Context& ctx);

}  // namespace gpuforge::probe::internal
