#include "gpuforge/remote/run_command.h"

#include <chrono>

namespace gpuforge::remote {
namespace {

std::string WithoutNodePrefix(const std::string& message, const std::string& node) {
  std::string prefix = "node " + node + ": ";
  return message.starts_with(prefix) ? message.substr(prefix.size()) : message;
}

}  // namespace

CommandRun RunOnNodes(Connector& connector, std::span<const Target> targets, const std::string& command,
                      const ExecOptions& exec, const FanoutOptions& fanout) {
  const auto start = std::chrono::steady_clock::now();
  CommandRun out;
  out.command = command;
  out.nodes.resize(targets.size());
  {
    Fleet fleet(connector, std::vector<Target>(targets.begin(), targets.end()), fanout);
    fleet.Each([&](std::size_t i, Session& s) {
      NodeRun& run = out.nodes[i];
      Result<ExecResult> r = s.Exec(command, exec);
      if (!r.ok()) {
        // Connected, then the transport failed: the command may have run.
        run.state = NodeRun::State::kFailed;
        run.error = r.error().message;
        return false;
      }
      run.result = std::move(*r);
      run.state = run.result.Succeeded() ? NodeRun::State::kOk : NodeRun::State::kFailed;
      return run.state == NodeRun::State::kOk;
    });
    for (std::size_t i = 0; i < out.nodes.size(); ++i) {
      NodeRun& run = out.nodes[i];
      run.node = targets[i].node;
      if (run.state == NodeRun::State::kUnreachable && run.error.empty() && fleet.lost(i)) {
        run.error = fleet.lost(i)->message;
      }
      run.error = WithoutNodePrefix(run.error, run.node);
      run.end = DescribeEnd(run.result, exec);
    }
  }
  for (const NodeRun& r : out.nodes) {
    out.ok += r.state == NodeRun::State::kOk;
    out.failed += r.state == NodeRun::State::kFailed;
    out.unreachable += r.state == NodeRun::State::kUnreachable;
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace gpuforge::remote
