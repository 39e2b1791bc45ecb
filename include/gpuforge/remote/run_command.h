#pragma once

// `gpuforge run`: one shell command on many nodes at once, each node's outcome kept apart
// (succeeded, failed, unreachable). Through the Connector interface only, so tests drive it
// with the recording fake. Nothing here prints: report/run_report.h renders the result.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/session.h"

namespace gpuforge::remote {

// One node's outcome of the command.
struct NodeRun {
  enum class State { kOk, kFailed, kUnreachable } state = State::kUnreachable;
  std::string node;
  ExecResult result;
  std::string end;    // DescribeEnd of the result: "exit 0", "timed out after 5 s", ...
  // Unreachable, or the transport failed mid-command; without the "node NAME: " every remote
  // error starts with, so that identical errors fold.
  std::string error;
};

struct CommandRun {
  std::string command;
  std::vector<NodeRun> nodes;  // in target order
  std::size_t ok = 0, failed = 0, unreachable = 0;
  double seconds = 0;  // wall time of the whole run
};

// Runs `command` (for the login shell) on every target with `exec` (timeout, sudo, cap, cancel)
// through a Fleet with `fanout`.
CommandRun RunOnNodes(Connector& connector, std::span<const Target> targets, const std::string& command,
                      const ExecOptions& exec, const FanoutOptions& fanout);

}  // namespace gpuforge::remote
