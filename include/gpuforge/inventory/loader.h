#pragma once

// Reads an inventory YAML file into the typed cluster model. Every problem in the file is
// reported in one run, each naming file:line:col; a model is returned only when there were
// no errors, so later stages never see a half-checked inventory.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpuforge/base/diag.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::inventory {

// The most nodes one inventory may declare; a hostlist typo must not take the controller down.
inline constexpr std::size_t kMaxNodes = 65536;

struct LoadOutcome {
  std::optional<model::Cluster> cluster;  // set only when diags has no errors
  Diagnostics diags;
  std::shared_ptr<const SourceFile> source;  // for quoting lines in diagnostics

  bool ok() const { return cluster.has_value(); }
  // Every diagnostic, formatted with the offending line and a caret, then a count line.
  std::string FormatDiagnostics() const;
};

LoadOutcome LoadFile(const std::string& path);
LoadOutcome LoadString(std::string_view text, const std::string& path_for_messages);

}  // namespace gpuforge::inventory
