#include "report/format.h"

#include <fmt/format.h>

#include <cmath>

namespace gpuforge::report::format {

std::string Number(double x) {
  if (!std::isfinite(x)) return fmt::format("{}", x);
  const double a = std::fabs(x);
  if (a >= 100) return fmt::format("{:.0f}", x);
  if (a >= 10) {
    std::string s = fmt::format("{:.1f}", x);
    if (s.ends_with(".0")) s.resize(s.size() - 2);  // "10", not "10.0"
    return s;
  }
  return fmt::format("{:.3g}", x);
}

std::string Quantity(double x, std::string_view unit) {
  return unit.empty() ? Number(x) : Number(x) + " " + std::string(unit);
}

std::string Quantity(const std::optional<double>& x, std::string_view unit) {
  return x ? Quantity(*x, unit) : std::string();
}

}  // namespace gpuforge::report::format
