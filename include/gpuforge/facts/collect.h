#pragma once

// `gpuforge facts`: the gather script run on every node over a Fleet, each node's output
// parsed, and (with check) the drift from the inventory and between nodes of one profile.
// Through remote::Connector only, so tests drive it with the recording fake. Nothing here
// prints: report/facts_report.h renders the result.

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/facts/drift.h"
#include "gpuforge/model/cluster.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::facts {

struct CollectOptions {
  std::chrono::milliseconds timeout{std::chrono::seconds(180)};  // for the script on each node
  remote::FanoutOptions fanout;  // its cancel (Ctrl-C) also stops a running script
  bool check = false;            // compare with the inventory (FindDrift)
  bool keep_raw = false;         // keep each node's script output (facts --save)
};

struct Collected {
  std::vector<Gathered> gathered;  // in target order; an error for a node not gathered
  std::vector<Drift> drift;        // with CollectOptions::check
  bool checked = false;            // CollectOptions::check
  std::size_t failed = 0;          // nodes without facts
  // With CollectOptions::keep_raw: the script output of each node whose facts parsed, beside
  // `gathered` (empty for the others). facts/saved.h writes it; it parses back the same.
  std::vector<std::string> raw;
};

Collected Collect(remote::Connector& connector, std::span<const remote::Target> targets, const model::Cluster& c,
                  const CollectOptions& o);

}  // namespace gpuforge::facts
