#include "gpuforge/apply/unlock.h"

#include <fmt/format.h>

#include <charconv>
#include <mutex>

#include "gpuforge/apply/apply.h"
#include "gpuforge/base/text.h"

namespace gpuforge::apply {

bool UnlockRun::ok() const {
  for (const NodeUnlock& n : nodes) {
    if (n.state != NodeUnlock::State::kRemoved && n.state != NodeUnlock::State::kNoLock) return false;
  }
  return true;
}

bool ParseHolderProcess(std::string_view h, HolderProcess* out) {
  std::size_t by = h.find(" by ");
  std::size_t pid = h.find(" (pid ");
  if (by == std::string_view::npos || pid == std::string_view::npos || pid < by) return false;
  std::string_view who = h.substr(by + 4, pid - by - 4);
  std::size_t at = who.rfind('@');
  if (at == std::string_view::npos) return false;
  std::string_view digits = h.substr(pid + 6);
  long n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end == digits.data() || *end != ')' || n <= 0) return false;
  out->host = std::string(who.substr(at + 1));
  out->pid = n;
  return true;
}

UnlockRun UnlockNodes(remote::Connector& connector, std::span<const remote::Target> targets, const std::string& run_id,
                      const remote::FanoutOptions& fanout) {
  UnlockRun run;
  run.run_id = run_id;
  run.nodes.resize(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) run.nodes[i].node = targets[i].node;
  remote::Fleet fleet(connector, std::vector<remote::Target>(targets.begin(), targets.end()), fanout);
  fleet.Each([&](std::size_t i, remote::Session& s) {
    NodeUnlock& n = run.nodes[i];
    remote::ExecOptions eo;
    eo.sudo = s.target().sudo;
    eo.timeout = std::chrono::seconds(30);
    eo.output_cap = 64 << 10;
    Result<remote::ExecResult> r = s.Exec(UnlockRunScript(run_id), eo);
    if (!r.ok()) {
      n.detail = r.error().message;
      return false;
    }
    std::string line = r->out;
    while (!line.empty() && line.back() == '\n') line.pop_back();
    n.holder = text::Visible(line, 300);
    if (r->end == remote::ExecEnd::kExited && r->exit_status == 0) {
      n.state = NodeUnlock::State::kRemoved;
    } else if (r->end == remote::ExecEnd::kExited && r->exit_status == kNoLockExit) {
      n.state = NodeUnlock::State::kNoLock;
    } else if (r->end == remote::ExecEnd::kExited && r->exit_status == kLockHeldExit) {
      n.state = NodeUnlock::State::kOtherHolder;
    } else {
      n.detail = fmt::format("{}: {}", remote::DescribeEnd(*r, eo), text::Visible(r->err, 300));
    }
    return true;
  });
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (fleet.lost(i) && run.nodes[i].detail.empty() && run.nodes[i].state == NodeUnlock::State::kFailed) {
      run.nodes[i].detail = fleet.lost(i)->message;
    }
  }
  fleet.Close();
  return run;
}

}  // namespace gpuforge::apply
