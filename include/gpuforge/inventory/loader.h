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

// A node's bounds the loader holds a profile to; `init` writes nothing beyond them.
inline constexpr int kMaxGpusPerNode = 64;
inline constexpr int kMaxDrivesPerNode = 64;
inline constexpr int kMaxNicPort = 16;     // a NIC's port number, 1..kMaxNicPort
inline constexpr int kMaxNumaNode = 1023;  // a NUMA node, 0..kMaxNumaNode
inline constexpr int kMaxSwitchPorts = 4096;

// The most YAML values (scalars, sequences, maps, aliases) one inventory may hold. The bytes cap
// (64 MiB) alone let a 50 MB file of short scalars take ~4 GB and 48 s (#28 item 21): yaml-cpp
// keeps about 460 bytes per value (1,000,000 one-character scalars: 460 MB resident). This
// budget holds the tree near 1 GB; the synthetic 8,192-node fat tree written one line per cable
// (bench/gen_inventory.py --explicit-links) has 1,001,864 values, so one line per cable fits about
// 16,000 nodes, and hostlist ranges (gpu[0001-4096], leaf01:[1-32]) any size up to kMaxNodes.
inline constexpr std::size_t kMaxYamlValues = std::size_t{1} << 21;

// How many YAML values the first document of `text` holds, counting no further than `limit` + 1,
// with where the count passed `limit` (1-based line and column; 0 when it did not). A streaming
// parse: it holds no tree, so it costs time, not memory. A syntax error ends the count early
// (YAML::Load reports it).
struct ValueCount {
  std::size_t values = 0;
  int line = 0;
  int col = 0;
};
ValueCount CountYamlValues(std::string_view text, std::size_t limit);

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
