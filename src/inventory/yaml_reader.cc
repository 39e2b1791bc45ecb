#include "gpuforge/inventory/yaml_reader.h"

#include <fmt/format.h>

#include <yaml-cpp/depthguard.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <vector>

#include "gpuforge/base/names.h"

namespace gpuforge::inventory {

const char* TypeName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "something else";
}

SourcePos YamlReader::Pos(const YAML::Node& n) const {
  YAML::Mark m = n.Mark();
  if (m.is_null() || m.line < 0) return SourcePos{file_, 0, 0};
  return SourcePos{file_, m.line + 1, m.column + 1};
}

SourcePos YamlReader::PosAt(const YAML::Node& n, std::size_t index) const {
  SourcePos pos = Pos(n);
  if (pos.col <= 0 || !n.IsScalar() || index > n.Scalar().size()) return pos;
  // Escapes and folding would shift columns: map back only when everything before `index` is
  // written as itself.
  const std::string& v = n.Scalar();
  for (std::size_t i = 0; i < index; ++i) {
    auto c = static_cast<unsigned char>(v[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\' || c == '"' || c == '\'') return pos;
  }
  pos.col += TextOffset(n) + static_cast<int>(index);
  return pos;
}

int YamlReader::Width(const YAML::Node& n) {
  if (!n.IsScalar()) return 1;
  return std::max<int>(1, static_cast<int>(n.Scalar().size()) + 2 * TextOffset(n));
}

int YamlReader::TextOffset(const YAML::Node& n) { return n.IsScalar() && n.Tag() == "!" ? 1 : 0; }

void YamlReader::Error(const YAML::Node& at, std::string message) const {
  diags_->Error(Pos(at), std::move(message), Width(at));
}

void YamlReader::Error(SourcePos pos, std::string message, int width) const {
  diags_->Error(std::move(pos), std::move(message), width);
}

bool YamlReader::CheckMap(const YAML::Node& n, std::string_view what,
                          std::span<const std::string_view> allowed) const {
  if (!CheckOpenMap(n, what)) return false;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    if (!key.IsScalar()) continue;  // reported by CheckOpenMap
    const std::string& k = key.Scalar();
    bool known = false;
    for (std::string_view a : allowed) known = known || a == k;
    if (known) continue;
    std::string msg = fmt::format("unknown key '{}' in {}", k, what);
    if (auto best = names::Closest(k, allowed)) {
      msg += fmt::format("; did you mean '{}'?", *best);
      SourcePos at = Pos(n);
      suggested_.emplace(at.line, at.col, *best);
    } else {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      msg += fmt::format(" (allowed: {})", list);
    }
    Error(key, msg);
  }
  return true;
}

bool YamlReader::CheckOpenMap(const YAML::Node& n, std::string_view what) const {
  if (!n.IsMap()) {
    Error(n, fmt::format("{} must be a mapping of key: value, not {}", what, TypeName(n)));
    return false;
  }
  std::set<std::string> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    YAML::Node key = it->first;
    if (!key.IsScalar()) {
      Error(key, fmt::format("keys in {} must be plain words, not {}", what, TypeName(key)));
      continue;
    }
    if (!seen.insert(key.Scalar()).second) {
      Error(key, fmt::format("duplicate key '{}' in {}; YAML keeps only one of them", key.Scalar(), what));
    }
  }
  return true;
}

bool YamlReader::CheckSeq(const YAML::Node& n, std::string_view what) const {
  if (!n.IsSequence()) {
    Error(n, fmt::format("{} must be a list, not {}", what, TypeName(n)));
    return false;
  }
  return true;
}

void YamlReader::Missing(const YAML::Node& map, std::string_view key, std::string_view what) const {
  SourcePos at = Pos(map);
  if (suggested_.count({at.line, at.col, std::string(key)})) return;
  Error(map, fmt::format("{} is missing required key '{}'", what, key));
}

std::optional<std::string> YamlReader::ScalarOf(const YAML::Node& n, std::string_view what) const {
  if (!n.IsScalar()) {
    Error(n, fmt::format("{} must be a single value, not {}", what, TypeName(n)));
    return std::nullopt;
  }
  return n.Scalar();
}

