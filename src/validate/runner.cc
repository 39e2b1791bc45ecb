#include "gpuforge/validate/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <variant>
#include <thread>

#include "remote/command.h"

namespace gpuforge::validate {
namespace {

using remote::ShellQuote;

std::string Visible(std::string_view text, std::size_t cap = 300) {
  std::string out;
  for (char c : text.substr(0, cap)) out.push_back(c >= 0x20 && c < 0x7f ? c : (c == '\n' ? '|' : '?'));
  if (text.size() > cap) out += "...";
  return out;
}

std::string LastLine(const std::string& out) {
  std::size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  std::size_t start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

Verdict ErrorVerdict(const PlannedRun& run, std::string code, std::string detail, std::string next) {
  Verdict v;
  v.check = run.check;
  v.node = run.node;
  v.entity = run.entity;
  v.state = State::kError;
  v.code = std::move(code);
  v.detail = std::move(detail);
  v.next_step = std::move(next);
  return v;
}

// One attempt: runs the agent, returns the parsed result or an ERROR verdict.
std::variant<probe::ProbeResult, Verdict> Attempt(remote::Session& s, const std::string& agent, const PlannedRun& run,
                                                  const PlannedRun& as, int timeout_s, const std::atomic<bool>* cancel) {
  remote::ExecOptions eo;
  eo.sudo = s.target().sudo;
  eo.timeout = std::chrono::seconds(timeout_s + 30);  // the agent's own watchdog speaks first
  eo.output_cap = 256 << 10;
  eo.cancel = cancel;
  Result<remote::ExecResult> r = s.Exec(AgentCommand(agent, as, timeout_s), eo);
  if (!r.ok()) return ErrorVerdict(run, "unreachable", r.error().message, "check the node's SSH (gpuforge run NODE -- true)");
  if (r->end == remote::ExecEnd::kTimedOut) {
    return ErrorVerdict(run, "timeout",
                        fmt::format("{} on {} did not answer within {} s", run.check, run.node, timeout_s + 30),
                        fmt::format("run `gpuforge agent run {}` on {} by hand; raise --timeout if it is slow, not hung",
                                    run.probe, run.node));
  }
  const std::string line = LastLine(r->out);
  Result<probe::ProbeResult> parsed =
      probe::ParseJsonLine(fmt::format("node {}, agent run {}", run.node, run.probe), line);
  if (!parsed.ok()) {
    return ErrorVerdict(run, "agent_output",
                        fmt::format("{} ({}; stderr: {})", parsed.error().message, remote::DescribeEnd(*r, eo),
                                    Visible(r->err)),
                        "check that the agent runs on the node: " + agent + " agent list");
  }
  if (parsed->probe != run.probe) {
    return ErrorVerdict(run, "agent_output", fmt::format("asked for {}, the agent answered {}", run.probe, parsed->probe), "");
  }
  return *parsed;
}

}  // namespace

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

std::string AgentCommand(std::string_view agent, const PlannedRun& run, int timeout_s) {
  std::string s = ShellQuote(agent) + " agent run " + ShellQuote(run.probe);
  for (const auto& [k, v] : run.params) {
    if (k == "network") continue;  // the controller's own note, not a probe parameter
    s += " --param " + ShellQuote(k + "=" + v);
  }
  return s + fmt::format(" --timeout {}", timeout_s);
}

std::vector<Verdict> RunCheck(remote::Session& s, const std::string& agent, const model::Cluster& c,
                              const Thresholds& t, const PlannedRun& run, const RunOptions& o) {
  const int timeout = o.timeout_s > 0 ? o.timeout_s : run.timeout_s;
  const int attempts = run.performance ? std::max(1, o.retries) : 1;
  std::vector<Verdict> last;
  for (int i = 1; i <= attempts; ++i) {
    auto got = Attempt(s, agent, run, run, timeout, o.cancel);
    if (std::holds_alternative<Verdict>(got)) {
      last = {std::get<Verdict>(got)};
    } else {
      last = Judge(c, t, run, std::get<probe::ProbeResult>(got));
    }
    for (Verdict& v : last) v.attempts = i;
    // Only a measurement below the mark is worth another try; an error or a skip will not improve.
    const bool retry = std::any_of(last.begin(), last.end(), [](const Verdict& v) { return v.state == State::kFail; });
    if (!retry || (o.cancel != nullptr && o.cancel->load())) break;
  }
  return last;
}

std::vector<Verdict> RunPair(remote::Session& client, const std::string& client_agent, remote::Session& server,
                             const std::string& server_agent, const model::Cluster& c, const Thresholds& t,
                             const PlannedRun& run, const RunOptions& o) {
  const int timeout = o.timeout_s > 0 ? o.timeout_s : run.timeout_s;
  const int attempts = run.performance ? std::max(1, o.retries) : 1;
  std::vector<Verdict> last;
  for (int i = 1; i <= attempts; ++i) {
    PlannedRun serve = run;
    serve.node = run.peer;
    serve.params = {{"role", "server"}, {"timeout", std::to_string(std::min(timeout, 60))}};
    if (run.params.count("port")) serve.params["port"] = run.params.at("port");
    // The server listens first; the client retries its connection for a few seconds.
    auto server_done = std::async(std::launch::async, [&] { return Attempt(server, server_agent, serve, serve, timeout, o.cancel); });
    auto got = Attempt(client, client_agent, run, run, timeout, o.cancel);
    auto served = server_done.get();
    if (std::holds_alternative<Verdict>(got)) {
      last = {std::get<Verdict>(got)};
    } else {
      last = Judge(c, t, run, std::get<probe::ProbeResult>(got));
    }
    if (std::holds_alternative<Verdict>(served)) {
      Verdict v = std::get<Verdict>(served);
      v.check = run.check;
      v.node = run.peer;
      v.entity = "server for " + run.node;
      if (std::any_of(last.begin(), last.end(), [](const Verdict& x) { return x.state != State::kPass; })) last.push_back(v);
    }
    for (Verdict& v : last) v.attempts = i;
    const bool retry = std::any_of(last.begin(), last.end(), [](const Verdict& v) { return v.state == State::kFail; });
    if (!retry || (o.cancel != nullptr && o.cancel->load())) break;
  }
  return last;
}

}  // namespace gpuforge::validate
