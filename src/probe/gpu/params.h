#pragma once

// Typed parameters of the GPU probes. Errors name the parameter, the value and the range.

#include <cstdint>
#include <string>

#include "gpuforge/base/result.h"
#include "gpuforge/probe/probe.h"

namespace gpuforge::probe::internal {

// How a timed measurement is repeated: `warmup` untimed operations, then `repeats` rounds of
// `iters` operations each; the figure is the median round.
struct Repeats {
  int warmup = 5;
  int iters = 20;
  int repeats = 5;
};

// The parameters "warmup" (0 to 1000), "iters" (1 to 10000) and "repeats" (1 to 1000).
gpuforge::Result<Repeats> RepeatParams(const Context& ctx);

// A whole number in [lo, hi].
gpuforge::Result<std::int64_t> IntParam(const Context& ctx, const std::string& name,
                                        std::int64_t lo, std::int64_t hi);

// A byte size with its unit ("1GiB", "256MiB", "64MB"), a multiple of 4 bytes, in [lo, hi].
gpuforge::Result<std::uint64_t> SizeParam(const Context& ctx, const std::string& name,
                                          std::uint64_t lo, std::uint64_t hi);

}  // namespace gpuforge::probe::internal
