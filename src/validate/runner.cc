#include "gpuforge/validate/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <variant>
#include <thread>

#include "gpuforge/base/text.h"
#include "gpuforge/validate/agent.h"
#include "gpuforge/validate/exchange_hub.h"
#include "validate/blame.h"
#include "validate/verdicts.h"

namespace gpuforge::validate {
namespace {

using internal::Mark;
using text::Visible;

std::string LastLine(const std::string& out) {
  std::size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  std::size_t start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

Verdict ErrorVerdict(const PlannedRun& run, std::string_view code, std::string detail, std::string next) {
  Verdict v;
  v.check = run.check;
  v.node = run.node;
  v.entity = run.entity;
  Mark(v, code);
  v.detail = std::move(detail);
  v.next_step = std::move(next);
  return v;
}

// One attempt: runs the agent, returns the parsed result or an ERROR verdict.
std::variant<probe::ProbeResult, Verdict> Attempt(remote::Session& s, const AgentOnNode& agent, const PlannedRun& run,
                                                  const PlannedRun& as, int timeout_s, const std::atomic<bool>* cancel,
                                                  ExchangeHub* hub = nullptr, std::size_t who = 0) {
  remote::ExecOptions eo;
  eo.sudo = s.target().sudo;
  eo.timeout = std::chrono::seconds(timeout_s + 30);  // the agent's own watchdog speaks first
  eo.output_cap = std::size_t{4} << 20;  // a result line is at most 1 MiB (probe.h)
  eo.cancel = cancel;
  if (hub != nullptr) {
    const std::string source = fmt::format("node {}, agent run {}", as.node, as.probe);
    eo.on_line = [hub, who, source](std::string_view line) -> std::optional<std::string> {
      if (!probe::IsExchangeLine(line)) return std::string();
      Result<std::string> part = probe::ParseExchangeOffer(source, line);
      if (!part.ok()) {
        hub->Fail(part.error().message);
        return std::nullopt;
      }
      return hub->Offer(who, std::move(*part));
    };
  }
  Result<remote::ExecResult> r = s.Exec(VerifiedAgentCommand(agent, as, timeout_s, hub != nullptr), eo);
  if (hub != nullptr) hub->Leave(who);
  if (!r.ok()) return ErrorVerdict(run, "node.unreachable", r.error().message, "check the node's SSH (gpuforge run NODE -- true)");
  if (r->end == remote::ExecEnd::kTimedOut) {
    return ErrorVerdict(run, "check.timeout",
                        fmt::format("{} on {} did not answer within {} s", run.check, run.node, timeout_s + 30),
                        fmt::format("run `gpuforge agent run {}` on {} by hand; raise --timeout if it is slow, not hung",
                                    run.probe, run.node));
  }
  const std::string line = LastLine(r->out);
  Result<probe::ProbeResult> parsed =
      probe::ParseJsonLine(fmt::format("node {}, agent run {}", run.node, run.probe), line);
  if (!parsed.ok()) {
    return ErrorVerdict(run, "agent.bad_output",
                        fmt::format("{} ({}; stderr: {})", parsed.error().message, remote::DescribeEnd(*r, eo),
                                    Visible(r->err)),
                        "check that the agent runs on the node: " + agent.path + " agent list");
  }
  if (parsed->probe != run.probe) {
    return ErrorVerdict(run, "agent.bad_output", fmt::format("asked for {}, the agent answered {}", run.probe, parsed->probe), "");
  }
  return *parsed;
}

void StampSeconds(std::chrono::steady_clock::time_point started, std::vector<Verdict>& verdicts) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (Verdict& v : verdicts) v.seconds = seconds;
}

}  // namespace

std::vector<std::variant<probe::ProbeResult, Verdict>> RunGroup(std::span<const GroupMember> members, int timeout_s,
                                                                const std::atomic<bool>* cancel) {
  ExchangeHub hub(members.size(), std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s), cancel);
  std::vector<std::future<std::variant<probe::ProbeResult, Verdict>>> running;
  for (std::size_t i = 0; i < members.size(); ++i) {
    running.push_back(std::async(std::launch::async, [&, i] {
      const GroupMember& m = members[i];
      return Attempt(*m.session, m.agent, m.run, m.run, timeout_s, cancel, &hub, i);
    }));
  }
  std::vector<std::variant<probe::ProbeResult, Verdict>> out;
  for (auto& f : running) out.push_back(f.get());
  if (const std::string why = hub.failure(); !why.empty()) {
    for (auto& r : out) {
      if (auto* v = std::get_if<Verdict>(&r)) v->detail += " (exchange: " + why + ")";
    }
  }
  return out;
}

