#include "gpuforge/validate/agent.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "remote/command.h"
#include "gpuforge/base/text.h"

namespace gpuforge::validate {

using text::Visible;
using remote::ShellQuote;

namespace {

// An absolute path of safe bytes: what the node said its $HOME is must be one before it is
// spliced into a path.
bool PlainAbsolutePath(std::string_view p) {
  if (p.size() < 2 || p[0] != '/' || p.size() > 256) return false;
  for (char c : p) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return p.find("/../") == std::string_view::npos && !p.ends_with("/..");
}

std::vector<std::string> Lines(const std::string& out) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < out.size()) {
    std::size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    lines.push_back(out.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

}  // namespace

std::string PushedAgentPath(std::string_view dir, std::string_view sha256) {
  return fmt::format("{}/gpuforge-agent-{}", dir, sha256);
}

std::string SafeToExecTest(std::string_view f) {
  // find -user takes a uid; `! -user 0 ! -user $u` is "owned by someone else". -perm /022: group
  // or others may write. find does not follow a link given as its start (-P), and -type f/d
  // rules links out. The directory's own parents are system directories, trusted to root.
  return fmt::format(
      "{{ u=$(id -u); d=$(dirname -- {0}); [ -f {0} ] && [ ! -L {0} ] && [ -d \"$d\" ] && [ ! -L \"$d\" ] && "
      "[ -z \"$(find {0} \"$d\" -maxdepth 0 \\( \\( ! -user 0 ! -user \"$u\" \\) -o -perm /022 \\) -print 2>&1)\" ]; }}",
      f);
}

Result<AgentOnNode> EnsureAgent(remote::Session& s, const plan::AgentBinary& agent) {
  const std::string& node = s.target().node;
  const std::string& sha = agent.blob->sha256;
  const bool as_root = s.target().sudo || s.target().endpoint.user == "root";
  remote::ExecOptions eo;
  eo.output_cap = 64 << 10;
  // As the agent will run: through sudo when it will, so `id -u` in the checks is its uid.
  eo.sudo = s.target().sudo;
  // Line 1: the architecture; 2: $HOME (for a user without sudo); 3, 4: the digest of the
  // installed and of the pushed copy, "-" when missing or not safe to exec from.
  const std::string pushed_word =
      as_root ? ShellQuote(PushedAgentPath(kPushedAgentDir, sha)) : "\"$HOME/.cache/gpuforge/gpuforge-agent-" + sha + "\"";
  const std::string script = fmt::format(
      "uname -m\n"
      "printf '%s\\n' \"$HOME\"\n"
      "for f in {} {}; do if {}; then sha256sum < \"$f\" | cut -c1-64; else echo -; fi; done\n",
      ShellQuote(plan::kAgentPath), pushed_word, SafeToExecTest("\"$f\""));
  Result<remote::ExecResult> r = s.Exec(script, eo);
  if (!r.ok()) return r.error();
  std::vector<std::string> lines = Lines(r->out);
  if (!r->Succeeded() || lines.size() != 4) {
    return Error{fmt::format("node {}: could not look for the agent ({}): {}", node, remote::DescribeEnd(*r, eo),
                             Visible(r->out + r->err))};
  }
  if (lines[2] == sha) return AgentOnNode{std::string(plan::kAgentPath), sha};
  std::string dir(kPushedAgentDir);
  if (!as_root) {
    if (!PlainAbsolutePath(lines[1])) {
      return Error{fmt::format("node {}: the login user's $HOME ({}) is not a plain absolute path; install the agent "
                               "with `gpuforge apply --only agent`",
                               node, Visible(lines[1], 64))};
    }
    dir = lines[1] + "/.cache/gpuforge";
  }
  const std::string path = PushedAgentPath(dir, sha);
  if (lines[3] == sha) return AgentOnNode{path, sha};
  if (lines[0] != agent.arch) {
    return Error{fmt::format("node {}: no matching agent there, and this build ({}) cannot run on the node ({}); install "
                             "gpuforge built for {} at {}",
                             node, agent.arch, Visible(lines[0], 32), Visible(lines[0], 32), plan::kAgentPath)};
  }
  // The directory is made the agent's user's alone (root's 0755, a user's 0700), and older
  // pushed copies go: one build's agent at a time.
  const std::string q = ShellQuote(dir);
  const std::string prepare = fmt::format(
      "set -e\numask 022\nmkdir -p -- {0}\n{1}\nchmod {2} -- {0}\n"
      "if [ -L {0} ] || [ -n \"$(find {0} -maxdepth 0 \\( ! -user \"$(id -u)\" -o -perm /022 \\) -print)\" ]; then\n"
      "  echo \"{3} is not owned by $(id -un) alone; refusing to put the agent there\" >&2; exit 1\nfi\n"
      "find {0} -maxdepth 1 -type f -name 'gpuforge-agent-*' ! -name {4} -delete\n",
      q, as_root ? fmt::format("chown root:root -- {}", q) : std::string(":"), as_root ? "0755" : "0700",
      Visible(dir, 300), ShellQuote("gpuforge-agent-" + sha));
  Result<remote::ExecResult> p = s.Exec(prepare, eo);
  if (!p.ok()) return p.error();
  if (!p->Succeeded()) {
    return Error{fmt::format("node {}: cannot prepare {} for the agent ({}): {}", node, dir,
                             remote::DescribeEnd(*p, eo), Visible(p->err))};
  }
  remote::UploadOptions uo;
  uo.mode = 0755;
  uo.sudo = s.target().sudo;
  if (as_root) uo.owner = "root:root";
  if (Status st = s.Upload(agent.blob->bytes, path, uo); !st.ok()) return st.error();
  return AgentOnNode{path, sha};
}

std::string RemovePushedAgentScript(std::string_view path) {
  const std::string p = ShellQuote(path);
  return fmt::format("rm -f -- {0}; rmdir -- \"$(dirname -- {0})\" 2>/dev/null; true\n", p);
}

std::string AgentCommand(std::string_view agent, const PlannedRun& run, int timeout_s, bool exchange) {
  std::string s = ShellQuote(agent) + " agent run " + ShellQuote(run.probe);
  for (const auto& [k, v] : run.params) {
    if (k == "network") continue;  // the controller's own note, not a probe parameter
    s += " --param " + ShellQuote(k + "=" + v);
  }
  return s + fmt::format(" --timeout {}", timeout_s) + (exchange ? " --exchange" : "");
}

std::string VerifiedAgentCommand(const AgentOnNode& agent, const PlannedRun& run, int timeout_s, bool exchange) {
  if (agent.sha256.empty()) return AgentCommand(agent.path, run, timeout_s, exchange);
  const std::string a = ShellQuote(agent.path);
  return fmt::format(
      "a={0}\n"
      "if ! {1}; then echo \"gpuforge: refusing to run the agent $a: it or its directory is not a regular file owned "
      "by root or $(id -un) alone\" >&2; exit 126; fi\n"
      "h=$(sha256sum < \"$a\" | cut -c1-64)\n"
      "if [ \"$h\" != {2} ]; then echo \"gpuforge: refusing to run the agent $a: its SHA-256 is $h, not {2}\" >&2; "
      "exit 126; fi\n"
      "exec {3}\n",
      a, SafeToExecTest("\"$a\""), agent.sha256, AgentCommand(agent.path, run, timeout_s, exchange));
}

}  // namespace gpuforge::validate

namespace gpuforge::validate {

void RemovePushedAgents(remote::Fleet& fleet, std::span<const AgentOnNode> agents) {
  fleet.Each([&](std::size_t i, remote::Session& s) {
    if (i >= agents.size() || agents[i].empty() || agents[i].path == plan::kAgentPath) return true;
    remote::ExecOptions eo;
    eo.sudo = s.target().sudo;
    eo.timeout = std::chrono::seconds(30);
    (void)s.Exec(RemovePushedAgentScript(agents[i].path), eo);
    return true;
  });
}

}  // namespace gpuforge::validate
