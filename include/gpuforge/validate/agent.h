#pragma once

// The agent on a node, for `gpuforge validate`: finding it, or pushing this build's copy, and the
// command that runs a probe through it. Through the remote::Session interface only.
//
// Where the agent lives is a security boundary (issue #12, item 1): it runs as root (the login
// user, or through sudo) once per check. It is never run from a directory another user can
// write (the old /var/tmp/gpuforge-agent-<hex> let a node user rename a trojan over a genuine
// copy between the digest check and the exec), and every exec re-checks owner, mode and SHA-256
// in the same shell invocation that execs it.

#include <span>
#include <string>
#include <string_view>

#include "gpuforge/base/result.h"
#include "gpuforge/plan/node_plan.h"
#include "gpuforge/remote/fanout.h"
#include "gpuforge/remote/session.h"
#include "gpuforge/validate/validate.h"

namespace gpuforge::validate {

// The agent a node runs, and the digest it must have when it is exec'd.
struct AgentOnNode {
  AgentOnNode() = default;
  // A path alone: the command is not verified. Only tests build it so; EnsureAgent always gives
  // the digest.
  AgentOnNode(std::string p) : path(std::move(p)) {}  // NOLINT: implicit for tests
  AgentOnNode(const char* p) : path(p) {}            // NOLINT: implicit for tests
  AgentOnNode(std::string p, std::string digest) : path(std::move(p)), sha256(std::move(digest)) {}
  std::string path;
  std::string sha256;
  bool empty() const { return path.empty(); }
};

// The directory validate pushes its agent into when it runs as root (the login user, or
// through sudo): created root:root 0755, so only root can write there.
inline constexpr std::string_view kPushedAgentDir = "/var/lib/gpuforge/agent";

// A pushed agent's path in `dir`, named by the binary's whole digest.
std::string PushedAgentPath(std::string_view dir, std::string_view sha256);

// Finds or pushes the agent: plan::kAgentPath when its SHA-256 is the local agent's, else a
// copy in the pushed-agent directory (uploaded when missing or different) when the node's
// `uname -m` matches. As root that directory is kPushedAgentDir; as a login user without sudo
// it is $HOME/.cache/gpuforge (0700, the user's own). A copy is used only when it, and the
// directory holding it, are owned by root or the user the agent runs as and writable by no one
// else; older pushed copies in that directory are removed. Errors name the node: another
// architecture, an unsafe location, a failed upload.
Result<AgentOnNode> EnsureAgent(remote::Session& s, const plan::AgentBinary& agent);

// `AGENT agent run PROBE --param k=v ... --timeout T [--exchange]`, every word quoted.
std::string AgentCommand(std::string_view agent, const PlannedRun& run, int timeout_s, bool exchange = false);

// What is sent to run a probe: with a digest, a guard that refuses (exit 126, the reason on
// stderr) unless the agent and its directory are regular, not links, owned by root or the
// running user and writable by no one else, and the file's SHA-256 is the digest, then execs
// AgentCommand in the same shell. Without a digest (tests), AgentCommand alone.
std::string VerifiedAgentCommand(const AgentOnNode& agent, const PlannedRun& run, int timeout_s, bool exchange = false);

// Removes a pushed agent, and its directory when that is left empty: validate does so when its
// run ends.
std::string RemovePushedAgentScript(std::string_view path);

// Runs RemovePushedAgentScript on every node of `fleet` whose agent (by index) was pushed by
// this run rather than installed by apply; errors ignored (the run's verdicts stand).
void RemovePushedAgents(remote::Fleet& fleet, std::span<const AgentOnNode> agents);

// The shell test, for one file, that the guard and EnsureAgent share: true when FILE (a shell
// word) and its directory are safe to exec from as the running user.
std::string SafeToExecTest(std::string_view file_word);

}  // namespace gpuforge::validate
