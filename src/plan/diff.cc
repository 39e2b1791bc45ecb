#include "gpuforge/plan/diff.h"

#include <fmt/format.h>

#include "gpuforge/base/text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <unordered_map>
#include <vector>

namespace gpuforge::plan {
namespace {

constexpr std::size_t kNpos = std::string_view::npos;

// ---- the edit ----

// A line as the diff matches it and as it prints it: the same text, or for MaskedUnifiedDiff the
// raw text and its masked form. Both keep their '\n': a last line without one differs from the
// same text with one, as in diff.
struct Line {
  std::string_view match, shown;
};

// Just past the '\n' ending the line that holds s[i], or the end of s.
std::size_t NextLine(std::string_view s, std::size_t i) {
  const std::size_t nl = s.find('\n', i);
  return nl == kNpos ? s.size() : nl + 1;
}

std::vector<Line> SplitLines(std::string_view s) {
  std::vector<Line> lines;
  for (std::size_t pos = 0, end; pos < s.size(); pos = end) {
    end = NextLine(s, pos);
    lines.push_back({s.substr(pos, end - pos), s.substr(pos, end - pos)});
  }
  return lines;
}

// Equal lines get equal numbers, so the search compares ints, not strings.
std::vector<int> Intern(std::span<const Line> lines,
                        std::unordered_map<std::string_view, int>& ids) {
  std::vector<int> out;
  out.reserve(lines.size());
  for (const Line& l : lines)
    out.push_back(ids.try_emplace(l.match, static_cast<int>(ids.size())).first->second);
  return out;
}

// Myers' O(ND) search in linear space (the bisection of diff-match-patch), marking the lines of
// each side that are not in the longest common subsequence.
class EditSearch {
 public:
  EditSearch(std::span<const int> a, std::span<const int> b)
      : a_(a), b_(b), deleted_(a.size(), 0), inserted_(b.size(), 0) {}

  void Run(int max_edits) {
    // A line one side holds more often than the other takes an edit each time: when those
    // alone pass the bound (a file rewritten), the search would too, after all its work.
    if (UnpairedLines() > max_edits) max_edits = -1;
    Compare(0, static_cast<int>(a_.size()), 0, static_cast<int>(b_.size()), max_edits);
  }
  const std::vector<char>& deleted() const { return deleted_; }
  const std::vector<char>& inserted() const { return inserted_; }

 private:
  struct Point {
    int x = 0, y = 0;
  };

  std::int64_t UnpairedLines() const {
    int ids = 0;
    for (int id : a_) ids = std::max(ids, id + 1);
    for (int id : b_) ids = std::max(ids, id + 1);
    std::vector<int> balance(ids, 0);
    for (int id : a_) ++balance[id];
    for (int id : b_) --balance[id];
    std::int64_t n = 0;
    for (int x : balance) n += std::abs(x);
    return n;
  }

  void Compare(int alo, int ahi, int blo, int bhi, int max_edits) {
    while (alo < ahi && blo < bhi && a_[alo] == b_[blo]) ++alo, ++blo;
    while (alo < ahi && blo < bhi && a_[ahi - 1] == b_[bhi - 1]) --ahi, --bhi;
    Point split;
    if (alo == ahi || blo == bhi || max_edits < 0 ||
        !Bisect(alo, ahi, blo, bhi, max_edits, &split)) {
      // Nothing in common, or too costly to find what is: replace the whole range.
      std::fill(deleted_.begin() + alo, deleted_.begin() + ahi, 1);
      std::fill(inserted_.begin() + blo, inserted_.begin() + bhi, 1);
      return;
    }
    // Each half needs fewer edits than the whole, within the bound the whole kept.
    Compare(alo, alo + split.x, blo, blo + split.y, INT_MAX);
    Compare(alo + split.x, ahi, blo + split.y, bhi, INT_MAX);
  }

