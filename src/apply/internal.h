#pragma once

// Small text helpers apply's files and rollback.cc share: node output made safe to show, paths,
// the alphabets node output is checked against.

#include <cstddef>
#include <string>
#include <string_view>

#include "gpuforge/base/text.h"

namespace gpuforge::apply::internal {

inline std::string Parent(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string_view::npos ? std::string("/") : std::string(path.substr(0, slash));
}

// Node output shown in a message (base/text.h), by default up to this many characters.
using text::Visible;
inline constexpr std::size_t kShownChars = 200;

inline std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline bool AllOf(std::string_view s, std::string_view alphabet) {
  return !s.empty() && s.find_first_not_of(alphabet) == std::string_view::npos;
}

inline constexpr std::string_view kDigits = "0123456789";
inline constexpr std::string_view kHex = "0123456789abcdef";

}  // namespace gpuforge::apply::internal
