#include "gpuforge/base/hostlist.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

namespace gpuforge::hostlist {
namespace {

// 18 digits always fit in 64 bits, so a bound never overflows and hi - lo + 1 never wraps.
constexpr std::size_t kMaxDigits = 18;

struct Range {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  int width = 0;
};

// One name pattern is literal text and bracket groups, in order; a piece with no ranges is literal
// text.
struct Piece {
  std::string_view text;
  std::vector<Range> ranges;
};

struct Pattern {
  std::size_t column = 0;
  std::vector<Piece> pieces;
};

Error ErrorAt(std::string_view expr, std::size_t column, std::string_view what) {
  // A hostile expression can be megabytes long: quote at most 120 characters of it.
  const std::string shown = expr.size() <= 120 ? std::string(expr) : fmt::format("{}...", expr.substr(0, 117));
  return Error{fmt::format("hostlist \"{}\": {} at column {}", shown, what, column)};
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Digits only: strtoull would accept "+1", " 1" and "-1", which scontrol then prints oddly.
std::optional<Error> ParseBound(std::string_view expr, std::string_view bound, std::size_t column,
                                std::uint64_t* out) {
  if (!std::all_of(bound.begin(), bound.end(), IsDigit)) {
    return ErrorAt(expr, column, fmt::format("bound \"{}\" is not a number", bound));
  }
  if (bound.size() > kMaxDigits) {
    return ErrorAt(expr, column,
                   fmt::format("bound \"{}\" has more than {} digits", bound, kMaxDigits));
  }
  std::uint64_t value = 0;
  for (char c : bound) value = value * 10 + static_cast<std::uint64_t>(c - '0');
  *out = value;
  return std::nullopt;
}

// `item` is one range of a group, "7" or "1-4", found at `column` of `expr`.
std::optional<Error> ParseRange(std::string_view expr, std::string_view item, std::size_t column,
                                Range* range) {
  std::size_t dash = item.find('-');
  std::string_view lo = item.substr(0, dash);
  if (lo.empty()) {
    return ErrorAt(expr, column, fmt::format("range \"{}\" has no lower bound", item));
  }
  if (auto err = ParseBound(expr, lo, column, &range->lo)) return err;
  range->hi = range->lo;
  // The lower bound as written sets the width, as in Slurm: "[001-10]" pads to 3, "[1-010]" does
  // not pad at all.
  range->width = static_cast<int>(lo.size());
  if (dash == std::string_view::npos) return std::nullopt;
  std::string_view hi = item.substr(dash + 1);
  if (hi.empty()) {
    return ErrorAt(expr, column, fmt::format("range \"{}\" has no upper bound", item));
  }
  if (auto err = ParseBound(expr, hi, column + dash + 1, &range->hi)) return err;
  if (range->hi < range->lo) {
    return ErrorAt(expr, column, fmt::format("reversed range \"{}\"", item));
  }
  return std::nullopt;
}

// `group` is the text between the brackets of one group; `column` is where that text starts.
std::optional<Error> ParseGroup(std::string_view expr, std::string_view group, std::size_t column,
                                std::vector<Range>* ranges) {
  if (group.empty()) return ErrorAt(expr, column - 1, "empty brackets \"[]\"");
  std::size_t start = 0;
  while (true) {
    std::size_t comma = group.find(',', start);
    std::size_t end = comma == std::string_view::npos ? group.size() : comma;
    if (end == start) return ErrorAt(expr, column + start, "empty range");
    Range range;
    if (auto err = ParseRange(expr, group.substr(start, end - start), column + start, &range)) {
      return err;
    }
    ranges->push_back(range);
    if (comma == std::string_view::npos) return std::nullopt;
    start = comma + 1;
  }
}

std::optional<Error> ParsePattern(std::string_view expr, std::size_t begin, std::size_t end,
                                  Pattern* pattern) {
  pattern->column = begin;
  std::size_t i = begin;
  while (i < end) {
    if (expr[i] != '[') {
      std::size_t open = expr.find('[', i);
      if (open == std::string_view::npos || open > end) open = end;
      pattern->pieces.push_back(Piece{expr.substr(i, open - i), {}});
      i = open;
      continue;
    }
    // The structural scan already checked that this bracket closes before `end`.
    std::size_t close = expr.find(']', i);
    Piece piece;
    if (auto err = ParseGroup(expr, expr.substr(i + 1, close - i - 1), i + 1, &piece.ranges)) {
      return err;
    }
    pattern->pieces.push_back(std::move(piece));
    i = close + 1;
  }
  return std::nullopt;
}

// Counts saturate at `cap` (one past the limit) so that no product of huge ranges can wrap around
// into a small, accepted number.
std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b, std::uint64_t cap) {
  return (a >= cap || b >= cap - a) ? cap : a + b;
}

std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b, std::uint64_t cap) {
  if (a == 0 || b == 0) return 0;
  return a > cap / b ? cap : std::min(a * b, cap);
}

// The longest name a pattern produces: its text plus each group's widest number.
std::uint64_t LongestName(const Pattern& pattern) {
  std::uint64_t n = 0;
  for (const Piece& piece : pattern.pieces) {
    if (piece.ranges.empty()) {
      n += piece.text.size();
      continue;
    }
    std::uint64_t widest = 0;
    for (const Range& r : piece.ranges) {
      widest = std::max<std::uint64_t>(widest, std::max<std::uint64_t>(r.width, fmt::format_int(r.hi).size()));
    }
    n += widest;
  }
  return n;
}

std::uint64_t CountNames(const Pattern& pattern, std::uint64_t cap) {
  std::uint64_t count = 1;
  for (const Piece& piece : pattern.pieces) {
    if (piece.ranges.empty()) continue;
    std::uint64_t size = 0;
    for (const Range& r : piece.ranges) size = SaturatingAdd(size, r.hi - r.lo + 1, cap);
    count = SaturatingMul(count, size, cap);
  }
  return count;
}

// Zero-padded to `width`; wider numbers are written in full, as Slurm's "%0*lu" does.
std::string FormatNumber(std::uint64_t value, int width) {
  fmt::format_int digits(value);
  std::string out;
  if (static_cast<int>(digits.size()) < width) out.assign(width - digits.size(), '0');
  out.append(digits.data(), digits.size());
  return out;
}

void Materialise(const Pattern& pattern, std::vector<std::string>* out) {
  // Each group's numbers are formatted once; names are then put together odometer-style, rightmost
  // group turning fastest, one allocation each.
  std::vector<std::vector<std::string>> values;
  std::size_t longest = 0;
  for (const Piece& piece : pattern.pieces) {
    if (piece.ranges.empty()) {
      longest += piece.text.size();
      continue;
    }
    std::vector<std::string>& group = values.emplace_back();
    std::size_t widest = 0;
    for (const Range& r : piece.ranges) {
      for (std::uint64_t v = r.lo;; ++v) {
        group.push_back(FormatNumber(v, r.width));
        widest = std::max(widest, group.back().size());
        if (v == r.hi) break;
      }
    }
    longest += widest;
  }
  std::vector<std::size_t> turn(values.size(), 0);
  for (;;) {
    std::string name;
    name.reserve(longest);
    std::size_t g = 0;
    for (const Piece& piece : pattern.pieces) {
      if (piece.ranges.empty()) {
        name.append(piece.text);
      } else {
        name.append(values[g][turn[g]]);
        ++g;
      }
    }
    out->push_back(std::move(name));
    std::size_t k = values.size();
    for (;;) {
      if (k == 0) return;
      --k;
      if (++turn[k] < values[k].size()) break;
      turn[k] = 0;
    }
  }
}

// A name split around its last number, for Fold.
struct Split {
  std::string_view prefix;
  std::string_view suffix;
  std::uint64_t value = 0;
  int digits = 0;  // as written
  // Written with a leading zero, so it needs exactly `digits`.
  bool padded = false;
};

std::optional<Split> SplitLastNumber(std::string_view name) {
  std::size_t end = name.size();
  while (end > 0 && !IsDigit(name[end - 1])) --end;
  if (end == 0) return std::nullopt;
  std::size_t begin = end;
  while (begin > 0 && IsDigit(name[begin - 1])) --begin;
  std::string_view digits = name.substr(begin, end - begin);
  // Expand refuses longer bounds, so such a number could not be put in brackets.
  if (digits.size() > kMaxDigits) return std::nullopt;
  Split split;
  split.prefix = name.substr(0, begin);
  split.suffix = name.substr(end);
  for (char c : digits) split.value = split.value * 10 + static_cast<std::uint64_t>(c - '0');
  split.digits = static_cast<int>(digits.size());
  split.padded = digits.size() > 1 && digits[0] == '0';
  return split;
}

// One bracket group of the folded output. Width 0 means unpadded.
struct Group {
  std::string_view prefix;
  std::string_view suffix;
  int width = 0;
  std::vector<std::uint64_t> values;  // sorted, unique
};

std::string FormatGroup(const Group& group) {
  auto number = [&](std::uint64_t v) { return FormatNumber(v, group.width); };
  if (group.values.size() == 1) {
    return fmt::format("{}{}{}", group.prefix, number(group.values[0]), group.suffix);
  }
  std::string out(group.prefix);
  out += '[';
  for (std::size_t i = 0; i < group.values.size();) {
    std::size_t j = i;
    while (j + 1 < group.values.size() && group.values[j + 1] == group.values[j] + 1) ++j;
    if (i > 0) out += ',';
    out += number(group.values[i]);
    if (j > i) {
      out += '-';
      out += number(group.values[j]);
    }
    i = j + 1;
  }
  out += ']';
  out += group.suffix;
  return out;
}

}  // namespace