  // Finds where a shortest edit path crosses its middle, relative to (alo, blo). False when no
  // line is common, or when the path is longer than max_edits: by step d, both searches having
  // failed so far, the path is known to take at least 2d - 1 edits.
  bool Bisect(int alo, int ahi, int blo, int bhi, int max_edits, Point* split) const {
    const int n = ahi - alo, m = bhi - blo, delta = n - m;
    const int max_d = std::min((n + m + 1) / 2, max_edits / 2 + 2);
    const int offset = max_d + 1;
    std::vector<int> fwd(2 * offset + 2, -1), bwd(2 * offset + 2, -1);
    fwd[offset + 1] = 0;
    bwd[offset + 1] = 0;
    const bool odd = delta % 2 != 0;
    auto at = [&](int x, int y) { return a_[alo + x] == b_[blo + y]; };
    auto at_back = [&](int x, int y) { return a_[ahi - 1 - x] == b_[bhi - 1 - y]; };
    // Diagonals that left the grid are skipped from then on.
    int f_start = 0, f_end = 0, b_start = 0, b_end = 0;
    for (int d = 0; d < max_d; ++d) {
      if (2 * d - 1 > max_edits) return false;
      for (int k = -d + f_start; k <= d - f_end; k += 2) {
        const int x = Advance(fwd, offset, k, d, n, m, at);
        const int y = x - k;
        if (x > n) {
          f_end += 2;
        } else if (y > m) {
          f_start += 2;
        } else if (odd) {
          const int kb = offset + delta - k;
          if (kb >= 0 && kb < static_cast<int>(bwd.size()) && bwd[kb] != -1 && x >= n - bwd[kb]) {
            *split = {x, y};
            return true;
          }
        }
      }
      for (int k = -d + b_start; k <= d - b_end; k += 2) {
        const int x = Advance(bwd, offset, k, d, n, m, at_back);
        const int y = x - k;
        if (x > n) {
          b_end += 2;
        } else if (y > m) {
          b_start += 2;
        } else if (!odd) {
          const int kf = offset + delta - k;
          if (kf >= 0 && kf < static_cast<int>(fwd.size()) && fwd[kf] != -1 && fwd[kf] >= n - x) {
            *split = {fwd[kf], fwd[kf] - (kf - offset)};
            return true;
          }
        }
      }
    }
    return false;
  }

  // One step of one search on diagonal k: the furthest x reached, stored in v.
  template <typename Eq>
  static int Advance(std::vector<int>& v, int offset, int k, int d, int n, int m, Eq eq) {
    const int i = offset + k;
    int x = (k == -d || (k != d && v[i - 1] < v[i + 1])) ? v[i + 1] : v[i - 1] + 1;
    int y = x - k;
    while (x < n && y < m && eq(x, y)) ++x, ++y;
    v[i] = x;
    return x;
  }

