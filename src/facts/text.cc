#include "facts/text.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace gpuforge::facts::text {

std::vector<std::string_view> Lines(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < s.size()) {
    std::size_t nl = s.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? s.size() : nl;
    std::string_view line = s.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  const std::string_view ws = " \t\r\n\f\v";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t p = s.find(sep, start);
    if (p == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, p - start));
    start = p + 1;
  }
}

std::string StripAnsi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {
      // CSI: ESC [ parameters intermediates final-byte (0x40..0x7e). A lone ESC or another
      // escape kind is dropped with the byte after it.
      if (i + 1 < s.size() && s[i + 1] == '[') {
        std::size_t j = i + 2;
        while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7e)) ++j;
        i = j;
      } else {
        ++i;
      }
      continue;
    }
    if (c < 0x20 && c != '\t' && c != '\n') continue;
    if (c == 0x7f) continue;
    out.push_back(static_cast<char>(c));
  }
  return out;
}

namespace {

template <class T>
std::optional<T> FromChars(std::string_view s, int base = 10) {
  if (s.empty()) return std::nullopt;
  T v{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::int64_t> ToInt(std::string_view s) { return FromChars<std::int64_t>(s); }

std::optional<std::uint64_t> ToUint(std::string_view s) {
  if (!s.empty() && s[0] == '-') return std::nullopt;
  return FromChars<std::uint64_t>(s);
}

std::optional<std::uint64_t> ToHex(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) return std::nullopt;
  return FromChars<std::uint64_t>(s, 16);
}

std::optional<double> ToDouble(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int> ToIntIn(std::string_view s, int lo, int hi) {
  std::optional<std::int64_t> v = ToInt(s);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return static_cast<int>(*v);
}

bool IsNotAvailable(std::string_view cell) {
  cell = Trim(cell);
  if (cell.empty()) return true;
  if (cell.front() == '[' && cell.back() == ']') return true;  // [N/A], [Not Supported], ...
  return cell == "N/A" || cell == "Not Supported" || cell == "Unknown" || cell == "None";
}

bool IsErrorCell(std::string_view cell) {
  cell = Trim(cell);
  if (cell.size() < 2 || cell.front() != '[' || cell.back() != ']') return false;
  // nvidia-smi prints an NVML return code in brackets where a value should be. Not supported,
  // not permitted and deprecated say nothing about the GPU's health; every other code does
  // (nvmlErrorString: "Unknown Error", "GPU is lost", "GPU requires reset", ...).
  for (std::string_view benign : {"[N/A]", "[Not Supported]", "[Insufficient Permissions]",
                                  "[Requested functionality has been deprecated]"}) {
    if (cell == benign) return false;
  }
  return true;
}

Status CheckInput(std::string_view s, std::size_t max_bytes) {
  if (s.size() > max_bytes) {
    return Error{fmt::format("output is {} bytes, over the {} byte limit", s.size(), max_bytes)};
  }
  std::size_t nul = s.find('\0');
  if (nul != std::string_view::npos) {
    std::size_t line = 1;
    for (std::size_t i = 0; i < nul; ++i) line += s[i] == '\n';
    return Error{fmt::format("line {}: binary data (NUL byte), not command output", line)};
  }
  return Status::Ok();
}

std::pair<std::string_view, std::string_view> HeadTail(std::string_view line) {
  line = Trim(line);
  std::size_t sp = line.find_first_of(" \t");
  if (sp == std::string_view::npos) return {line, {}};
  return {line.substr(0, sp), Trim(line.substr(sp))};
}

Error LineError(std::size_t line_index, std::string_view message) {
  return Error{fmt::format("line {}: {}", line_index + 1, message)};
}

bool IsToken(std::string_view s, std::size_t max) {
  if (s.empty() || s.size() > max) return false;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace gpuforge::facts::text
