#include "gpuforge/report/unlock_report.h"

#include <fmt/format.h>

#include "gpuforge/base/schemas.h"

namespace gpuforge::report {
namespace {

const char* StateName(apply::NodeUnlock::State s) {
  switch (s) {
    case apply::NodeUnlock::State::kRemoved: return "removed";
    case apply::NodeUnlock::State::kNoLock: return "no_lock";
    case apply::NodeUnlock::State::kOtherHolder: return "other_holder";
    case apply::NodeUnlock::State::kFailed: return "failed";
  }
  return "?";
}

std::string Liveness(const std::string& holder, const std::string& this_host, bool (*alive)(long)) {
  apply::HolderProcess p;
  if (!apply::ParseHolderProcess(holder, &p)) return "";
  if (p.host != this_host) return fmt::format(" (pid {} on {}: check there whether it still runs)", p.pid, p.host);
  return alive(p.pid) ? fmt::format(" (pid {} still runs here)", p.pid) : fmt::format(" (pid {} is gone)", p.pid);
}

}  // namespace

std::string UnlockText(const apply::UnlockRun& r, const Style& s, const std::string& this_host, bool (*alive)(long)) {
  std::string out;
  std::size_t removed = 0, absent = 0, other = 0, failed = 0;
  for (const apply::NodeUnlock& n : r.nodes) {
    switch (n.state) {
      case apply::NodeUnlock::State::kRemoved:
        ++removed;
        out += fmt::format("{}: removed the lock of {}{}\n", s.Bold(n.node), n.holder, Liveness(n.holder, this_host, alive));
        break;
      case apply::NodeUnlock::State::kNoLock:
        ++absent;
        out += fmt::format("{}: no lock\n", s.Bold(n.node));
        break;
      case apply::NodeUnlock::State::kOtherHolder:
        ++other;
        out += fmt::format("{}: {} left in place: it is held by {}{}\n", s.Bold(n.node), s.Red("lock"), n.holder,
                           Liveness(n.holder, this_host, alive));
        break;
      case apply::NodeUnlock::State::kFailed:
        ++failed;
        out += fmt::format("{}: {} {}\n", s.Bold(n.node), s.Red("failed:"), n.detail);
        break;
    }
  }
  out += fmt::format("Unlock {}: {} removed, {} without a lock, {} held by another run, {} failed.\n", r.run_id, removed,
                     absent, other, failed);
  return out;
}

nlohmann::ordered_json UnlockJson(const apply::UnlockRun& r) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const apply::NodeUnlock& n : r.nodes) {
    nlohmann::ordered_json j = {{"node", n.node}, {"state", StateName(n.state)}};
    if (!n.holder.empty()) j["holder"] = n.holder;
    if (!n.detail.empty()) j["error"] = n.detail;
    nodes.push_back(std::move(j));
  }
  return {{"schema", schemas::kUnlock}, {"run", r.run_id}, {"ok", r.ok()}, {"nodes", nodes}};
}

}  // namespace gpuforge::report