Result<std::vector<std::string>> Expand(std::string_view expr, std::size_t limit) {
  if (expr.empty()) return ErrorAt(expr, 0, "empty expression");

  // Structure first, over the whole expression, so that a missing ']' is reported as such and not
  // as whatever its contents look like.
  std::vector<std::pair<std::size_t, std::size_t>> elements;
  std::size_t element_begin = 0;
  std::optional<std::size_t> open;
  for (std::size_t i = 0; i < expr.size(); ++i) {
    char c = expr[i];
    if (IsSpace(c)) return ErrorAt(expr, i, "unexpected whitespace");
    if (c == '[') {
      if (open) return ErrorAt(expr, i, "nested '['");
      open = i;
    } else if (c == ']') {
      if (!open) return ErrorAt(expr, i, "unmatched ']'");
      open.reset();
    } else if (c == ',' && !open) {
      elements.emplace_back(element_begin, i);
      element_begin = i + 1;
    }
  }
  if (open) return ErrorAt(expr, *open, "unclosed '['");
  elements.emplace_back(element_begin, expr.size());

  std::vector<Pattern> patterns(elements.size());
  for (std::size_t i = 0; i < elements.size(); ++i) {
    auto [begin, end] = elements[i];
    if (begin == end) return ErrorAt(expr, begin, "empty name");
    if (auto err = ParsePattern(expr, begin, end, &patterns[i])) return *err;
  }

  // Count before building anything: the limit exists to keep a typo from allocating.
  const std::uint64_t limit64 = limit;
  const std::uint64_t cap =
      limit64 == std::numeric_limits<std::uint64_t>::max() ? limit64 : limit64 + 1;
  std::uint64_t total = 0;
  std::uint64_t bytes = 0;
  constexpr std::uint64_t kByteCap = std::uint64_t{kMaxExpansionBytes} + 1;
  for (const Pattern& pattern : patterns) {
    const std::uint64_t longest = LongestName(pattern);
    if (longest > kMaxNameLength) {
      return ErrorAt(expr, pattern.column,
                     fmt::format("names would be {} characters long, over the limit of {}", longest, kMaxNameLength));
    }
    const std::uint64_t count = CountNames(pattern, cap);
    total = SaturatingAdd(total, count, cap);
    if (total > limit64) {
      return ErrorAt(expr, pattern.column,
                     fmt::format("expansion exceeds the limit of {} names", limit));
    }
    bytes = SaturatingAdd(bytes, SaturatingMul(count, longest + 1, kByteCap), kByteCap);
    if (bytes > kMaxExpansionBytes) {
      return ErrorAt(expr, pattern.column,
                     fmt::format("expansion exceeds the limit of {} MiB of names", kMaxExpansionBytes >> 20));
    }
  }

  std::vector<std::string> names;
  names.reserve(static_cast<std::size_t>(total));
  for (const Pattern& pattern : patterns) Materialise(pattern, &names);
  return names;
}

