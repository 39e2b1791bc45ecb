#pragma once

// `gpuforge rollback` over many nodes: RollbackNode on each at once, then the cluster handlers
// the first rolled-back node that needs them deferred, run on that node. Through
// remote::Connector only, so tests drive it with the recording fake. Nothing here prints:
// report/rollback_report.h renders the result.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/apply/apply.h"
#include "gpuforge/apply/rollout.h"
#include "gpuforge/remote/fanout.h"

namespace gpuforge::apply {

struct RollbackRunOptions {
  // The rollback's own run (apply.run_id, holder, time_utc), the run to undo and force; sudo
  // is set per node from its target.
  RollbackOptions rollback;
  remote::FanoutOptions fanout;  // width, and cancel (Ctrl-C): nodes not yet started are left out
};

struct RollbackRun {
  std::string run_id;       // the rollback's own
  std::string rollback_of;  // the run it undoes
  // In target order; `unreachable` says why a node has no result ("not reached" when the
  // fleet gave no reason).
  std::vector<NodeOutcome> nodes;
  // One line per cluster handler: "ran `H` once, on NODE", or how it failed.
  std::vector<std::string> handler_lines;
  bool handler_failed = false;
  std::size_t rolled_back = 0, untouched = 0, failed = 0;  // unreachable counts as failed

  bool ok() const { return failed == 0 && !handler_failed; }
};

RollbackRun RollbackNodes(remote::Connector& connector, std::span<const remote::Target> targets,
                          const RollbackRunOptions& o);

}  // namespace gpuforge::apply