YAML::Node YamlReader::Get(const YAML::Node& map, std::string_view key) {
  // Why the loop: operator[] on a const node cannot tell "absent" from "null" cheaply, and a
  // duplicate key must resolve to its first occurrence, as CheckOpenMap reports it.
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

bool YamlReader::Has(const YAML::Node& map, std::string_view key) {
  YAML::Node n = Get(map, key);
  return n.IsDefined() && !n.IsNull();
}

namespace {

// Why: bits against bytes and letter case are the mistakes that cost a factor of 8 or 1000;
// say which one it is rather than only that the unit is wrong.
std::string UnitHint(const std::string& text, quantity::Dimension dim) {
  using quantity::Dimension;
  if (dim == Dimension::kBandwidth && quantity::Parse(text, Dimension::kSize).ok()) {
    std::string bytes = text + "/s";
    std::string bits = bytes;
    if (std::size_t b = bits.rfind("B/s"); b != std::string::npos && bits.find("iB/s") == std::string::npos) {
      bits.replace(b, 1, "b");
      return fmt::format("; that is a size: write '{}' for bits per second (as links are rated) or '{}' for bytes per second",
                         bits, bytes);
    }
    return "; that is a size: a rate ends in '/s'";
  }
  if (dim != Dimension::kBandwidth && quantity::Parse(text, Dimension::kBandwidth).ok()) {
    return fmt::format("; that is a rate, and this is a {}", quantity::DimensionName(dim));
  }
  std::size_t unit = text.find_first_not_of("0123456789. ");
  if (unit == std::string::npos) return "";
  std::string upper = text;
  upper[unit] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[unit])));
  if (upper != text && quantity::Parse(upper, dim).ok()) {
    return fmt::format("; units are case-sensitive: did you mean '{}'?", upper);
  }
  if (dim == Dimension::kSize && text.back() == 'b') {
    std::string bytes = text;
    bytes.back() = 'B';
    if (quantity::Parse(bytes, dim).ok()) {
      return fmt::format("; 'b' is bits and sizes are in bytes: did you mean '{}'?", bytes);
    }
  }
  return "";
}

}  // namespace

std::optional<std::string> YamlReader::Str(const YAML::Node& map, std::string_view key,
                                           std::string_view what, bool required) const {
  YAML::Node n = Get(map, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (required) Missing(map, key, what);
    return std::nullopt;
  }
  return ScalarOf(n, fmt::format("'{}' in {}", key, what));
}

std::optional<long long> YamlReader::IntOf(const YAML::Node& n, std::string_view what, long long min,
                                           long long max) const {
  auto s = ScalarOf(n, what);
  if (!s) return std::nullopt;
  long long v = 0;
  auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || ptr != s->data() + s->size()) {
    Error(n, fmt::format("{} must be a whole number, not '{}'", what, *s));
    return std::nullopt;
  }
  if (v < min || v > max) {
    Error(n, fmt::format("{} is {}; it must be between {} and {}", what, v, min, max));
    return std::nullopt;
  }
  return v;
}

std::optional<long long> YamlReader::Int(const YAML::Node& map, std::string_view key, std::string_view what,
                                         long long min, long long max, bool required) const {
  YAML::Node n = Get(map, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (required) Missing(map, key, what);
    return std::nullopt;
  }
  return IntOf(n, fmt::format("'{}' in {}", key, what), min, max);
}

