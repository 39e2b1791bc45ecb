#pragma once

// The agent on a node, for `gpuforge validate`: finding it, or pushing this build's copy, and the
// command that runs a probe through it. Through the remote::Session interface only.

#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
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

// `AGENT agent run PROBE --param k=v ... --timeout T [--exchange]`, every word quoted.
std::string AgentCommand(std::string_view agent, const PlannedRun& run, int timeout_s, bool exchange = false);

}  // namespace gpuforge::validate
