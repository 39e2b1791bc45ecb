#include "gpuforge/base/diag.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuforge {

std::string SourcePos::ToString() const {
  if (line <= 0) return file;
  if (col <= 0) return fmt::format("{}:{}", file, line);
  return fmt::format("{}:{}:{}", file, line, col);
}

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string_view SourceFile::Line(int line) const {
  if (line <= 0 || static_cast<std::size_t>(line) > line_starts_.size()) return {};
  std::size_t begin = line_starts_[line - 1];
  std::size_t end = static_cast<std::size_t>(line) < line_starts_.size()
                        ? line_starts_[line] - 1
                        : text_.size();
  if (begin > text_.size()) return {};
  std::string_view v(text_.data() + begin, end - begin);
  if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
  return v;
}

void Diagnostics::Error(SourcePos pos, std::string message, int width) {
  items_.push_back({DiagSeverity::kError, std::move(pos), std::move(message), width});
}

void Diagnostics::Warning(SourcePos pos, std::string message, int width) {
  items_.push_back({DiagSeverity::kWarning, std::move(pos), std::move(message), width});
}

bool Diagnostics::has_errors() const { return error_count() > 0; }

std::size_t Diagnostics::error_count() const {
  return static_cast<std::size_t>(std::count_if(items_.begin(), items_.end(), [](const Diagnostic& d) {
    return d.severity == DiagSeverity::kError;
  }));
}

void Diagnostics::Sort() {
  std::stable_sort(items_.begin(), items_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.pos.file != b.pos.file) return a.pos.file < b.pos.file;
    if (a.pos.line != b.pos.line) return a.pos.line < b.pos.line;
    return a.pos.col < b.pos.col;
  });
}

namespace {

std::string_view SeverityWord(DiagSeverity s) {
  switch (s) {
    case DiagSeverity::kError: return "error";
    case DiagSeverity::kWarning: return "warning";
    case DiagSeverity::kNote: return "note";
  }
  return "error";
}

}  // namespace

std::string FormatDiagnostic(const Diagnostic& d, const SourceFile* source) {
  std::string out = fmt::format("{}: {}: {}\n", d.pos.ToString(), SeverityWord(d.severity), d.message);
  if (source == nullptr || d.pos.line <= 0) return out;
  std::string_view line = source->Line(d.pos.line);
  std::string number = std::to_string(d.pos.line);
  std::string gutter(number.size(), ' ');
  // The line as shown: every byte that is not printable ASCII written as \xNN (a right-to-left
  // override or a terminal escape in an inventory is shown, never obeyed), at most kShown
  // characters around the column, the rest as "..." (#28 item 23: an 8 MiB scalar was echoed
  // whole). Tabs are kept so the caret stays under the right character.
  constexpr std::size_t kShown = 160;
  const std::size_t col = d.pos.col > 0 ? static_cast<std::size_t>(d.pos.col - 1) : 0;
  std::size_t from = col > kShown / 2 ? col - kShown / 2 : 0;
  std::size_t to = std::min(line.size(), from + kShown);
  std::string shown = from > 0 ? "..." : "";
  std::string pad = from > 0 ? "   " : "";
  for (std::size_t i = from; i < to; ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    std::string piece = c == '\t' || (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c))
                                                              : fmt::format("\\x{:02x}", c);
    if (i < col) pad += c == '\t' ? std::string("\t") : std::string(piece.size(), ' ');
    shown += piece;
  }
  if (to < line.size()) shown += "...";
  int width = std::max(1, std::min(d.width, static_cast<int>(kShown)));
  std::string mark = "^" + std::string(static_cast<std::size_t>(width - 1), '~');
  out += fmt::format(" {} | {}\n {} | {}{}\n", number, shown, gutter, pad, mark);
  return out;
}

}  // namespace gpuforge