std::optional<double> YamlReader::Num(const YAML::Node& map, std::string_view key, std::string_view what,
                                      double min, double max, bool required) const {
  YAML::Node n = Get(map, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (required) Missing(map, key, what);
    return std::nullopt;
  }
  auto s = ScalarOf(n, fmt::format("'{}' in {}", key, what));
  if (!s) return std::nullopt;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
  if (ec != std::errc() || ptr != s->data() + s->size() || !std::isfinite(v)) {
    Error(n, fmt::format("'{}' in {} must be a number, not '{}'", key, what, *s));
    return std::nullopt;
  }
  if (v < min || v > max) {
    Error(n, fmt::format("'{}' in {} is {}; it must be between {} and {}", key, what, *s, min, max));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> YamlReader::Bool(const YAML::Node& map, std::string_view key, std::string_view what) const {
  YAML::Node n = Get(map, key);
  if (!n.IsDefined() || n.IsNull()) return std::nullopt;
  auto s = ScalarOf(n, fmt::format("'{}' in {}", key, what));
  if (!s) return std::nullopt;
  if (*s == "true" || *s == "yes" || *s == "on") return true;
  if (*s == "false" || *s == "no" || *s == "off") return false;
  Error(n, fmt::format("'{}' in {} must be true or false, not '{}'", key, what, *s));
  return std::nullopt;
}

std::optional<double> YamlReader::Qty(const YAML::Node& map, std::string_view key, std::string_view what,
                                      quantity::Dimension dim, bool required) const {
  YAML::Node n = Get(map, key);
  if (!n.IsDefined() || n.IsNull()) {
    if (required) Missing(map, key, what);
    return std::nullopt;
  }
  auto s = ScalarOf(n, fmt::format("'{}' in {}", key, what));
  if (!s) return std::nullopt;
  Result<double> v = quantity::Parse(*s, dim);
  if (!v.ok()) {
    Error(n, fmt::format("'{}' in {}: {}{}", key, what, v.error().message, UnitHint(*s, dim)));
    return std::nullopt;
  }
  return *v;
}

std::optional<std::string> YamlReader::Choice(const YAML::Node& map, std::string_view key,
                                              std::string_view what,
                                              std::initializer_list<std::string_view> choices,
                                              bool required) const {
  YAML::Node n = Get(map, key);
  auto s = Str(map, key, what, required);
  if (!s) return std::nullopt;
  for (std::string_view c : choices) {
    if (c == *s) return s;
  }
  std::string list;
  for (std::string_view c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  std::string msg = fmt::format("'{}' in {} is '{}'; it must be one of: {}", key, what, *s, list);
  if (auto best = names::Closest(*s, choices)) msg += fmt::format(" (did you mean '{}'?)", *best);
  Error(n, msg);
  return std::nullopt;
}

namespace {

struct Opener {
  int line;
  int col;  // 1-based
  char c;
};

// The innermost '[' or '{' still open at (line, col), found by a light scan of the text: enough
// YAML to skip quoted strings and comments and to tell a flow opener from a bracket inside a
// plain value (gpu[1-4]). yaml-cpp itself only says where it gave up looking for the close.
std::optional<Opener> UnclosedFlow(const SourceFile& src, int line, int col) {
  std::vector<Opener> open;
  char prev = '\n';  // last significant character; '\n' at the start of a block line
  for (int l = 1; l <= line; ++l) {
    std::string_view text = src.Line(l);
    if (open.empty()) prev = '\n';
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (l == line && static_cast<int>(i) + 1 >= col) break;
      char c = text[i];
      if (c == ' ' || c == '\t') continue;
      if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) break;
      bool at_value = std::string_view("\n:-?,[{").find(prev) != std::string_view::npos;
      if ((c == '"' || c == '\'') && at_value) {
        std::size_t j = i + 1;
        while (j < text.size() && text[j] != c) j += (c == '"' && text[j] == '\\') ? 2 : 1;
        i = j;
        prev = c;
        continue;
      }
      bool opens = open.empty() ? std::string_view("\n:-?").find(prev) != std::string_view::npos
                                : std::string_view("\n:,[{").find(prev) != std::string_view::npos;
      if ((c == '[' || c == '{') && opens) {
        open.push_back({l, static_cast<int>(i) + 1, c});
      } else if ((c == ']' || c == '}') && !open.empty()) {
        open.pop_back();
      }
      prev = c;
    }
  }
  if (open.empty()) return std::nullopt;
  return open.back();
}

}  // namespace

void ReportSyntaxError(const YAML::Exception& e, const SourceFile& src, Diagnostics* diags) {
  const std::string& path = src.path();
  if (e.mark.is_null() || e.mark.line < 0) {
    diags->Error(SourcePos{path, 0, 0}, fmt::format("YAML syntax error: {}", e.msg));
    return;
  }
  const int line = e.mark.line + 1;
  const int col = e.mark.column + 1;
  if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr) {
    diags->Error(SourcePos{path, line, col}, "the YAML is nested too deeply to be an inventory");
    return;
  }
  // A tab in the indentation is the usual cause of an error at or after it, and yaml-cpp's own
  // words for it ("illegal map value") do not say so.
  for (int l = 1; l <= line; ++l) {
    std::string_view text = src.Line(l);
    std::size_t lead = text.find_first_not_of(" \t");
    if (lead == std::string_view::npos || text[lead] == '#') continue;
    if (std::size_t tab = text.substr(0, lead).find('\t'); tab != std::string_view::npos) {
      diags->Error(SourcePos{path, l, static_cast<int>(tab) + 1},
                   "tab character in indentation; YAML indents with spaces only");
      return;
    }
  }
  std::string_view text = src.Line(line);
  const std::size_t at = static_cast<std::size_t>(e.mark.column);
  const char here = at < text.size() ? text[at] : '\0';
  if (e.msg == YAML::ErrorMsg::END_OF_MAP_FLOW || e.msg == YAML::ErrorMsg::END_OF_SEQ_FLOW) {
    // "{name: leaf[1-4]}": inside flow style '[' opens a list even in the middle of a word.
    if ((here == '[' || here == '{') && at > 0 && std::string_view(" ,:[{").find(text[at - 1]) == std::string_view::npos) {
      std::size_t begin = at;
      while (begin > 0 && std::string_view(" ,[{").find(text[begin - 1]) == std::string_view::npos) --begin;
      std::size_t end = text.find(here == '[' ? ']' : '}', at);
      end = end == std::string_view::npos ? at + 1 : end + 1;
      std::string_view word = text.substr(begin, end - begin);
      diags->Error(SourcePos{path, line, static_cast<int>(begin) + 1},
                   fmt::format("in flow style ({{...}} or [...]) '{}' starts a nested {}, so {} is not read "
                               "as one value; quote it: \"{}\"",
                               here, here == '[' ? "list" : "mapping", word, word),
                   static_cast<int>(word.size()));
      return;
    }
    if (auto opener = UnclosedFlow(src, line, col)) {
      bool list = opener->c == '[';
      diags->Error(SourcePos{path, opener->line, opener->col},
                   fmt::format("this '{}' is never closed: a flow {} needs a matching '{}'", opener->c,
                               list ? "list" : "mapping", list ? ']' : '}'));
      return;
    }
  }
  if (e.msg == YAML::ErrorMsg::FLOW_END && (here == ']' || here == '}')) {
    if (auto opener = UnclosedFlow(src, line, col); opener && opener->c != (here == ']' ? '[' : '{')) {
      diags->Error(SourcePos{path, line, col},
                   fmt::format("this '{}' does not close the '{}' opened at line {}, column {}; that one needs a '{}'", here,
                               opener->c, opener->line, opener->col, opener->c == '[' ? ']' : '}'));
      return;
    }
  }
  std::string msg;
  if (e.msg == YAML::ErrorMsg::MAP_VALUE && line > 1) {
    // "name: t" then a deeper "site: ..." reads as the value "t site", then a stray ':'.
    int above = line - 1;
    while (above > 1 && src.Line(above).find_first_not_of(' ') == std::string_view::npos) --above;
    std::string_view prev = src.Line(above);
    std::size_t indent = text.find_first_not_of(' ');
    std::size_t prev_indent = prev.find_first_not_of(' ');
    std::size_t colon = prev.find(": ");
    if (indent != std::string_view::npos && prev_indent != std::string_view::npos && indent > prev_indent &&
        colon != std::string_view::npos && prev.find_first_not_of(' ', colon + 1) != std::string_view::npos &&
        prev[prev.find_first_not_of(' ', colon + 1)] != '#') {
      diags->Error(SourcePos{path, line, static_cast<int>(indent) + 1},
                   fmt::format("bad indentation: this line is indented deeper than line {}, which already has a value, so "
                               "YAML reads it as more of that value; indent it like the key above",
                               above));
      return;
    }
  }
  if (e.msg == YAML::ErrorMsg::END_OF_MAP || e.msg == YAML::ErrorMsg::END_OF_SEQ) {
    msg = fmt::format("bad indentation: this line does not line up with the {} above it (YAML: {})",
                      e.msg == YAML::ErrorMsg::END_OF_MAP ? "keys" : "list items", e.msg);
  } else if (e.msg == YAML::ErrorMsg::MAP_VALUE) {
    msg = "unexpected ':' (YAML: illegal map value); a value that contains ': ' must be quoted, "
          "and a nested mapping goes on its own, further indented lines";
  } else if (e.msg == YAML::ErrorMsg::UNKNOWN_TOKEN && (here == '`' || here == '@')) {
    msg = fmt::format("'{}' cannot start a YAML value; quote the value (and note that inventory "
                      "names may not contain it)", here);
  } else {
    msg = fmt::format("YAML syntax error: {}", e.msg);
  }
  diags->Error(SourcePos{path, line, col}, std::move(msg));
}

}  // namespace gpuforge::inventory
