#include "gpuforge/base/quantity.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace gpuforge::quantity {

namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// Suffixes are matched exactly (case matters: "Gb/s" is bits, "GB/s" bytes; "m" is never
// milli for bandwidth). Longest suffix first where one is a tail of another.
constexpr std::array kBandwidth = {
    Unit{"Tb/s", 1e12 / 8}, Unit{"Gb/s", 1e9 / 8}, Unit{"Mb/s", 1e6 / 8}, Unit{"kb/s", 1e3 / 8},
    Unit{"Kb/s", 1e3 / 8},  Unit{"b/s", 1.0 / 8},  Unit{"Tbps", 1e12 / 8}, Unit{"Gbps", 1e9 / 8},
    Unit{"Mbps", 1e6 / 8},  Unit{"kbps", 1e3 / 8}, Unit{"bps", 1.0 / 8},   Unit{"TB/s", 1e12},
    Unit{"GB/s", 1e9},      Unit{"MB/s", 1e6},     Unit{"kB/s", 1e3},      Unit{"KB/s", 1e3},
    Unit{"TiB/s", 1099511627776.0}, Unit{"GiB/s", 1073741824.0}, Unit{"MiB/s", 1048576.0},
    Unit{"B/s", 1.0},
};
constexpr std::array kSize = {
    Unit{"PiB", 1125899906842624.0}, Unit{"TiB", 1099511627776.0}, Unit{"GiB", 1073741824.0},
    Unit{"MiB", 1048576.0},          Unit{"KiB", 1024.0},          Unit{"Ki", 1024.0},
    Unit{"Mi", 1048576.0},           Unit{"Gi", 1073741824.0},     Unit{"Ti", 1099511627776.0},
    Unit{"PB", 1e15},                Unit{"TB", 1e12},             Unit{"GB", 1e9},
    Unit{"MB", 1e6},                 Unit{"kB", 1e3},              Unit{"KB", 1e3},
    Unit{"B", 1.0},
};
constexpr std::array kPower = {Unit{"MW", 1e6}, Unit{"kW", 1e3}, Unit{"KW", 1e3}, Unit{"W", 1.0}};
constexpr std::array kDuration = {Unit{"ns", 1e-9}, Unit{"us", 1e-6}, Unit{"\xC2\xB5s", 1e-6},
                                  Unit{"ms", 1e-3}, Unit{"min", 60.0}, Unit{"s", 1.0},
                                  Unit{"h", 3600.0}, Unit{"d", 86400.0}};
constexpr std::array kCount = {Unit{"K", 1e3}, Unit{"k", 1e3}, Unit{"M", 1e6}, Unit{"B", 1e9},
                               Unit{"G", 1e9}, Unit{"T", 1e12}, Unit{"", 1.0}};

template <std::size_t N>
const Unit* Find(const std::array<Unit, N>& units, std::string_view suffix) {
  for (const Unit& u : units) {
    if (u.suffix == suffix) return &u;
  }
  return nullptr;
}

const Unit* FindFor(Dimension d, std::string_view suffix) {
  switch (d) {
    case Dimension::kBandwidth: return Find(kBandwidth, suffix);
    case Dimension::kSize: return Find(kSize, suffix);
    case Dimension::kPower: return Find(kPower, suffix);
    case Dimension::kDuration: return Find(kDuration, suffix);
    case Dimension::kCount: return Find(kCount, suffix);
  }
  return nullptr;
}

std::string Trim(double v) {
  std::string s = fmt::format("{:.3f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string Scaled(double v, std::initializer_list<std::pair<double, std::string_view>> steps,
                   std::string_view base) {
  for (const auto& [factor, name] : steps) {
    if (std::fabs(v) >= factor) return fmt::format("{} {}", Trim(v / factor), name);
  }
  return fmt::format("{} {}", Trim(v), base);
}

}  // namespace

std::string_view DimensionName(Dimension d) {
  switch (d) {
    case Dimension::kBandwidth: return "bandwidth";
    case Dimension::kSize: return "size";
    case Dimension::kPower: return "power";
    case Dimension::kDuration: return "duration";
    case Dimension::kCount: return "count";
  }
  return "quantity";
}

std::string_view DimensionExample(Dimension d) {
  switch (d) {
    case Dimension::kBandwidth: return "400Gb/s or 50GB/s";
    case Dimension::kSize: return "141GB or 2TiB";
    case Dimension::kPower: return "700W or 40kW";
    case Dimension::kDuration: return "100us, 10ms or 2min";
    case Dimension::kCount: return "70B or 512";
  }
  return "";
}

