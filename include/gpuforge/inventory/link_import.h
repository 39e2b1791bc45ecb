#pragma once

// A designed link list from a file a site already keeps (#31 part 2), instead of or beside the
// inventory's `links:`: UFM's topology-design CSV, or ibdiagnet's topology file (the ibdm format
// `ibdiagnet -t` reads). Each is read into the same model::Link the inventory's links
// become, against the inventory's nodes and switches, so the comparison never knows where a
// designed cable came from. docs/cabling.md cites each format's source.
//
// Every problem is a diagnostic at file:line:col (an unknown device with a "did you mean", a
// port out of range, a NIC the node's profile lacks, a cable listed twice, a line that is not
// the format); links are returned only when there was no error.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuforge/base/diag.h"
#include "gpuforge/model/cluster.h"

namespace gpuforge::inventory {

enum class DesignFormat { kUfmCsv, kIbdiagnetTopo };

struct ImportOutcome {
  std::optional<std::vector<model::Link>> links;  // set only when diags has no errors
  Diagnostics diags;
  std::shared_ptr<const SourceFile> source;
  std::string FormatDiagnostics() const;  // as LoadOutcome's
};

// `format` nullopt: told from the content (a CSV header naming StartDevice, else a first
// "TYPE NAME" line of the topology file); when neither fits, an error at line 1.
ImportOutcome ImportDesignFile(const std::string& path, const model::Cluster& cluster,
                               std::optional<DesignFormat> format = std::nullopt);
ImportOutcome ImportDesignString(std::string_view text, const std::string& path_for_messages,
                                 const model::Cluster& cluster,
                                 std::optional<DesignFormat> format = std::nullopt);

}  // namespace gpuforge::inventory
