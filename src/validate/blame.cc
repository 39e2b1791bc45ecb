#include "validate/blame.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "gpuforge/base/hostlist.h"
#include "validate/verdicts.h"

namespace gpuforge::validate::internal {

bool WaitsOnOthers(std::string_view code) {
  // exchange.failed: the agents' exchange through the controller broke (a participant ended
  // before its part); tcp.timeout: nothing on the socket (src/probe/tcp.cc); sys.connect_failed:
  // the peer never listened; rdma.peer_*: the peer's writes stopped (src/probe/rdma); nccl.error:
  // NCCL's asynchronous error on the survivors when a member dies; group.member_unavailable and
  // pair.peer_unavailable: the controller's own SKIPs for a peer without an agent;
  // probe.cancelled: a member the controller stopped because another ended first (a TCP server
  // "cancelled while waiting for a client" whose client could not connect: the path, or the
  // client, not the server; found by validate --isolate over a blackholed path, #32).
  static constexpr std::array<std::string_view, 9> kWaiting = {
      "exchange.failed",         "tcp.timeout",          "sys.connect_failed", "rdma.peer_timeout",
      "rdma.peer_error",         "nccl.error",           "group.member_unavailable",
      "pair.peer_unavailable",   "probe.cancelled"};
  return std::find(kWaiting.begin(), kWaiting.end(), code) != kWaiting.end();
}

void BlameOwnFailures(std::vector<Verdict>& verdicts, std::string_view skip_code) {
  auto failed = [](const Verdict& v) { return v.state == State::kFail || v.state == State::kError; };
  std::set<std::string> own;  // nodes with a failure of their own
  std::vector<std::string> reasons;
  for (const Verdict& v : verdicts) {
    if (!failed(v) || WaitsOnOthers(v.code)) continue;
    if (own.insert(v.node).second) reasons.push_back(fmt::format("{}: {}", v.node, v.code));
  }
  if (own.empty()) return;
  const std::string names = hostlist::Fold(std::vector<std::string>(own.begin(), own.end()));
  for (Verdict& v : verdicts) {
    if (!failed(v) || !WaitsOnOthers(v.code) || own.count(v.node)) continue;
    const std::string was = fmt::format("{} {}", ToString(v.state), v.code);
    Mark(v, skip_code);
    v.detail = fmt::format("not this node's failure: {} failed first ({}); here it ended {}{}{}", names,
                           fmt::join(reasons, "; "), was, v.detail.empty() ? "" : ": ", v.detail);
    v.next_step = fmt::format("look at {} first; run the check again once it passes", names);
  }
}

}  // namespace gpuforge::validate::internal