Result<double> Parse(std::string_view text, Dimension d) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  std::string_view number = s.substr(0, i);
  std::string_view unit = s.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (number.empty()) {
    if (!s.empty() && s.front() == '-') {
      return Error{fmt::format("'{}' is negative; a {} cannot be", text, DimensionName(d))};
    }
    return Error{fmt::format("'{}' is not a {}; write it like {}", text, DimensionName(d),
                             DimensionExample(d))};
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(value)) {
    return Error{fmt::format("'{}' is not a {}; write it like {}", text, DimensionName(d),
                             DimensionExample(d))};
  }
  if (unit.empty() && d != Dimension::kCount) {
    return Error{fmt::format("'{}' has no unit; write the {} with its unit, like {}", text,
                             DimensionName(d), DimensionExample(d))};
  }
  const Unit* u = FindFor(d, unit);
  if (u == nullptr) {
    return Error{fmt::format("'{}' has unit '{}', which is not a {} unit; write it like {}", text,
                             unit, DimensionName(d), DimensionExample(d))};
  }
  return value * u->factor;
}

Result<double> ParseInUnit(std::string_view text, std::string_view unit) {
  struct Kept {
    std::string_view unit;
    Dimension dimension;
    double factor;  // base units of the dimension per one `unit`
  };
  static constexpr std::array kKept = {
      Kept{"bytes/s", Dimension::kBandwidth, 1.0}, Kept{"GB/s", Dimension::kBandwidth, 1e9},
      Kept{"bytes", Dimension::kSize, 1.0},        Kept{"W", Dimension::kPower, 1.0},
      Kept{"s", Dimension::kDuration, 1.0},        Kept{"ms", Dimension::kDuration, 1e-3},
      Kept{"us", Dimension::kDuration, 1e-6},
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  double plain = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), plain);
  if (!s.empty() && ec == std::errc() && ptr == s.data() + s.size()) {
    if (!std::isfinite(plain)) return Error{fmt::format("'{}' is not a finite number", text)};
    return plain;
  }
  const Kept* kept = nullptr;
  for (const Kept& k : kKept) {
    if (k.unit == unit) kept = &k;
  }
  // What the text is, for the message: the first dimension that reads it.
  auto what = [&]() -> std::string {
    for (Dimension d : {Dimension::kBandwidth, Dimension::kSize, Dimension::kPower, Dimension::kDuration}) {
      if (Parse(s, d).ok()) return fmt::format("'{}' is a {}", text, DimensionName(d));
    }
    return fmt::format("'{}' is not a number or a quantity gpuforge reads", text);
  };
  if (kept == nullptr) {
    // A count or a ratio: a number, or a count with its K/M/B suffix ("70B" parameters).
    Result<double> n = Parse(s, Dimension::kCount);
    if (n.ok()) return n;
    return Error{fmt::format("{}, and the threshold is a number ({}): write a plain number", what(), unit)};
  }
  Result<double> q = Parse(s, kept->dimension);
  if (!q.ok()) {
    return Error{fmt::format("{}, and the threshold is a {} in {}: write it like {}, or a plain number of {}", what(),
                             DimensionName(kept->dimension), unit, DimensionExample(kept->dimension), unit)};
  }
  return *q / kept->factor;
}

std::string FormatBandwidthBits(double bytes_per_s) {
  return Scaled(bytes_per_s * 8, {{1e12, "Tb/s"}, {1e9, "Gb/s"}, {1e6, "Mb/s"}, {1e3, "kb/s"}},
                "b/s");
}

std::string FormatBandwidthBytes(double bytes_per_s) {
  return Scaled(bytes_per_s, {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}}, "B/s");
}

std::string FormatSize(double bytes) {
  return Scaled(bytes, {{1e15, "PB"}, {1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}}, "B");
}

std::string FormatPower(double watts) {
  return Scaled(watts, {{1e6, "MW"}, {1e3, "kW"}}, "W");
}

std::string FormatDuration(double seconds) {
  if (seconds >= 86400 * 2) return fmt::format("{} d", Trim(seconds / 86400));
  if (seconds >= 7200) return fmt::format("{} h", Trim(seconds / 3600));
  if (seconds >= 120) return fmt::format("{} min", Trim(seconds / 60));
  if (seconds >= 1) return fmt::format("{} s", Trim(seconds));
  if (seconds >= 1e-3) return fmt::format("{} ms", Trim(seconds * 1e3));
  if (seconds >= 1e-6) return fmt::format("{} us", Trim(seconds * 1e6));
  return fmt::format("{} ns", Trim(seconds * 1e9));
}

std::string FormatCount(double n) {
  for (auto [factor, name] : {std::pair{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}) {
    if (std::fabs(n) >= factor) return Trim(n / factor) + name;
  }
  return Trim(n);
}

}  // namespace gpuforge::quantity
