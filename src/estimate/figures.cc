#include "estimate/figures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "gpuforge/base/quantity.h"

namespace gpuforge::estimate::internal {

Figure Known(FigureId id, double value, std::string formula) {
  Figure f;
  f.key = std::move(id.key);
  f.label = std::move(id.label);
  f.unit = std::move(id.unit);
  f.formula = std::move(formula);
  // Why a guard here and not only at each division: a report that prints "nan" or "inf"
  // looks like a measurement; one place makes the promise hold for every section.
  if (!std::isfinite(value)) {
    f.display = "n/a";
    f.note = "the arithmetic did not give a finite number (an input is not finite)";
    return f;
  }
  f.value = value;
  f.display = Display(f.unit, value);
  return f;
}

Figure Unknown(FigureId id, std::string missing, std::string formula) {
  Figure f;
  f.key = std::move(id.key);
  f.label = std::move(id.label);
  f.unit = std::move(id.unit);
  f.display = "unknown";
  f.formula = std::move(formula);
  f.missing = std::move(missing);
  return f;
}

Figure NotApplicable(FigureId id, std::string reason) {
  Figure f;
  f.key = std::move(id.key);
  f.label = std::move(id.label);
  f.unit = std::move(id.unit);
  f.display = "n/a";
  f.note = std::move(reason);
  return f;
}

bool Usable(double v) { return std::isfinite(v) && v > 0; }

void SetVerdict(Figure& f, std::string verdict) {
  if (f.value) f.verdict = std::move(verdict);
}

std::string Display(std::string_view unit, double value) {
  if (unit == "W") return quantity::FormatPower(value);
  if (unit == "kWh") return Num(value, 0) + " kWh";
  if (unit == "s") return quantity::FormatDuration(value);
  if (unit == "bytes") return quantity::FormatSize(value);
  if (unit == "bytes/s") return quantity::FormatBandwidthBytes(value);
  if (unit == "currency") return Money(value);
  if (unit == "currency/month") return Money(value) + " per month";
  if (unit == "ratio") return Num(value, 2) + "x";
  if (unit == "months") return Num(value, 1) + " months";
  return Num(value);
}

std::string Num(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  std::string s = fmt::format("{:.{}f}", std::fabs(v), decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  std::size_t int_end = s.find('.');
  if (int_end == std::string::npos) int_end = s.size();
  std::string grouped;
  for (std::size_t i = 0; i < int_end; ++i) {
    if (i > 0 && (int_end - i) % 3 == 0) grouped.push_back(',');
    grouped.push_back(s[i]);
  }
  grouped.append(s, int_end);
  // Why compare the text: -0.0001 rounds to "0", and "-0" reads like a sign error.
  if (v < 0 && grouped != "0") grouped.insert(0, "-");
  return grouped;
}

std::string Money(double v) {
  // Why the steps: 1,120,000 needs no cents, a 3.5 per GPU-hour rate needs them, and a
  // 0.12 per kWh power price needs more.
  if (std::fabs(v) >= 1000) return Num(v, 0);
  if (std::fabs(v) >= 1) return Num(v, 2);
  return Num(v, 4);
}

std::string MissingOf(const Figure* f, std::string_view key) {
  if (f != nullptr && f->value) return "";
  if (f != nullptr && !f->missing.empty()) return f->missing;
  return std::string(key);
}

std::string GpusMissing(const model::Cluster& c) {
  if (c.nodes.empty()) return "nodes";
  std::string missing;
  for (const model::Node& n : c.nodes) {
    missing = JoinMissing({missing, fmt::format("profiles.{}.gpus.count", n.profile)});
  }
  return missing;
}

std::string JoinMissing(std::initializer_list<std::string_view> parts) {
  std::vector<std::string_view> seen;
  for (std::string_view whole : parts) {
    // Parts may themselves be lists from another figure's `missing`.
    std::size_t start = 0;
    while (start <= whole.size()) {
      std::size_t end = whole.find(", ", start);
      if (end == std::string_view::npos) end = whole.size();
      std::string_view p = whole.substr(start, end - start);
      start = end + 2;
      if (p.empty()) continue;
      if (std::find(seen.begin(), seen.end(), p) == seen.end()) seen.push_back(p);
    }
  }
  return fmt::format("{}", fmt::join(seen, ", "));
}

}  // namespace gpuforge::estimate::internal
