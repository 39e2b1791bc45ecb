#include "gpuforge/base/text.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuforge::text {
namespace {

bool PrintableAscii(char c) { return c >= 0x20 && c < 0x7f; }

}  // namespace

std::string Printable(std::string_view s, const Shown& how) {
  std::string out;
  std::size_t i = 0;
  for (; i < s.size() && out.size() < how.max; ++i) {
    const char c = s[i];
    if (how.drop_line_ends && (c == '\r' || c == '\n')) continue;
    if (PrintableAscii(c)) {
      out.push_back(c);
    } else {
      out.push_back(c == '\n' && how.newline != '\0' ? how.newline : how.other);
    }
  }
  if (i < s.size()) out += how.cut;
  return out;
}

std::string Visible(std::string_view text, std::size_t cap) {
  return Printable(text, Shown{.max = cap, .newline = '|', .cut = "..."});
}

std::string OneLine(std::string_view s, std::size_t max) {
  std::string out = Printable(s, Shown{.max = max, .other = ' '});
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool IsPrintable(std::string_view s) { return std::all_of(s.begin(), s.end(), PrintableAscii); }

std::string Escape(std::string_view s, const Escaping& how) {
  std::string out;
  std::size_t shown = 0;
  for (char ch : s) {
    if (shown == how.max) {
      out += "...";
      break;
    }
    ++shown;
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '\\') {
      out += how.escape_backslash ? "\\\\" : "\\";
    } else if (PrintableAscii(ch) || (how.keep_non_ascii && c >= 0x80)) {
      out.push_back(ch);
    } else if (ch == '\t') {
      out += "\\t";
    } else if (how.named_line_ends && ch == '\n') {
      out += "\\n";
    } else if (how.named_line_ends && ch == '\r') {
      out += "\\r";
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

std::string Quote(std::string_view s, std::size_t max) { return "'" + Escape(s, Escaping{.max = max}) + "'"; }

std::string Plural(long long n, std::string_view noun, std::string_view plural) {
  if (n == 1) return fmt::format("1 {}", noun);
  if (plural.empty()) return fmt::format("{} {}s", n, noun);
  return fmt::format("{} {}", n, plural);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view Trim(std::string_view s, std::string_view chars) {
  const std::size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

}  // namespace gpuforge::text
