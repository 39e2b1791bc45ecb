#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpuforge {

// A place in a source file; line and col are 1-based, 0 means unknown.
struct SourcePos {
  std::string file;
  int line = 0;
  int col = 0;
  std::string ToString() const;  // "file:line:col", or less where unknown
};

// The text of one input file, kept so diagnostics can quote the offending line.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  // Line `line` (1-based) without its newline; empty when out of range.
  std::string_view Line(int line) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<std::size_t> line_starts_;
};

enum class DiagSeverity { kError, kWarning, kNote };

// One message about an input, with where it points and how wide the caret mark is.
struct Diagnostic {
  DiagSeverity severity = DiagSeverity::kError;
  SourcePos pos;
  std::string message;
  int width = 1;  // characters to underline from pos.col
};

// Collects diagnostics for one or more source files; the loader reports every problem in a
// file in one run rather than stopping at the first.
class Diagnostics {
 public:
  void Add(Diagnostic d) { items_.push_back(std::move(d)); }
  void Error(SourcePos pos, std::string message, int width = 1);
  void Warning(SourcePos pos, std::string message, int width = 1);
  const std::vector<Diagnostic>& items() const { return items_; }
  bool has_errors() const;
  std::size_t error_count() const;
  // Stable order: by file, line, column, then insertion order.
  void Sort();

 private:
  std::vector<Diagnostic> items_;
};

// Renders one diagnostic as compilers do:
//   file:12:7: error: unknown key 'adress' in node; did you mean 'address'?
//      12 |   adress: 10.0.0.1
//         |   ^~~~~~
// `source` may be null (then only the first line is printed).
std::string FormatDiagnostic(const Diagnostic& d, const SourceFile* source);

}  // namespace gpuforge
