#include "report/xml.h"

#include <cstdint>

namespace gpuforge::report::xml {
namespace {

// The length of the well-formed UTF-8 sequence at s[i] whose code point XML allows, else 0.
std::size_t AllowedSequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  std::uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1fu) : len == 3 ? (c & 0x0fu) : (c & 0x07u);
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(k) >> 6) != 0x2) return 0;
    cp = (cp << 6) | (b(k) & 0x3fu);
  }
  // Overlong forms, surrogates, beyond Unicode, and what XML 1.0's Char production leaves out.
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff) return 0;
  if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') return 0;
  return len;
}

}  // namespace

std::string Escape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t len = AllowedSequence(s, i);
    if (len == 0) {
      out += '?';
      ++i;
      continue;
    }
    if (len > 1) {
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    switch (const char c = s[i++]) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\r': out += "&#13;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace gpuforge::report::xml
