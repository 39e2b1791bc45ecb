#pragma once

// `gpuforge unlock INVENTORY --run ID`: the way out of a lock a killed run left, without `rm`.
// Only a lock that run ID (an apply, or a rollback with that id) holds is removed; another
// holder's lock is shown and left. Through remote::Connector only; report/unlock_report.h
// renders the result.

#include <span>
#include <string>
#include <vector>

#include "gpuforge/remote/fanout.h"

namespace gpuforge::apply {

struct NodeUnlock {
  enum class State { kRemoved, kNoLock, kOtherHolder, kFailed } state = State::kFailed;
  std::string node;
  std::string holder;  // the holder line found (sanitised), for kRemoved and kOtherHolder
  std::string detail;  // why, for kFailed
};

struct UnlockRun {
  std::string run_id;
  std::vector<NodeUnlock> nodes;  // in target order
  bool ok() const;                // every node's lock removed or absent
};

UnlockRun UnlockNodes(remote::Connector& connector, std::span<const remote::Target> targets, const std::string& run_id,
                      const remote::FanoutOptions& fanout);

// What a holder line says of the process that holds it ("run ID by USER@HOST (pid N) at T"):
// the host and pid, when the line has them.
struct HolderProcess {
  std::string host;
  long pid = 0;
};
bool ParseHolderProcess(std::string_view holder, HolderProcess* out);

}  // namespace gpuforge::apply
