#pragma once

// The runs of `gpuforge validate`: a probe run on a node through its agent and its JSON line
// read back, with retries; pairs and groups of nodes at once, conversing through the exchange
// (exchange_hub.h); a whole plan. The agent itself is found or pushed by agent.h. Through the
// remote::Session interface only, so tests drive it with the recording fake.

#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "gpuforge/plan/node_plan.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/session.h"
#include "gpuforge/validate/agent.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

// One member of a group run: where it runs, with which agent, as what.
struct GroupMember {
  remote::Session* session = nullptr;
  AgentOnNode agent;
  PlannedRun run;
};

// Runs one probe on every member at once, conversing through an ExchangeHub (members in
// participant order), and returns each member's parsed result or its ERROR verdict. When the
// exchange failed, the hub's reason is added to the ERROR verdicts of members without a result.
std::vector<std::variant<probe::ProbeResult, Verdict>> RunGroup(std::span<const GroupMember> members, int timeout_s,
                                                                const std::atomic<bool>* cancel);

struct RunOptions {
  int retries = 3;        // attempts for performance checks (the first good one counts)
  int timeout_s = 0;      // 0 = the check's own
  const std::atomic<bool>* cancel = nullptr;
};

// Runs one node-local check and judges it. A transport failure, a timeout (naming the check)
// or output that is not a probe result is an ERROR verdict, never a pass.
std::vector<Verdict> RunCheck(remote::Session& s, const AgentOnNode& agent, const model::Cluster& c,
                              const Thresholds& t, const PlannedRun& run, const RunOptions& o);

// A pair: the probe's server side on `server` (the peer), its client side on `client`.
std::vector<Verdict> RunPair(remote::Session& client, const AgentOnNode& client_agent, remote::Session& server,
                             const AgentOnNode& server_agent, const model::Cluster& c, const Thresholds& t,
                             const PlannedRun& run, const RunOptions& o);

// A group check (PlannedRun::group): one agent per member node at once, each with
// node_index=K, conversing through the exchange; judged as one job (JudgeGroup). sessions and
// agents are in group order.
std::vector<Verdict> RunGroupCheck(std::span<remote::Session* const> sessions, std::span<const AgentOnNode> agents,
                                   const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                   const RunOptions& o);

struct PlanRunOptions {
  RunOptions run;   // retries, timeout, cancel (Ctrl-C) for every check
  int fanout = 64;  // nodes worked on at once for the node-local checks
  std::function<void(const remote::Progress&)> on_progress;
};

// Runs a whole validate plan over `targets` (the plan's nodes): the agent made sure of on every
// node (`agent` nullptr when no check needs it), node-local checks in parallel up to the
// fan-out, the facts script gathered and judged for drift across the nodes, then pairs and
// group jobs one at a time on fresh sessions, so that they do not share links. Returns every
// verdict in report order: facts, each node's checks as planned, pairs and groups, then what did
// not apply. A node that cannot be reached is an ERROR `node.unreachable`, and the others go on.
std::vector<Verdict> RunPlan(remote::Connector& connector, std::span<const remote::Target> targets,
                             const model::Cluster& c, const Thresholds& t, const ValidatePlan& plan,
                             const plan::AgentBinary* agent, const PlanRunOptions& o);

}  // namespace gpuforge::validate
