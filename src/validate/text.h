#pragma once

// Small text tools shared by validate's remote side.

#include <cstddef>
#include <string>
#include <string_view>

namespace gpuforge::validate::internal {

// Node output shown in a message: printable ASCII only, one line, bounded.
inline std::string Visible(std::string_view text, std::size_t cap = 300) {
  std::string out;
  for (char c : text.substr(0, cap)) out.push_back(c >= 0x20 && c < 0x7f ? c : (c == '\n' ? '|' : '?'));
  if (text.size() > cap) out += "...";
  return out;
}

}  // namespace gpuforge::validate::internal