  std::span<const int> a_, b_;
  std::vector<char> deleted_, inserted_;
};

// A run of deleted and inserted lines: first line (0-based) and count on each side.
struct Change {
  int a = 0, deleted = 0, b = 0, inserted = 0;
};

std::vector<Change> Changes(const std::vector<char>& deleted, const std::vector<char>& inserted) {
  std::vector<Change> out;
  const int n = static_cast<int>(deleted.size()), m = static_cast<int>(inserted.size());
  int i = 0, j = 0;
  while (i < n || j < m) {
    if ((i < n && deleted[i]) || (j < m && inserted[j])) {
      Change c{i, 0, j, 0};
      while (i < n && deleted[i]) ++i;
      while (j < m && inserted[j]) ++j;
      c.deleted = i - c.a;
      c.inserted = j - c.b;
      out.push_back(c);
    } else {
      ++i, ++j;  // a common line
    }
  }
  return out;
}

// diff's ranges: "l" for one line, "l,s" otherwise, and an empty range names the line before.
std::string Range(int first, int count) {
  if (count == 0) return fmt::format("{},0", first);
  if (count == 1) return fmt::format("{}", first + 1);
  return fmt::format("{},{}", first + 1, count);
}

void AppendLine(std::string& out, char prefix, std::string_view line) {
  out += prefix;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

// The lines before the first change and after the last are common to both sides and, unless
// they reach the start or end of the file, more than `context` long: one lead, one trail.
void AppendHunk(std::string& out, std::span<const Change> hunk, std::span<const Line> a,
                std::span<const Line> b, int context) {
  const Change& first = hunk.front();
  const Change& last = hunk.back();
  const int lead = std::min(context, first.a);
  const int trail = std::min(context, static_cast<int>(a.size()) - (last.a + last.deleted));
  const int a_lo = first.a - lead, b_lo = first.b - lead;
  const int a_hi = last.a + last.deleted + trail, b_hi = last.b + last.inserted + trail;
  out += fmt::format("@@ -{} +{} @@\n", Range(a_lo, a_hi - a_lo), Range(b_lo, b_hi - b_lo));
  int i = a_lo;
  for (const Change& c : hunk) {
    for (; i < c.a; ++i) AppendLine(out, ' ', a[i].shown);
    for (int k = 0; k < c.deleted; ++k) AppendLine(out, '-', a[c.a + k].shown);
    for (int k = 0; k < c.inserted; ++k) AppendLine(out, '+', b[c.b + k].shown);
    i = c.a + c.deleted;
  }
  for (; i < a_hi; ++i) AppendLine(out, ' ', a[i].shown);
}

// ---- secrets ----

constexpr std::string_view kMasked = "(masked)";
constexpr std::string_view kMaskedKey = "(masked private key)";

constexpr std::array<std::string_view, 12> kSecretWords = {
    "password",   "passwd", "secret",  "token",    "credential", "private_key",
    "privatekey", "apikey", "api_key", "auth_key", "jwt",        "session_key"};

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

using gpuforge::text::Trim;

// Lowercase, '-' as '_', quotes and blanks around it dropped.
std::string NormalKey(std::string_view key) {
  std::string k(Trim(key, " \t\"'"));
  for (char& c : k)
    c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return k;
}

bool NamesSecret(std::string_view raw) {
  std::string k = NormalKey(raw);
  // A path to a secret is no secret (tlsPrivateKeyFile, password_file); a tokenizer setting
  // (TOKENIZERS_PARALLELISM) is no token.
  if (k.ends_with("file") || k.ends_with("path") || k.ends_with("dir")) return false;
  for (std::size_t p; (p = k.find("tokeniz")) != kNpos;) k.erase(p, 7);
  for (std::string_view w : kSecretWords)
    if (k.find(w) != kNpos) return true;
  // Slurm's passwords, each key a test in diff_test.cc (#28 item 15): slurm.conf(5)
  // AccountingStoragePass and JobCompPass, slurmdbd.conf(5) StoragePass; MariaDB's my.cnf
  // `password` (above) and its short `pass`.
  if (k.ends_with("storagepass") || k.ends_with("comppass")) return true;
  if (k == "pass" || k.ends_with("_pass") || k.ends_with(".pass")) return true;
  return k == "key" || k.ends_with("_key") || k.ends_with(".key");
}

std::size_t SkipSpace(std::string_view s, std::size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// Where the value of a secret key starts in `line`, kNpos if it has none. The first word is
// tried before the text up to '=' or ':', so `password hunter2:x` masks all of hunter2:x.
std::size_t SecretValueStart(std::string_view line) {
  const std::size_t word = SkipSpace(line, 0);
  const std::size_t word_end = std::min(line.find_first_of(" \t=:", word), line.size());
  if (NamesSecret(line.substr(word, word_end - word))) {
    std::size_t v = SkipSpace(line, word_end);
    if (v < line.size() && (line[v] == '=' || line[v] == ':')) v = SkipSpace(line, v + 1);
    if (v > word_end && v < line.size()) return v;
  }
  const std::size_t sep = line.find_first_of("=:");
  if (sep == kNpos || !NamesSecret(line.substr(0, sep))) return kNpos;
  const std::size_t v = SkipSpace(line, sep + 1);
  return v < line.size() ? v : kNpos;
}

std::size_t FindNoCase(std::string_view s, std::string_view needle) {
  auto it = std::search(s.begin(), s.end(), needle.begin(), needle.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
  return it == s.end() ? kNpos : static_cast<std::size_t>(it - s.begin());
}

// The value after an HTTP credential marker, kNpos if there is none or it is blank.
std::size_t HeaderValueStart(std::string_view line) {
  std::size_t best = kNpos;
  for (std::string_view marker :
       {std::string_view("Authorization:"), std::string_view("Bearer ")}) {
    const std::size_t p = FindNoCase(line, marker);
    if (p == kNpos) continue;
    const std::size_t v = SkipSpace(line, p + marker.size());
    if (v < line.size()) best = std::min(best, v);
  }
  return best;
}

// One line, its ending (\n, \r\n or none) kept.
std::string MaskLine(std::string_view line) {
  std::string_view body = line;
  if (body.ends_with('\n')) body.remove_suffix(1);
  if (body.ends_with('\r')) body.remove_suffix(1);
  const std::size_t v = std::min(SecretValueStart(body), HeaderValueStart(body));
  if (v == kNpos) return std::string(line);
  return fmt::format("{}{}{}", body.substr(0, v), kMasked, line.substr(body.size()));
}

// "-----BEGIN <anything> PRIVATE KEY-----", the label on one line.
std::size_t FindPemBegin(std::string_view s) {
  constexpr std::string_view kBegin = "-----BEGIN ";
  for (std::size_t p = s.find(kBegin); p != kNpos; p = s.find(kBegin, p + 1)) {
    const std::size_t label = p + kBegin.size();
    const std::size_t close = s.find("-----", label);
    if (close != kNpos && close < s.find('\n', p) &&
        s.substr(label, close - label).ends_with("PRIVATE KEY"))
      return p;
  }
  return kNpos;
}

// Just past the END line's closing dashes; a block never closed runs to the end of the text,
// whose line ending stays.
std::size_t FindPemEnd(std::string_view s, std::size_t begin) {
  const std::size_t end = s.find("-----END ", begin);
  const std::size_t close = end == kNpos ? kNpos : s.find("-----", end + 9);
  if (close != kNpos) return close + 5;
  std::size_t stop = s.size();
  if (s.ends_with('\n')) --stop;
  if (s.substr(0, stop).ends_with('\r')) --stop;
  return std::max(stop, begin);
}

std::string MaskPemBlocks(std::string_view s) {
  std::string out;
  for (std::size_t begin; (begin = FindPemBegin(s)) != kNpos;) {
    out += s.substr(0, begin);
    out += kMaskedKey;
    s.remove_prefix(FindPemEnd(s, begin));
  }
  out += s;
  return out;
}

// The end of the text, starting at line `pos`, that masks to one line: the line itself or, when
// a private key begins on it, every line to the one where the key ends.
std::size_t UnitEnd(std::string_view s, std::size_t pos) {
  std::size_t from = pos, end = NextLine(s, pos);
  for (std::size_t b; (b = FindPemBegin(s.substr(from, end - from))) != kNpos;) {
    from = FindPemEnd(s, from + b);
    end = NextLine(s, from);
  }
  return end;
}

struct MaskedLine {
  std::string_view raw;  // one line, or a private key block with the lines it starts and ends in
  std::string shown;
};

std::vector<MaskedLine> MaskLines(std::string_view s) {
  std::vector<MaskedLine> out;
  for (std::size_t pos = 0, end; pos < s.size(); pos = end) {
    end = UnitEnd(s, pos);
    const std::string_view raw = s.substr(pos, end - pos);
    out.push_back({raw, MaskLine(MaskPemBlocks(raw))});
  }
  return out;
}

std::string DiffLines(std::string_view from_label, std::string_view to_label,
                      std::span<const Line> a, std::span<const Line> b, int context) {
  context = std::max(context, 0);
  std::unordered_map<std::string_view, int> ids;
  const std::vector<int> a_ids = Intern(a, ids), b_ids = Intern(b, ids);
  EditSearch search(a_ids, b_ids);
  search.Run(kMaxDiffEdits);
  const std::vector<Change> changes = Changes(search.deleted(), search.inserted());

  std::string out = fmt::format("--- {}\n+++ {}\n", from_label, to_label);
  for (std::size_t first = 0; first < changes.size();) {
    std::size_t last = first + 1;
    // diff joins two changes when the common lines between them are at most 2 x context.
    while (last < changes.size() &&
           changes[last].a - (changes[last - 1].a + changes[last - 1].deleted) <= 2 * context)
      ++last;
    AppendHunk(out, std::span(changes).subspan(first, last - first), a, b, context);
    first = last;
  }
  return out;
}

// Stricter than diff, which looks at its first buffer only: a NUL anywhere, so none is printed.
bool HasNul(std::string_view s) { return s.find('\0') != kNpos; }

}  // namespace

bool LooksBinary(std::string_view content) { return content.substr(0, 8000).find('\0') != kNpos; }

std::string UnifiedDiff(std::string_view from_label, std::string_view to_label, std::string_view a,
                        std::string_view b, int context) {
  if (a == b) return "";
  if (HasNul(a) || HasNul(b))
    return fmt::format("Binary files {} and {} differ\n", from_label, to_label);
  return DiffLines(from_label, to_label, SplitLines(a), SplitLines(b), context);
}

std::string MaskedUnifiedDiff(std::string_view from_label, std::string_view to_label,
                              std::string_view a, std::string_view b, int context) {
  if (a == b) return "";
  if (HasNul(a) || HasNul(b))
    return fmt::format("Binary files {} and {} differ\n", from_label, to_label);
  const std::vector<MaskedLine> a_masked = MaskLines(a), b_masked = MaskLines(b);
  std::vector<Line> a_lines, b_lines;
  for (const MaskedLine& l : a_masked) a_lines.push_back({l.raw, l.shown});
  for (const MaskedLine& l : b_masked) b_lines.push_back({l.raw, l.shown});
  return DiffLines(from_label, to_label, a_lines, b_lines, context);
}

std::string MaskSecrets(std::string_view content) {
  std::string out;
  out.reserve(content.size());
  for (const MaskedLine& l : MaskLines(content)) out += l.shown;
  return out;
}

}  // namespace gpuforge::plan
