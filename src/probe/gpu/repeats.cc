#include "probe/gpu/repeats.h"

namespace gpuforge::probe::internal {

gpuforge::Result<Repeats> RepeatParams(const Context& ctx) {
  gpuforge::Result<std::int64_t> warmup = Whole(ctx, kWarmupParam);
  if (!warmup.ok()) return warmup.error();
  gpuforge::Result<std::int64_t> iters = Whole(ctx, kItersParam);
  if (!iters.ok()) return iters.error();
  gpuforge::Result<std::int64_t> repeats = Whole(ctx, kRepeatsParam);
  if (!repeats.ok()) return repeats.error();
  return Repeats{static_cast<int>(*warmup), static_cast<int>(*iters), static_cast<int>(*repeats)};
}

}  // namespace gpuforge::probe::internal
