#pragma once

// Typed, position-aware access to a yaml-cpp tree: every getter reports what is wrong at the
// node's file:line:col into a Diagnostics sink and returns nothing, so a reader can keep going
// and report every problem in one run. The inventory loader reads through it, and so does
// every other YAML input (validate's GPU model table), so all of them point at file:line:col
// with the line and a caret.

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "gpuforge/base/diag.h"
#include "gpuforge/base/quantity.h"

namespace gpuforge::inventory {

class YamlReader {
 public:
  YamlReader(std::string file, Diagnostics* diags) : file_(std::move(file)), diags_(diags) {}

  SourcePos Pos(const YAML::Node& n) const;
  // Where character `index` of a scalar's value sits in the file; the scalar's start when the
  // value cannot be mapped back to its text (escapes, folded lines).
  SourcePos PosAt(const YAML::Node& n, std::size_t index) const;
  // Width of the caret mark: the scalar's length, or 1.
  static int Width(const YAML::Node& n);
  // Column offset of a scalar's text from the node mark (1 when quoted).
  static int TextOffset(const YAML::Node& n);

  void Error(const YAML::Node& at, std::string message) const;
  void Error(SourcePos pos, std::string message, int width = 1) const;

  // Checks that `n` is a mapping whose keys are among `allowed`; reports unknown keys (with a
  // "did you mean"), duplicate keys and a wrong node type. `what` names the object in
  // messages ("node entry", "profile 'hgx'"). Returns false when `n` is not a map.
  bool CheckMap(const YAML::Node& n, std::string_view what,
                std::span<const std::string_view> allowed) const;
  // A mapping with arbitrary keys (names of things): checks the type and duplicate keys.
  bool CheckOpenMap(const YAML::Node& n, std::string_view what) const;
  bool CheckSeq(const YAML::Node& n, std::string_view what) const;

  // Reports a missing required key, unless CheckMap already suggested it for a misspelt key
  // of the same map ("unknown key 'teir'; did you mean 'tier'?" says it all).
  void Missing(const YAML::Node& map, std::string_view key, std::string_view what) const;

  // Missing key -> nullopt without error unless `required`.
  std::optional<std::string> Str(const YAML::Node& map, std::string_view key, std::string_view what,
                                 bool required = false) const;
  std::optional<long long> Int(const YAML::Node& map, std::string_view key, std::string_view what,
                               long long min, long long max, bool required = false) const;
  std::optional<double> Num(const YAML::Node& map, std::string_view key, std::string_view what,
                            double min, double max, bool required = false) const;
  std::optional<bool> Bool(const YAML::Node& map, std::string_view key, std::string_view what) const;
  std::optional<double> Qty(const YAML::Node& map, std::string_view key, std::string_view what,
                            quantity::Dimension dim, bool required = false) const;
  // One of `choices`; reports the choices (and a suggestion) otherwise.
  std::optional<std::string> Choice(const YAML::Node& map, std::string_view key, std::string_view what,
                                    std::initializer_list<std::string_view> choices,
                                    bool required = false) const;

  // The scalar text of `n`, or an error when it is not a scalar.
  std::optional<std::string> ScalarOf(const YAML::Node& n, std::string_view what) const;
  std::optional<long long> IntOf(const YAML::Node& n, std::string_view what, long long min,
                                 long long max) const;

  const std::string& file() const { return file_; }
  // Sends later diagnostics to `sink` instead; returns the previous sink.
  Diagnostics* Redirect(Diagnostics* sink) {
    std::swap(sink, diags_);
    return sink;
  }

  // The value under `key` of a mapping; an undefined node when absent or not a mapping.
  static YAML::Node Get(const YAML::Node& map, std::string_view key);
  // Present and not null.
  static bool Has(const YAML::Node& map, std::string_view key);

 private:
  std::string file_;
  Diagnostics* diags_;
  // (line, column) of a map and a key CheckMap suggested in it.
  mutable std::set<std::tuple<int, int, std::string>> suggested_;
};

const char* TypeName(const YAML::Node& n);

// Turns a yaml-cpp parse error into a diagnostic an operator can act on: tabs in indentation,
// an unclosed '[' or '{' (pointing at the opener), a hostlist written unquoted inside a flow
// mapping, bad indentation.
void ReportSyntaxError(const YAML::Exception& e, const SourceFile& source, Diagnostics* diags);

}  // namespace gpuforge::inventory
