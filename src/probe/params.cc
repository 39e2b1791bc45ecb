#include "gpuforge/probe/params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "gpuforge/base/quantity.h"
#include "gpuforge/probe/probe.h"

namespace gpuforge::probe {
namespace {

bool Digits(const std::string& t) {
  return !t.empty() && t.size() <= 15 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool InRange(double v, const ParamSpec& spec) {
  return v == std::floor(v) && v >= static_cast<double>(spec.min) && v <= static_cast<double>(spec.max);
}

}  // namespace

ParamSpec ParamSpec::Within(std::int64_t lo, std::int64_t hi) const {
  ParamSpec s = *this;
  s.min = lo;
  s.max = hi;
  return s;
}

ParamSpec ParamSpec::Documented(std::string text) const {
  ParamSpec s = *this;
  s.doc = std::move(text);
  return s;
}

gpuforge::Result<std::string> Text(const Context& ctx, const ParamSpec& spec) { return ctx.Text(spec.name); }

gpuforge::Result<std::int64_t> Whole(const Context& ctx, const ParamSpec& spec) {
  gpuforge::Result<double> v = ctx.Number(spec.name);
  if (!v.ok()) return v.error();
  if (!InRange(*v, spec)) {
    return Error{fmt::format("parameter {} must be a whole number from {} to {}, not '{}'", spec.name, spec.min,
                             spec.max, ctx.params.at(spec.name))};
  }
  return static_cast<std::int64_t>(*v);
}

gpuforge::Result<std::uint64_t> Bytes(const Context& ctx, const ParamSpec& spec) {
  gpuforge::Result<std::string> text = ctx.Text(spec.name);
  if (!text.ok()) return text.error();
  double b = 0;
  if (spec.kind == ParamKind::kByteCount && Digits(*text)) {
    b = static_cast<double>(std::stoull(*text));
  } else {
    gpuforge::Result<double> parsed = quantity::Parse(*text, quantity::Dimension::kSize);
    if (!parsed.ok()) return Error{fmt::format("parameter {}: {}", spec.name, parsed.error().message)};
    b = *parsed;
  }
  if (spec.kind == ParamKind::kWords && (!InRange(b, spec) || std::fmod(b, 4) != 0)) {
    return Error{fmt::format("parameter {} must be a multiple of 4 bytes from {} to {} bytes, not '{}'", spec.name,
                             spec.min, spec.max, *text)};
  }
  if (!InRange(b, spec)) {
    return Error{fmt::format("parameter {} must be a whole number of bytes from {} to {}, not '{}'", spec.name,
                             spec.min, spec.max, *text)};
  }
  return static_cast<std::uint64_t>(b);
}

gpuforge::Result<double> Seconds(const Context& ctx, const ParamSpec& spec) {
  gpuforge::Result<double> d = ctx.Number(spec.name);
  if (!d.ok()) return d.error();
  if (*d <= 0 || *d > static_cast<double>(spec.max)) {
    return Error{fmt::format("parameter {} must be a number of seconds above 0 and at most {}, not '{}'", spec.name,
                             spec.max, ctx.params.at(spec.name))};
  }
  return *d;
}

}  // namespace gpuforge::probe
