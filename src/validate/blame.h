#pragma once

// Whose failure a pair or group run is (issue #28 item 13). In a pair check (tcp.bandwidth,
// rdma.*) or a group check (nccl.multinode) the participants wait on each other: a server that
// cannot bind its port ends, its client then gets `exchange.failed`, and judging each by its own
// result alone made the healthy client the one to drain while the broken server went unreported.
// A failure is a node's own unless its code only says it waited on the others; when some
// participant failed on its own, the others' waiting failures become SKIPs that name it, and
// --drain-failed (which drains FAIL and ERROR) leaves them alone. When every failure is a waiting
// one, nobody can be told apart and each keeps its ERROR.

#include <string_view>
#include <vector>

#include "gpuforge/validate/validate.h"

namespace gpuforge::validate::internal {

// Codes that say the participant gave up waiting on another one (the exchange, a connect or
// accept that timed out, a peer that went away mid-run, NCCL's error after a member died).
bool WaitsOnOthers(std::string_view code);

// `verdicts`: every participant's verdicts of one run (FAIL and ERROR are failures). Turns
// each waiting failure into SKIP `skip_code` naming the nodes that failed on their own, when
// there are any. `skip_code` is pair.peer_failed or group.member_failed.
void BlameOwnFailures(std::vector<Verdict>& verdicts, std::string_view skip_code);

}  // namespace gpuforge::validate::internal
