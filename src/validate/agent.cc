#include "gpuforge/validate/agent.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "remote/command.h"
#include "validate/text.h"

namespace gpuforge::validate {

using internal::Visible;
using remote::ShellQuote;

std::string TemporaryAgentPath(std::string_view sha256) {
  return fmt::format("/var/tmp/gpuforge-agent-{}", sha256.substr(0, 16));
}

Result<std::string> EnsureAgent(remote::Session& s, const plan::AgentBinary& agent) {
  const std::string& node = s.target().node;
  const std::string tmp = TemporaryAgentPath(agent.blob->sha256);
  remote::ExecOptions eo;
  eo.output_cap = 64 << 10;
  // The installed agent is read as any user (0755); the digest of a large file takes a moment.
  const std::string script = fmt::format(
      "uname -m\n"
      "for f in {} {}; do if [ -f \"$f\" ]; then sha256sum < \"$f\" | cut -c1-64; else echo -; fi; done\n",
      ShellQuote(plan::kAgentPath), ShellQuote(tmp));
  Result<remote::ExecResult> r = s.Exec(script, eo);
  if (!r.ok()) return r.error();
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < r->out.size()) {
    std::size_t nl = r->out.find('\n', pos);
    if (nl == std::string::npos) nl = r->out.size();
    lines.push_back(r->out.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (!r->Succeeded() || lines.size() != 3) {
    return Error{fmt::format("node {}: could not look for the agent ({}): {}", node, remote::DescribeEnd(*r, eo),
                             Visible(r->out + r->err))};
  }
  if (lines[1] == agent.blob->sha256) return std::string(plan::kAgentPath);
  if (lines[2] == agent.blob->sha256) return tmp;
  if (lines[0] != agent.arch) {
    return Error{fmt::format("node {}: no matching agent there, and this build ({}) cannot run on the node ({}); install "
                             "gpuforge built for {} at {}",
                             node, agent.arch, Visible(lines[0], 32), Visible(lines[0], 32), plan::kAgentPath)};
  }
  remote::UploadOptions uo;
  uo.mode = 0755;
  if (Status st = s.Upload(agent.blob->bytes, tmp, uo); !st.ok()) return st.error();
  return tmp;
}

std::string AgentCommand(std::string_view agent, const PlannedRun& run, int timeout_s, bool exchange) {
  std::string s = ShellQuote(agent) + " agent run " + ShellQuote(run.probe);
  for (const auto& [k, v] : run.params) {
    if (k == "network") continue;  // the controller's own note, not a probe parameter
    s += " --param " + ShellQuote(k + "=" + v);
  }
  return s + fmt::format(" --timeout {}", timeout_s) + (exchange ? " --exchange" : "");
}

}  // namespace gpuforge::validate
