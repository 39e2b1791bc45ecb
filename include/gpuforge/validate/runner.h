#pragma once

// The remote side of `gpuforge validate`: getting the agent onto a node, running a probe there
// through it and reading its JSON line back, retries, and pairs of nodes. Through the
// remote::Session interface only, so tests drive it with the recording fake.

#include <atomic>
#include <string>
#include <vector>

#include "gpuforge/plan/node_plan.h"
#include "gpuforge/remote/session.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

// Where a pushed agent goes when the node has no matching one at plan::kAgentPath: the login
// user's, no root needed, named by the binary's digest.
std::string TemporaryAgentPath(std::string_view sha256);

// Finds or pushes the agent: plan::kAgentPath when its SHA-256 is the local agent's, else a
// copy at TemporaryAgentPath (uploaded when missing or different) when the node's `uname -m`
// matches. Returns the path to run. Errors name the node: another architecture, a failed
// upload.
Result<std::string> EnsureAgent(remote::Session& s, const plan::AgentBinary& agent);

// `AGENT agent run PROBE --param k=v ... --timeout T`, every word quoted.
std::string AgentCommand(std::string_view agent, const PlannedRun& run, int timeout_s);

struct RunOptions {
  int retries = 3;        // attempts for performance checks (the first good one counts)
  int timeout_s = 0;      // 0 = the check's own
  const std::atomic<bool>* cancel = nullptr;
};

// Runs one node-local check and judges it. A transport failure, a timeout (naming the check)
// or output that is not a probe result is an ERROR verdict, never a pass.
std::vector<Verdict> RunCheck(remote::Session& s, const std::string& agent, const model::Cluster& c,
                              const Thresholds& t, const PlannedRun& run, const RunOptions& o);

// A pair: the probe's server side on `server` (the peer), its client side on `client`.
std::vector<Verdict> RunPair(remote::Session& client, const std::string& client_agent, remote::Session& server,
                             const std::string& server_agent, const model::Cluster& c, const Thresholds& t,
                             const PlannedRun& run, const RunOptions& o);

}  // namespace gpuforge::validate
