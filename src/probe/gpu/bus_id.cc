#include "probe/gpu/bus_id.h"

#include <fmt/format.h>

#include <charconv>
#include <vector>

namespace gpuforge::probe::internal {
namespace {

// A field of 1 to `max_digits` hex digits no larger than `max`.
bool Hex(std::string_view s, std::size_t max_digits, unsigned long max, unsigned long* out) {
  if (s.empty() || s.size() > max_digits) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && end == s.data() + s.size() && *out <= max;
}

}  // namespace

std::string CanonicalBusId(std::string_view s) {
  unsigned long function = 0;
  if (std::size_t dot = s.find('.'); dot != std::string_view::npos) {
    if (!Hex(s.substr(dot + 1), 1, 7, &function)) return "";
    s = s.substr(0, dot);
  }
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    std::size_t colon = s.find(':', start);
    parts.push_back(s.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos || parts.size() > 3) break;
    start = colon + 1;
  }
  if (parts.size() == 2) parts.insert(parts.begin(), "0");
  unsigned long domain = 0, bus = 0, device = 0;
  if (parts.size() != 3 || !Hex(parts[0], 8, 0xffffffffUL, &domain) ||
      !Hex(parts[1], 2, 0xff, &bus) || !Hex(parts[2], 2, 0x1f, &device)) {
    return "";
  }
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, bus, device, function);
}

}  // namespace gpuforge::probe::internal
