#include "probe/gpu/params.h"

#include <fmt/format.h>

#include <cmath>

#include "gpuforge/base/quantity.h"

namespace gpuforge::probe::internal {

gpuforge::Result<std::int64_t> IntParam(const Context& ctx, const std::string& name,
                                        std::int64_t lo, std::int64_t hi) {
  gpuforge::Result<double> v = ctx.Number(name);
  if (!v.ok()) return v.error();
  if (*v != std::floor(*v) || *v < static_cast<double>(lo) || *v > static_cast<double>(hi)) {
    return Error{
        fmt::format("parameter {} must be a whole number from {} to {}, not {}", name, lo, hi, *v)};
  }
  return static_cast<std::int64_t>(*v);
}

gpuforge::Result<std::uint64_t> SizeParam(const Context& ctx, const std::string& name,
                                          std::uint64_t lo, std::uint64_t hi) {
  gpuforge::Result<std::string> text = ctx.Text(name);
  if (!text.ok()) return text.error();
  gpuforge::Result<double> bytes = quantity::Parse(*text, quantity::Dimension::kSize);
  if (!bytes.ok()) return Error{fmt::format("parameter {}: {}", name, bytes.error().message)};
  const double b = *bytes;
  if (b != std::floor(b) || b < static_cast<double>(lo) || b > static_cast<double>(hi) ||
      std::fmod(b, 4) != 0) {
    return Error{
        fmt::format("parameter {} must be a multiple of 4 bytes from {} to {} bytes, not "
                    "'{}'",
                    name, lo, hi, *text)};
  }
  return static_cast<std::uint64_t>(b);
}

gpuforge::Result<Repeats> RepeatParams(const Context& ctx) {
  gpuforge::Result<std::int64_t> warmup = IntParam(ctx, "warmup", 0, 1000);
  if (!warmup.ok()) return warmup.error();
  gpuforge::Result<std::int64_t> iters = IntParam(ctx, "iters", 1, 10000);
  if (!iters.ok()) return iters.error();
  gpuforge::Result<std::int64_t> repeats = IntParam(ctx, "repeats", 1, 1000);
  if (!repeats.ok()) return repeats.error();
  return Repeats{static_cast<int>(*warmup), static_cast<int>(*iters), static_cast<int>(*repeats)};
}

}  // namespace gpuforge::probe::internal
