#include "gpuforge/model/switch_names.h"

#include <fmt/format.h>

#include "gpuforge/base/text.h"

#include <cctype>
#include <charconv>

namespace gpuforge::model {

namespace {

struct Pattern {
  std::string_view prefix, suffix;
  int base = 1;  // port = n / mult + (base == 0 ? 1 : 0)
  int mult = 1;
};

Result<Pattern> ParsePattern(std::string_view p) {
  std::size_t open = p.find('{');
  std::size_t close = p.find('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return Error{fmt::format("'{}' has no placeholder: write {{port}} or {{port0}} where the number goes", p)};
  if (p.find('{', open + 1) != std::string_view::npos || p.find('}', close + 1) != std::string_view::npos)
    return Error{fmt::format("'{}' has more than one placeholder", p)};
  Pattern out;
  out.prefix = p.substr(0, open);
  out.suffix = p.substr(close + 1);
  std::string_view in = p.substr(open + 1, close - open - 1);
  std::string_view mult;
  if (std::size_t star = in.find('*'); star != std::string_view::npos) {
    mult = in.substr(star + 1);
    in = in.substr(0, star);
    if (mult.empty()) return Error{fmt::format("'{}': the multiplier must be a whole number from 1 to 64", p)};
  }
  if (in == "port") {
    out.base = 1;
  } else if (in == "port0") {
    out.base = 0;
  } else {
    return Error{fmt::format("'{}': unknown placeholder {{{}}}; expected {{port}}, {{port0}}, {{port*N}} or {{port0*N}}", p, in)};
  }
  if (!mult.empty()) {
    auto [ptr, ec] = std::from_chars(mult.data(), mult.data() + mult.size(), out.mult);
    if (ec != std::errc() || ptr != mult.data() + mult.size() || out.mult < 1 || out.mult > 64)
      return Error{fmt::format("'{}': the multiplier must be a whole number from 1 to 64", p)};
  }
  if (!out.suffix.empty() && std::isdigit(static_cast<unsigned char>(out.suffix.front())))
    return Error{fmt::format("'{}': a digit right after the placeholder makes the number ambiguous", p)};
  return out;
}

using gpuforge::text::Lower;

std::optional<long long> Digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  long long v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Status CheckPortPattern(std::string_view pattern) {
  if (pattern.size() > 64) return Error{"is longer than 64 characters"};
  for (char ch : pattern) {
    if (static_cast<unsigned char>(ch) < 0x21 || static_cast<unsigned char>(ch) > 0x7e)
      return Error{fmt::format("'{}' holds a space or a control character", pattern)};
  }
  Result<Pattern> p = ParsePattern(pattern);
  if (!p) return p.error();
  return Status::Ok();
}

std::optional<int> PortFromName(std::string_view name, std::string_view pattern, int ports) {
  long long n = 0;
  if (pattern.empty()) {
    std::size_t end = name.find_last_of("0123456789");
    if (end == std::string_view::npos) return std::nullopt;
    std::size_t start = end;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
    std::optional<long long> v = Digits(name.substr(start, end - start + 1));
    if (!v) return std::nullopt;
    n = *v;
  } else {
    Result<Pattern> p = ParsePattern(pattern);
    if (!p) return std::nullopt;
    if (name.size() < p->prefix.size() + p->suffix.size() + 1 || name.substr(0, p->prefix.size()) != p->prefix ||
        name.substr(name.size() - p->suffix.size()) != p->suffix)
      return std::nullopt;
    std::optional<long long> v = Digits(name.substr(p->prefix.size(), name.size() - p->prefix.size() - p->suffix.size()));
    if (!v || *v % p->mult != 0) return std::nullopt;
    n = *v / p->mult + (p->base == 0 ? 1 : 0);
  }
  if (n < 1 || n > ports) return std::nullopt;
  return static_cast<int>(n);
}

SwitchNames::SwitchNames(const Cluster& c) {
  auto add = [&](std::string_view name, const Switch* sw) {
    auto [it, fresh] = by_name_.emplace(Lower(name), sw);
    if (!fresh && it->second != sw) it->second = nullptr;
  };
  for (const Switch& sw : c.switches) {
    add(sw.name, &sw);
    for (const std::string& a : sw.aliases) add(a, &sw);
  }
}

const Switch* SwitchNames::Exact(std::string_view lower) const {
  auto it = by_name_.find(std::string(lower));
  return it == by_name_.end() ? nullptr : it->second;
}

const Switch* SwitchNames::Find(std::string_view measured) const {
  // A name the parsers escaped (it held control bytes) matches nothing, not even by a word of it.
  if (measured.find('\\') != std::string_view::npos) return nullptr;
  std::string s = Lower(measured);
  std::size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return nullptr;
  s = s.substr(a, s.find_last_not_of(" \t") - a + 1);
  if (const Switch* sw = Exact(s)) return sw;
  if (std::size_t dot = s.find('.'); dot != std::string::npos && dot > 0) {
    if (const Switch* sw = Exact(std::string_view(s).substr(0, dot))) return sw;
  }
  const Switch* found = nullptr;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t j = s.find_first_of(" \t;:/,\"", i);
    if (j == std::string::npos) j = s.size();
    if (j > i) {
      std::string_view word = std::string_view(s).substr(i, j - i);
      const Switch* sw = Exact(word);
      if (sw == nullptr) {
        if (std::size_t dot = word.find('.'); dot != std::string_view::npos && dot > 0) sw = Exact(word.substr(0, dot));
      }
      if (sw != nullptr) {
        if (found != nullptr && found != sw) return nullptr;  // two switches in one name: neither
        found = sw;
      }
    }
    i = j + 1;
  }
  return found;
}

}  // namespace gpuforge::model
