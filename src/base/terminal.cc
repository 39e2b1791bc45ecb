#include "gpuforge/base/terminal.h"

#include <cstdint>

namespace gpuforge::text {

std::string ForTerminal(std::string_view s, std::span<const std::string_view> allowed) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {
      bool kept = false;
      for (std::string_view a : allowed) {
        if (!a.empty() && s.substr(i, a.size()) == a) {
          out += a;
          i += a.size();
          kept = true;
          break;
        }
      }
      if (!kept) {
        out += '?';
        ++i;
      }
      continue;
    }
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // UTF-8: the lead byte says the length; continuation bytes are 10xxxxxx; overlong forms,
    // surrogates and C1 controls (U+0080..U+009F, which some terminals read as CSI) are refused.
    std::size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    std::uint32_t cp = len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xc0) == 0x80;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (ok) {
      const std::uint32_t least = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= least && cp > 0x9f && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

}  // namespace gpuforge::text
