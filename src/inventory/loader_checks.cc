// Checks every section of the loader uses: hostlist expansion with the caret on the right
// column, name checks, values safe for config files and commands, and what failed entries
// may have declared.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/hostlist.h"
#include "gpuforge/base/names.h"
#include "inventory/sections.h"

namespace gpuforge::inventory::internal {

namespace {

// A character as a message shows it: "';'", "a space", "a control character".
std::string Describe(char c) {
  if (c == ' ') return "a space";
  if (c == '\n') return "a newline";
  if (c == '\t') return "a tab";
  auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7f) return "a control character";
  if (u >= 0x80) return "a non-ASCII character";
  return fmt::format("'{}'", c);
}

// The 0-based position a base/ message gives as "<marker>N" (1-based when `one_based`).
std::optional<std::size_t> PositionIn(std::string_view message, std::string_view marker, bool one_based) {
  std::size_t at = message.rfind(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t v = 0;
  const char* begin = message.data() + at + marker.size();
  auto [ptr, ec] = std::from_chars(begin, message.data() + message.size(), v);
  if (ec != std::errc() || ptr == begin || (one_based && v == 0)) return std::nullopt;
  return one_based ? v - 1 : v;
}

}  // namespace

std::string DidYouMean(std::string_view word, const std::vector<std::string>& known) {
  if (auto best = names::Closest(word, known)) return fmt::format("; did you mean '{}'?", *best);
  return "";
}

std::optional<std::vector<std::string>> Loader::Expand(const YAML::Node& n, std::string_view what,
                                                       std::size_t limit) {
  auto text = r_.ScalarOf(n, what);
  if (!text) return std::nullopt;
  return ExpandPart(n, *text, 0, what, limit);
}

std::optional<std::vector<std::string>> Loader::ExpandPart(const YAML::Node& n, std::string_view text,
                                                           std::size_t offset, std::string_view what,
                                                           std::size_t limit) {
  Result<std::vector<std::string>> names = hostlist::Expand(text, limit);
  if (names.ok()) return std::move(*names);
  // The hostlist module says "at column N" (0-based within the expression); the caret shows
  // it, so the message need not.
  std::string msg = names.error().message;
  if (auto col = PositionIn(msg, " at column ", false)) {
    msg.erase(msg.rfind(" at column "));
    r_.Error(r_.PosAt(n, offset + *col), fmt::format("{}: {}", what, msg));
  } else {
    r_.Error(n, fmt::format("{}: {}", what, msg));
  }
  return std::nullopt;
}

bool Loader::CheckHostlistChars(const YAML::Node& n, std::string_view extra, std::string_view what,
                                std::string_view rule) {
  if (!n.IsScalar()) return true;  // ScalarOf reports it
  const std::string& s = n.Scalar();
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos ||
        c == '[' || c == ']' || c == ',') {
      continue;
    }
    r_.Error(r_.PosAt(n, i), fmt::format("{} '{}' contains {}; {}", what, s, Describe(c), rule));
    return false;
  }
  return true;
}

void Loader::CheckWith(const YAML::Node& n, std::optional<std::string> (*check)(std::string_view),
                       std::string_view value, std::string_view what) {
  auto bad = check(value);
  if (!bad) return;
  std::optional<std::size_t> at;
  if (n.IsScalar() && n.Scalar() == value) at = PositionIn(*bad, " at position ", true);
  if (at) {
    r_.Error(r_.PosAt(n, *at), fmt::format("{}: {}", what, *bad));
  } else {
    r_.Error(n, fmt::format("{}: {}", what, *bad));
  }
}

bool Loader::CheckSafe(const YAML::Node& n, std::string_view value, std::string_view what, std::string_view why) {
  auto bad = names::CheckSafeValue(value);
  if (!bad) return true;
  // The alphabet lives in base/names; asking it one character at a time finds the culprit.
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (names::CheckSafeValue(value.substr(i, 1))) {
      r_.Error(n.IsScalar() && n.Scalar() == value ? r_.PosAt(n, i) : r_.Pos(n),
               fmt::format("{} contains {}; {}, so values may hold only letters, digits and _.,:=^/+-%@~", what,
                           Describe(value[i]), why));
      return false;
    }
  }
  r_.Error(n, fmt::format("{}: {}", what, *bad));
  return false;
}

bool Loader::MaybeFromFailedEntry(const std::string& name) const {
  return std::any_of(failed_prefixes_.begin(), failed_prefixes_.end(),
                     [&](const std::string& p) { return name.starts_with(p); });
}

void Loader::NoteFailedEntry(const YAML::Node& name_node) {
  // The names an entry would have declared start with its text up to the first bracket or
  // odd character; with nothing usable, any unknown name may be one of them.
  std::string prefix;
  if (name_node.IsScalar()) {
    for (char c : name_node.Scalar()) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' && c != '_') break;
      prefix += c;
    }
  }
  failed_prefixes_.push_back(prefix);
}

}  // namespace gpuforge::inventory::internal