std::vector<Verdict> RunCheck(remote::Session& s, const AgentOnNode& agent, const model::Cluster& c,
                              const Thresholds& t, const PlannedRun& run, const RunOptions& o) {
  const int timeout = o.timeout_s > 0 ? o.timeout_s : run.timeout_s;
  const int attempts = run.performance ? std::max(1, o.retries) : 1;
  const auto started = std::chrono::steady_clock::now();
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
    if (!RetryAgain(run, last) || (o.cancel != nullptr && o.cancel->load())) break;
  }
  StampSeconds(started, last);
  return last;
}

std::vector<Verdict> RunPair(remote::Session& client, const AgentOnNode& client_agent, remote::Session& server,
                             const AgentOnNode& server_agent, const model::Cluster& c, const Thresholds& t,
                             const PlannedRun& run, const RunOptions& o) {
  const int timeout = o.timeout_s > 0 ? o.timeout_s : run.timeout_s;
  const int attempts = run.performance ? std::max(1, o.retries) : 1;
  const auto started = std::chrono::steady_clock::now();
  std::vector<Verdict> last;
  for (int i = 1; i <= attempts; ++i) {
    PlannedRun serve = run;
    serve.node = run.peer;
    // The server listens on any free port unless one was asked for, and says which through
    // the exchange.
    serve.params = run.peer_params;
    if (serve.params.empty()) serve.params = {{"role", "server"}, {"port", "0"}};
    if (run.probe == "tcp.bandwidth") {
      serve.params["timeout"] = std::to_string(std::min(timeout, 60));
      if (run.params.count("port")) serve.params["port"] = run.params.at("port");
    }
    const std::vector<GroupMember> members = {{&server, server_agent, serve}, {&client, client_agent, run}};
    std::vector<std::variant<probe::ProbeResult, Verdict>> both = RunGroup(members, timeout, o.cancel);
    auto& served = both[0];
    auto& got = both[1];
    if (std::holds_alternative<Verdict>(got)) {
      last = {std::get<Verdict>(got)};
    } else {
      last = Judge(c, t, run, std::get<probe::ProbeResult>(got));
    }
    // The server's own failure is its verdict: an agent that could not run (a Verdict) or a
    // result that is not ok (a port someone else holds: sys.bind_failed). It was dropped
    // when it came as a result, and the client that only waited on it got the blame (#28 item 13).
    std::optional<Verdict> server_failed;
    if (const auto* v = std::get_if<Verdict>(&served)) {
      server_failed = *v;
    } else if (const auto& r = std::get<probe::ProbeResult>(served); r.outcome != probe::Outcome::kOk) {
      server_failed = internal::NotOk(serve, r);
    }
    if (server_failed) {
      Verdict v = *server_failed;
      v.check = run.check;
      v.node = run.peer;
      v.entity = "server for " + run.node;
      if (std::any_of(last.begin(), last.end(), [](const Verdict& x) { return x.state != State::kPass; })) {
        last.push_back(v);
      }
    }
    internal::BlameOwnFailures(last, "pair.peer_failed");
    for (Verdict& v : last) v.attempts = i;
    if (!RetryAgain(run, last) || (o.cancel != nullptr && o.cancel->load())) break;
  }
  StampSeconds(started, last);
  return last;
}

std::vector<Verdict> RunGroupCheck(std::span<remote::Session* const> sessions, std::span<const AgentOnNode> agents,
                                   const model::Cluster& c, const Thresholds& t, const PlannedRun& run,
                                   const RunOptions& o) {
  const int timeout = o.timeout_s > 0 ? o.timeout_s : run.timeout_s;
  const int attempts = run.performance ? std::max(1, o.retries) : 1;
  const auto started = std::chrono::steady_clock::now();
  std::vector<Verdict> last;
  for (int i = 1; i <= attempts; ++i) {
    std::vector<GroupMember> members;
    for (std::size_t k = 0; k < run.group.size() && k < sessions.size(); ++k) {
      GroupMember m{sessions[k], agents[k], run};
      m.run.node = run.group[k];
      m.run.params["node_index"] = std::to_string(k);
      members.push_back(std::move(m));
    }
    std::vector<std::variant<probe::ProbeResult, Verdict>> got = RunGroup(members, timeout, o.cancel);
    last.clear();
    std::vector<const probe::ProbeResult*> results;
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (const auto* r = std::get_if<probe::ProbeResult>(&got[k])) {
        results.push_back(r);
      } else {
        results.push_back(nullptr);
        Verdict v = std::get<Verdict>(got[k]);
        v.entity = fmt::format("member of {} nodes together", run.group.size());
        last.push_back(std::move(v));
      }
    }
    std::vector<Verdict> judged = JudgeGroup(c, t, run, results);
    last.insert(last.end(), judged.begin(), judged.end());
    // A member that failed on its own is the one to look at; the others only waited on it.
    internal::BlameOwnFailures(last, "group.member_failed");
    for (Verdict& v : last) v.attempts = i;
    if (!RetryAgain(run, last) || (o.cancel != nullptr && o.cancel->load())) break;
  }
  StampSeconds(started, last);
  return last;
}

}  // namespace gpuforge::validate