std::string Fold(const std::vector<std::string>& names) {
  std::vector<std::string_view> literals;
  std::vector<Split> splits;
  splits.reserve(names.size());
  for (const std::string& name : names) {
    if (name.empty()) continue;
    if (auto split = SplitLastNumber(name)) {
      splits.push_back(*split);
    } else {
      literals.push_back(name);
    }
  }

  // An unpadded number may sit in a padded group of its own digit count ("gpu100" with "gpu099"),
  // which keeps gpu[001-128] one group. Which padded widths exist is decided first, so the answer
  // does not depend on input order.
  using Key = std::tuple<std::string_view, std::string_view, int>;
  std::vector<Key> padded;
  for (const Split& s : splits) {
    if (s.padded) padded.emplace_back(s.prefix, s.suffix, s.digits);
  }
  std::sort(padded.begin(), padded.end());
  padded.erase(std::unique(padded.begin(), padded.end()), padded.end());

  struct Entry {
    Key key;
    std::uint64_t value;
    bool operator<(const Entry& o) const { return std::tie(key, value) < std::tie(o.key, o.value); }
    bool operator==(const Entry& o) const { return key == o.key && value == o.value; }
  };
  std::vector<Entry> entries;
  entries.reserve(splits.size());
  for (const Split& s : splits) {
    Key key{s.prefix, s.suffix, s.digits};
    int width = 0;
    if (s.padded || std::binary_search(padded.begin(), padded.end(), key)) width = s.digits;
    entries.push_back(Entry{Key{s.prefix, s.suffix, width}, s.value});
  }
  std::sort(entries.begin(), entries.end());
  entries.erase(std::unique(entries.begin(), entries.end()), entries.end());

  std::vector<Group> groups;
  for (const Entry& e : entries) {
    const auto& [prefix, suffix, width] = e.key;
    if (groups.empty() || groups.back().prefix != prefix || groups.back().suffix != suffix ||
        groups.back().width != width) {
      groups.push_back(Group{prefix, suffix, width, {}});
    }
    groups.back().values.push_back(e.value);
  }

  // Output order: by prefix, then by number; a bare name sorts before the numbered names that share
  // its text as prefix ("a,a[1-2]").
  struct Item {
    std::string_view prefix;
    bool numbered;
    std::uint64_t first;
    std::string_view suffix;
    int width;
    std::string text;
  };
  std::vector<Item> items;
  items.reserve(groups.size() + literals.size());
  std::sort(literals.begin(), literals.end());
  literals.erase(std::unique(literals.begin(), literals.end()), literals.end());
  for (std::string_view literal : literals) {
    items.push_back(Item{literal, false, 0, {}, 0, std::string(literal)});
  }
  for (const Group& g : groups) {
    items.push_back(Item{g.prefix, true, g.values.front(), g.suffix, g.width, FormatGroup(g)});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return std::tie(a.prefix, a.numbered, a.first, a.suffix, a.width) <
           std::tie(b.prefix, b.numbered, b.first, b.suffix, b.width);
  });

  std::string out;
  for (const Item& item : items) {
    if (!out.empty()) out += ',';
    out += item.text;
  }
  return out;
}

}  // namespace gpuforge::hostlist
